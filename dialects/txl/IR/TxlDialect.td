//===- TxlDialect.td - The txl dialect ---------------------*- tablegen -*-===//
//
// The `txl` dialect describes one Transformer-XL segment (Dai et al. 2019)
// with its memory state explicit in the IR.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_DIALECT
#define TXL_DIALECT

include "mlir/IR/OpBase.td"

def Txl_Dialect : Dialect {
  let name = "txl";
  let cppNamespace = "::mlir::txl";
  let summary = "Transformer-XL segments with explicit memory state";
  let description = [{
    Ops of the `txl` dialect operate on ranked float32 tensors laid out as in
    the official Transformer-XL code: `[len, batch, ...]`. Every op also
    accepts float64 tensors (for finite-difference gradient checks), one
    element type per op; its f32 attributes (scales, epsilons) are then
    widened exactly. A segment function
    takes the parameters, the tokens of one segment `[qlen, batch]` and the
    memory of every layer `[mlen, batch, d_model]`, and returns the per-token
    negative log-likelihood and the new memory. `qlen`, `mlen` and `batch`
    are dynamic dimensions; model sizes are static.

    The frontend writes the relative attention score of the paper (§3.3)
    literally as four terms and a `txl.rel_shift`;
    `--txl-fuse-rel-attention` folds them into `txl.rel_attention`, and
    `--txl-lower-rel-shift` turns any remaining shift into index arithmetic.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
  // The discardable attributes the pipeline relies on (TxlDialect.cpp):
  // function arguments name the parameter they hold (`txl.param`,
  // `txl.buffer`, `txl.grad`, `txl.<optimizer state>`), the functions the
  // runtime calls name their packed entry point (`txl.entry`), and entry
  // functions record where their results are written
  // (`txl.result_destinations`, `txl.built_in_destination`); CUDA kernels
  // record their dynamic shared memory (`txl.dynamic_shared_memory`); the
  // attention kernel builders name the ops a negative-control test breaks
  // (`txl.sync`, `txl.rel_shift_row`, `txl.key_part`, `txl.interior_tile`;
  // test/lib's passes),
  // and txlc records on a module it writes the stage and target it was
  // emitted for (`txl.emitted`, read back by `txlc --input-ir`).
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let extraClassDeclaration = [{
    /// `txl.entry = "txl_..."` on a function: the runtime calls it through
    /// the packed entry point of that name (runtime/include/txl/runtime.h),
    /// which txl-emit-packed-entry writes. Set by the frontend on every
    /// function of the runtime ABI, and by txl-generate-backward on the
    /// backward segment.
    static constexpr ::llvm::StringLiteral kEntryAttrName = "txl.entry";
    /// `txl.sync = "<role>"` on a gpu.barrier (or txl.subgroup_barrier) of
    /// the attention kernels: what
    /// the barrier orders ("reads-done": every work-item finished reading
    /// the tiles about to be overwritten; "stores-done": every work-item
    /// stored its part of the tiles about to be read; "ds-stored": the
    /// tensor-core `_q_saved` backward's skewed dS tile is complete;
    /// "kv-staged": the tensor-core forward staged K and V).
    static constexpr ::llvm::StringLiteral kSyncAttrName = "txl.sync";
    /// `txl.rel_shift_row` (unit) on the index op that gives the r row a
    /// tile of BD starts at (qlen - 1 - i + j, the rel_shift as index
    /// arithmetic), in the CPU and GPU attention kernels.
    static constexpr ::llvm::StringLiteral kRelShiftRowAttrName =
        "txl.rel_shift_row";
    /// `txl.key_part = "tiles" | "offset"` on the index ops of a forward
    /// kernel's key part (flash-decoding): the key tiles of one part
    /// (ceil(tiles / parts)), and the part's first key relative to the
    /// visible range.
    static constexpr ::llvm::StringLiteral kKeyPartAttrName = "txl.key_part";
    /// `txl.interior_tile` (unit) on the i1 op that decides whether a key
    /// tile of the tensor-core attention forward is seen whole by every
    /// query row of its subgroup, so that its scores skip the mask.
    static constexpr ::llvm::StringLiteral kInteriorTileAttrName =
        "txl.interior_tile";
    /// `txl.rescale` (unit) on the i1 op that decides whether a lane of
    /// the tensor-core attention forward rescales its rows' O this key
    /// tile (a row's running maximum moved).
    static constexpr ::llvm::StringLiteral kRescaleAttrName = "txl.rescale";
    /// `txl.emitted = {stage, target, precision}` on a module txlc wrote
    /// with --emit (txl, txl-opt, txl-grad, linalg, llvm-mlir; cpu, cuda,
    /// opencl; f32, bf16, fp16): where `txlc --input-ir` resumes.
    static constexpr ::llvm::StringLiteral kEmittedAttrName = "txl.emitted";
  }];
}

// All float tensor operands and results of one op share their element type
// (f32 or f64); see txl::SameFloatElementType in TxlOps.h.
def Txl_SameFloatElementType : NativeOpTrait<"SameFloatElementType"> {
  let cppNamespace = "::mlir::txl";
}

class Txl_Op<string mnemonic, list<Trait> traits = []>
    : Op<Txl_Dialect, mnemonic,
         !listconcat(traits, [Txl_SameFloatElementType])>;

#endif // TXL_DIALECT

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
  // record their dynamic shared memory (`txl.dynamic_shared_memory`).
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let extraClassDeclaration = [{
    /// `txl.entry = "txl_..."` on a function: the runtime calls it through
    /// the packed entry point of that name (runtime/include/txl/runtime.h),
    /// which txl-emit-packed-entry writes. Set by the frontend on every
    /// function of the runtime ABI, and by txl-generate-backward on the
    /// backward segment.
    static constexpr ::llvm::StringLiteral kEntryAttrName = "txl.entry";
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

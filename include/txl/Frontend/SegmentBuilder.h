//===- SegmentBuilder.h - Model file -> txl segment function -----*- C++ -*-===//
//
// Builds the `txl` IR of one Transformer-XL segment (official
// MemTransformerLM._forward + ProjectedAdaptiveLogSoftmax, eval or train
// mode at run time) from a parsed model file, with the memory state
// explicit:
//
//   func.func @segment(params..., %data, %target, %mems..., %mem_len,
//                      %clamp_len, %same_length, %dropout_seed,
//                      %dropout_offset, %training) -> (%nll, %new_mems...)
//   func.func private @decoder_layer(%h, [%pos | %clamp_len,] %mem,
//                                    %mem_len, %same_length,
//                                    [%dropout_seed, %dropout_offset,
//                                     %training, %stream_base,]
//                                    layer params...) -> %h
//
// The scalars are i64 (training != 0 selects train mode); @decoder_layer
// takes the sinusoids %pos [klen, d_model] for attn_type 0, the run's
// %clamp_len for attn_type 1 (Shaw et al.'s tables are cut by it), neither
// for attn_type 2 and 3 (their positions are added to %h and %mem by
// @segment), and the dropout arguments only when the model has dropout or
// dropatt. docs/attention-types.md describes each attn_type.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_FRONTEND_SEGMENTBUILDER_H
#define TXL_FRONTEND_SEGMENTBUILDER_H

#include "txl/Frontend/ModelConfig.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>

namespace mlir {
namespace txl {

/// One tensor the segment function takes, in argument order. Names are the
/// official `state_dict` names; `aliases` are the tied names that checkpoints
/// may use instead (e.g. `crit.out_layers.0.weight` for the tied embedding,
/// `crit.out_projs.i` for a tied projection). A tied tensor is one parameter,
/// named after the embedding side.
struct ParamSpec {
  std::string name;
  SmallVector<int64_t> shape;
  bool trainable = true;
  SmallVector<std::string, 2> aliases;
};

/// The parameters of `config` in the order the segment function takes them.
SmallVector<ParamSpec> getParameterTable(const ModelConfig &config);

/// Name of the generated segment function.
inline constexpr llvm::StringLiteral kSegmentFunctionName = "segment";

/// Name of the private function holding one decoder layer, called once per
/// layer by @segment (its parameters are arguments): the layer is compiled
/// once, whatever n_layer is.
inline constexpr llvm::StringLiteral kLayerFunctionName = "decoder_layer";

/// Builds the segment module in the four-term form (paper §3.3 written
/// literally). Fails with a diagnostic for configurations the compiler does
/// not support (odd d_model).
FailureOr<OwningOpRef<ModuleOp>> buildSegmentModule(MLIRContext &context,
                                                    const ModelConfig &config);

} // namespace txl
} // namespace mlir

#endif // TXL_FRONTEND_SEGMENTBUILDER_H

//===- SegmentBuilder.h - Model file -> txl segment function -----*- C++ -*-===//
//
// Builds the `txl` IR of one Transformer-XL segment (official
// MemTransformerLM._forward + ProjectedAdaptiveLogSoftmax, eval or train
// mode at run time) from a parsed model file, with the memory state
// explicit:
//
//   func.func @segment(params..., %data, %target, %mems..., %mem_len,
//                      %clamp_len, %same_length, %dropout_seed,
//                      %dropout_offset, %dropout_column, %training)
//       -> (%nll, %new_mems...)
//   func.func private @decoder_layer(%h, [%pos | %clamp_len,] %mem,
//                                    %mem_len, %same_length,
//                                    [%dropout_seed, %dropout_offset,
//                                     %dropout_column, %training,
//                                     %stream_base,]
//                                    layer params...) -> %h
//
// The scalars are i64 (training != 0 selects train mode; %dropout_column is
// the global batch column of the segment's first, from which the dropout
// masks count their columns: txl.dropout's column); @decoder_layer
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
  /// Read only by the training forward (the auxiliary heads of objective
  /// "alrfou"): @segment never reads it, and a checkpoint for evaluation
  /// may leave it out.
  bool trainingOnly = false;
};

/// The auxiliary heads of objective "alrfou" (Al-Rfou et al. 2018, §2.2 and
/// §2.3): `aux_heads.<l>.next` predicts the next character from layer l's
/// output (l < n_layer - 1; the last layer's is the crit), and
/// `aux_heads.<l>.next2` the one after it, each a `.weight` [n_token,
/// d_model] and a `.bias` [n_token].
inline constexpr llvm::StringLiteral kAuxNextHead = "next";
inline constexpr llvm::StringLiteral kAuxNext2Head = "next2";
std::string auxHeadName(int64_t layer, StringRef head);

/// Name of the private function of one auxiliary head, called for every
/// head by @segment_train: (h [qlen, batch, d_model], target [qlen, batch],
/// weight, bias) -> per-token NLL [qlen, batch].
inline constexpr llvm::StringLiteral kAuxHeadFunctionName = "aux_head_nll";

/// The parameters of `config` in the order the segment function takes them.
SmallVector<ParamSpec> getParameterTable(const ModelConfig &config);

/// Name of the generated segment function, and of the packed entry point
/// the runtime calls it by (its `txl.entry`; runtime.h).
inline constexpr llvm::StringLiteral kSegmentFunctionName = "segment";
inline constexpr llvm::StringLiteral kSegmentEntryName = "txl_segment_forward";

/// Marks `fn` as a function of the runtime ABI: `llvm.emit_c_interface`
/// (its C interface wrapper) and `txl.entry = entry` (the packed entry point
/// txl-emit-packed-entry writes around that wrapper, which the runtime
/// calls).
void setRuntimeEntry(mlir::Operation *fn, StringRef entry);

/// Name of the training forward of objective "alrfou", private, from which
/// the backward segment is generated (its gradient function becomes
/// @segment_grad). It takes @segment's arguments with `target` [qlen + 1,
/// batch] (row i + 1: the target two positions after data row i) and two
/// more after `training`:
///
///   %loss_weights: tensor<2·n_layer x f32>  (k < n_layer: the next-character
///       head of layer k; n_layer + k: its two-ahead head)
///   %position_weights: tensor<qlen x f32>
///
/// and returns, after @segment's results, the three parts of its loss, each
/// [qlen, batch] (no gradient): the last layer's next-character NLL, the
/// intermediate layers' next-character NLLs and every layer's two-ahead
/// NLLs, each weighted as in the loss. The loss (first result) is their
/// sum: txl.loss_mix of all 2·n_layer head NLLs.
inline constexpr llvm::StringLiteral kAlRfouTrainFunctionName = "segment_train";

/// Name of the evaluation forward that returns the model's distribution
/// instead of the NLL of given targets (generation and scoring): @segment's
/// arguments without `target`, returning
///
///   (%log_probs: tensor<?x?xn_token x f32>  [qlen, batch, n_token],
///    %new_mems...)
///
/// log_softmax of the crit's logits at every position. Emitted when
/// hasLogProbsFunction(config).
inline constexpr llvm::StringLiteral kLogProbsFunctionName =
    "segment_log_probs";
inline constexpr llvm::StringLiteral kLogProbsEntryName =
    "txl_segment_log_probs";

/// Whether the model gets @segment_log_probs: every model does now (the
/// full softmax through txl.log_softmax, the adaptive one through
/// txl.adaptive_log_softmax); kept as the one place that decides it.
bool hasLogProbsFunction(const ModelConfig &config);

/// Marks `fn`, a private function called once per layer so that its code is
/// compiled once, `noinline` for LLVM (the `passthrough` attribute): at -O3
/// LLVM otherwise inlines a small one into every call (a per-tensor
/// optimizer update called once per parameter took the whole-model update
/// from 36k to 161k LLVM instructions at 100 layers, issue #48).
void setNoInline(mlir::Operation *fn);

/// Name of the private function holding one decoder layer, called once per
/// layer by @segment (its parameters are arguments): the layer is compiled
/// once, whatever n_layer is.
inline constexpr llvm::StringLiteral kLayerFunctionName = "decoder_layer";

/// The key/value-cache forms of @segment and @segment_log_probs for
/// evaluation (attn_type 0, eval mode only): a segment projects only its own
/// qlen rows through qkv_net, and takes what the memory rows would give from
/// the caller, who keeps it from the segment before:
///
///   func.func @segment_kv(params..., %data, %target,
///                         %k_window..., %v_window..., %r_head_k...,
///                         %mem_len, %same_length)
///       -> (%nll, %hids..., %k_window..., %v_window...)
///
/// with n_layer each of %k_window, %v_window [klen, batch, n_head·d_head],
/// klen = mlen + qlen: layer l's keys and values of its memory rows
/// (qkv_net of mems[l], after LayerNorm with pre_lnorm) in rows [0, mlen)
/// and room in rows [mlen, klen), into which the function writes the
/// segment's own keys and values, in place (the results are those
/// arguments, materialized in their destination); %r_head_k [klen,
/// n_head·d_head] (layer l's r_net of the sinusoids: @segment_r_head_k's
/// result for this klen and the run's clamp_len). %hids [qlen, batch,
/// d_model] are the n_layer + 1 rows @segment would append to each memory
/// (official _update_mems' hids). The caller keeps the last min(mem_len,
/// klen) rows of [mems[l]; hids[l]] and of each window for the next
/// segment, so that no segment copies the memory or its keys and values;
/// the memory itself is not an argument (its keys and values are all a
/// segment reads of it). @segment_log_probs_kv is the
/// same without %target, returning @segment_log_probs's log-probabilities.
/// Same results as @segment and @segment_log_probs in eval mode (the
/// official model's, paper §3.2: the memory is a constant, so its keys and
/// values are too).
inline constexpr llvm::StringLiteral kKvSegmentFunctionName = "segment_kv";
inline constexpr llvm::StringLiteral kKvLogProbsFunctionName =
    "segment_log_probs_kv";
/// Their packed entry points.
inline constexpr llvm::StringLiteral kKvSegmentEntryName = "txl_segment_kv";
inline constexpr llvm::StringLiteral kKvLogProbsEntryName =
    "txl_segment_log_probs_kv";

/// r_head_k of every layer for one klen:
///
///   func.func @segment_r_head_k(params..., %klen, %clamp_len)
///       -> (%r_head_k...)   n_layer of [klen, n_head·d_head]
///
/// (official RelPartialLearnableMultiHeadAttn: r_net(pos_emb), pos_emb over
/// distances klen-1 ... 0 clamped at clamp_len when > 0).
inline constexpr llvm::StringLiteral kRHeadKFunctionName = "segment_r_head_k";
inline constexpr llvm::StringLiteral kRHeadKEntryName = "txl_segment_r_head_k";

/// The private layer function of the key/value-cache forms: (%h, %r_head_k,
/// %k_mem, %v_mem, %mem_len, %same_length, layer params...) -> (%h,
/// %new_k, %new_v).
inline constexpr llvm::StringLiteral kKvLayerFunctionName = "decoder_layer_kv";

/// Whether the model can have the key/value-cache functions (attn_type 0;
/// the other types add positions to the memory rows per segment or index
/// tables by klen, see docs/attention-types.md).
bool hasKvCacheFunctions(const ModelConfig &config);

/// Adds @segment_r_head_k, @segment_kv, @segment_log_probs_kv and
/// @decoder_layer_kv to a module from buildSegmentModule. Fails with a
/// diagnostic unless hasKvCacheFunctions(config).
LogicalResult buildKvCacheFunctions(ModuleOp module, const ModelConfig &config);

/// Builds the segment module in the four-term form (paper §3.3 written
/// literally): @segment and @decoder_layer, and for objective "alrfou"
/// @segment_train and @aux_head_nll. Fails with a diagnostic for configurations
/// the compiler does not support (odd d_model).
FailureOr<OwningOpRef<ModuleOp>> buildSegmentModule(MLIRContext &context,
                                                    const ModelConfig &config);

} // namespace txl
} // namespace mlir

#endif // TXL_FRONTEND_SEGMENTBUILDER_H

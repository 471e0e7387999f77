//===- TrainingBuilder.h - Optimizer step and lr schedule -------*- C++ -*-===//
//
// The training functions of the model module, next to @segment and
// @segment_grad, compiled for every model so that every target gets them
// (runtime ABI in runtime/include/txl/runtime.h). With S the optimizer's
// state lists, the CPU form works on one flat tensor per call, so that its
// code is compiled once, whatever the number of parameters (issue #48):
//
//   func.func @squared_norm_part(%g: tensor<?xf32>, %part: i64, %parts: i64)
//       -> tensor<1xf32>
//   func.func @optimizer_update(%p, %g, %state_0..%state_{S-1}:
//                               tensor<?xf32>, %lr: f64, %step: i64,
//                               %inv_loss_scale: f32,
//                               %partials: tensor<?xf32>, %part: i64,
//                               %parts: i64)
//       -> (new %p, new states...)   // materialized in their arguments
//   func.func @learning_rate(%step: i64, %lr: f64, %max_step: i64)
//       -> tensor<1xf64>
//
// They follow the official pytorch/train.py: clip_grad_norm_ then
// optimizer.step() for one update, and its step-wise lr annealing. An
// update is split into `parts` element ranges of every tensor, which the
// runtime runs on its threads: first the sum of squares of each part of
// the gradients, then, given all of them, the update of each part in place.
// The GPU targets take every parameter in one call instead (one launch per
// distinct kernel, not one per tensor): see buildTrainingFunctions.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_FRONTEND_TRAININGBUILDER_H
#define TXL_FRONTEND_TRAININGBUILDER_H

#include "txl/Frontend/ModelConfig.h"

#include "mlir/IR/BuiltinOps.h"

namespace mlir {
namespace txl {

/// Names of the GPU targets' whole-model update and partial sums of
/// squared gradients (clipping), and of their packed entry points
/// (`txl.entry`; runtime.h).
inline constexpr llvm::StringLiteral kOptimizerStepFunctionName =
    "optimizer_step";
inline constexpr llvm::StringLiteral kOptimizerStepEntryName =
    "txl_optimizer_step";
inline constexpr llvm::StringLiteral kGradSquaredNormFunctionName =
    "grad_squared_norm";
inline constexpr llvm::StringLiteral kGradSquaredNormEntryName =
    "txl_grad_squared_norm";

/// Names of the CPU target's per-tensor sum of squares and update, and of
/// their packed entry points.
inline constexpr llvm::StringLiteral kSquaredNormPartFunctionName =
    "squared_norm_part";
inline constexpr llvm::StringLiteral kSquaredNormPartEntryName =
    "txl_squared_norm_part";
inline constexpr llvm::StringLiteral kOptimizerUpdateFunctionName =
    "optimizer_update";
inline constexpr llvm::StringLiteral kOptimizerUpdateEntryName =
    "txl_optimizer_update";

/// Name of the generated learning-rate schedule, and of its packed entry.
inline constexpr llvm::StringLiteral kLearningRateFunctionName =
    "learning_rate";
inline constexpr llvm::StringLiteral kLearningRateEntryName =
    "txl_learning_rate";

/// Name of the generated accumulation of a batch chunk's gradients (GPU
/// targets with batch_chunk > 1), and of its packed entry.
inline constexpr llvm::StringLiteral kAccumulateGradsFunctionName =
    "accumulate_grads";
inline constexpr llvm::StringLiteral kAccumulateGradsEntryName =
    "txl_accumulate_grads";

/// The state tensors `optim` keeps per trainable parameter, in the order
/// @optimizer_update and @optimizer_step take and return them, named by
/// torch.optim's state keys: adam {exp_avg, exp_avg_sq}, sgd
/// {momentum_buffer}, adagrad {sum}. Empty for an optimizer the model file
/// parser would reject.
SmallVector<StringRef, 2> getOptimizerStateNames(StringRef optim);

/// Appends the training functions for `config` to `module`: for the CPU
/// (`deviceNormTensors` 0) @squared_norm_part, @optimizer_update and
/// @learning_rate, as in the file comment.
///
/// Part p of `parts` of a tensor with n elements is its row-major elements
/// [n·p/parts, n·(p+1)/parts). @squared_norm_part returns the sum of the
/// squares of part `part` of one gradient (f32); the runtime adds those of
/// every gradient in parameter order.
///
/// @optimizer_update performs part `part` of one parameter's share of an
/// update of official train.py: with `clip` = [train] clip > 0,
/// torch.nn.utils.clip_grad_norm_(params, clip) (global L2 norm in f32, the
/// square root of the `partials` added in order, coefficient clip / (norm +
/// 1e-6) clamped to 1, applied to every gradient as it is read), then
/// torch.optim.Adam (betas (0.9, 0.999), eps 1e-8), SGD (momentum [train]
/// mom) or Adagrad (eps 1e-10) at `lr` (f64), `step` counting updates from
/// 1. The gradients (and the partial sums of their squares) are taken as
/// the loss scale times the true ones: the norm and every gradient read are
/// multiplied by `inv_loss_scale` (a power of two; 1 without loss
/// scaling). The new parameter and states (f32, flat) are written over that
/// part of the arguments, in place. clip = 0 disables clipping (torch would
/// zero every gradient instead).
///
/// @learning_rate(step, lr, max_step) returns the lr train.py has in effect
/// after update `step` (step 0: the lr of the first update), `lr` being the
/// one in effect for update `step`, of a run of `max_step` updates (the
/// cosine schedule's T_max: the run's --max-step, as train.py's
/// args.max_step, not the model file's); see TrainingBuilder.cpp for each
/// scheduler.
///
/// Fails with a diagnostic for an optimizer without a compiled update (the
/// model file parser rejects those before).
///
/// With `deviceNormTensors` > 0 (the GPU targets) the update takes every
/// trainable parameter (T of them, in parameter order, flat as tensor<numel x
/// f32>) in one call:
///
///   func.func @grad_squared_norm(%g_0..%g_{T-1}, %partials: tensor<?xf32>)
///       -> tensor<?xf32>   // materialized in %partials: groups · parts
///                          // parts, then deviceNormSums sums of them
///   func.func @optimizer_step(%p_0..%p_{T-1}, %g_0..%g_{T-1},
///                             %state_0_0..%state_{S-1}_{T-1},
///                             %lr: f64, %step: i64, %inv_loss_scale: f32,
///                             %partials: tensor<?xf32>, %part: i64,
///                             %parts: i64)
///       -> (new params..., new states..., tensor<1xf32> grad_norm)
///
/// @grad_squared_norm computes every part in one call, one work-item per
/// part and one kernel per group of `deviceNormTensors` gradients (the
/// runtime's TXL_NORM_TENSORS_PER_KERNEL, which the caller passes: group g
/// writes partials[g * parts + p]), and part p of a tensor is its
/// elements p, p + parts, p + 2·parts, ... (neighbouring work-items read
/// neighbouring elements), then sums the parts as [groups · parts /
/// deviceNormSums, deviceNormSums] over the rows (txl.sum_leading) into
/// the last deviceNormSums entries, which the host reads and adds; the runtime
/// runs
/// @optimizer_step, @optimizer_update of every parameter with the norm as its
/// last result, as part 0 of 1 with those partials. On the GPU targets with
/// [train] batch_chunk > 1 the module also gets
///
///   func.func @accumulate_grads(%g_0..%g_{T-1}, %c_0..%c_{T-1},
///                               %scale: f32, %first: i64)
///       -> (tensor<n_i x f32>...)   // materialized in %g_i
///
/// train.py's accumulation of chunk gradients (each chunk's backward of
/// loss / batch_chunk adds into .grad): g_i = c_i * scale when `first` is
/// not 0, else g_i + c_i * scale, one work-item per element.
/// `deviceNormSums`: with `deviceNormTensors` > 0, how many sums of the parts
/// @grad_squared_norm leaves at the end of its partials (the runtime's
/// TXL_NORM_SUMS, which the caller passes).
LogicalResult buildTrainingFunctions(ModuleOp module, const ModelConfig &config,
                                     int64_t deviceNormTensors = 0,
                                     int64_t deviceNormSums = 0);

} // namespace txl
} // namespace mlir

#endif // TXL_FRONTEND_TRAININGBUILDER_H

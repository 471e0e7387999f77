//===- TrainingBuilder.h - Optimizer step and lr schedule -------*- C++ -*-===//
//
// The training functions of the model module, next to @segment and
// @segment_grad, compiled for every model so that every target gets them
// (runtime ABI: txl_grad_squared_norm, txl_optimizer_step and
// txl_learning_rate in runtime/include/txl/runtime.h). With T the trainable
// parameters of getParameterTable in order and S the optimizer's state
// lists:
//
//   func.func @grad_squared_norm(%g_0..%g_{T-1}, %part: i64, %parts: i64)
//       -> tensor<1xf32>
//   func.func @optimizer_step(%p_0..%p_{T-1}, %g_0..%g_{T-1},
//                             %state_0_0..%state_{S-1}_{T-1},
//                             %lr: f64, %step: i64, %inv_loss_scale: f32,
//                             %partials: tensor<?xf32>, %part: i64,
//                             %parts: i64)
//       -> (new params..., new states..., tensor<1xf32> grad_norm)
//   func.func @learning_rate(%step: i64, %lr: f64, %max_step: i64)
//       -> tensor<1xf64>
//
// They follow the official pytorch/train.py: clip_grad_norm_ then
// optimizer.step() for one update, and its step-wise lr annealing. An
// update is split into `parts` element ranges of every tensor, which the
// runtime runs on its threads: first the sum of squares of each part of
// the gradients, then, given all of them, the update of each part in place.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_FRONTEND_TRAININGBUILDER_H
#define TXL_FRONTEND_TRAININGBUILDER_H

#include "txl/Frontend/ModelConfig.h"

#include "mlir/IR/BuiltinOps.h"

namespace mlir {
namespace txl {

/// Name of the generated optimizer update.
inline constexpr llvm::StringLiteral kOptimizerStepFunctionName =
    "optimizer_step";

/// Name of the generated partial sum of squared gradients (clipping).
inline constexpr llvm::StringLiteral kGradSquaredNormFunctionName =
    "grad_squared_norm";

/// Names of the private per-tensor functions the CPU forms of
/// @grad_squared_norm and @optimizer_step call once per parameter (their
/// code compiled once, whatever n_layer is):
///
///   func.func private @squared_norm_part(%g: tensor<?xf32>, %part: index,
///                                        %parts: index) -> f32
///   func.func private @optimizer_update(%p, %g, %state_0..%state_{S-1}:
///                                       tensor<?xf32>, %lr: f64,
///                                       %step: i64, %scale: f32,
///                                       %part: index, %parts: index)
///       -> (new %p, new states...)   // materialized in their arguments
inline constexpr llvm::StringLiteral kSquaredNormPartFunctionName =
    "squared_norm_part";
inline constexpr llvm::StringLiteral kOptimizerUpdateFunctionName =
    "optimizer_update";

/// Name of the generated learning-rate schedule.
inline constexpr llvm::StringLiteral kLearningRateFunctionName =
    "learning_rate";

/// Name of the generated accumulation of a batch chunk's gradients (GPU
/// targets with batch_chunk > 1).
inline constexpr llvm::StringLiteral kAccumulateGradsFunctionName =
    "accumulate_grads";

/// The state tensors `optim` keeps per trainable parameter, in the order
/// @optimizer_step takes and returns their lists, named by torch.optim's
/// state keys: adam {exp_avg, exp_avg_sq}, sgd {momentum_buffer}, adagrad
/// {sum}. Empty for an optimizer the model file parser would reject.
SmallVector<StringRef, 2> getOptimizerStateNames(StringRef optim);

/// Appends @grad_squared_norm, @optimizer_step and @learning_rate for
/// `config` to `module`.
///
/// Part p of `parts` of a tensor with n elements is its row-major elements
/// [n·p/parts, n·(p+1)/parts). @grad_squared_norm returns the sum of the
/// squares of part `part` of every gradient (f32, added in parameter order).
///
/// @optimizer_step performs part `part` of one update of official
/// train.py: with `clip` = [train] clip > 0,
/// torch.nn.utils.clip_grad_norm_(params, clip) (global L2 norm in f32, the
/// square root of the `partials` added in order, coefficient clip / (norm +
/// 1e-6) clamped to 1, applied to every gradient as it is read), then
/// torch.optim.Adam (betas (0.9, 0.999), eps 1e-8), SGD (momentum [train]
/// mom) or Adagrad (eps 1e-10) at `lr` (f64), `step` counting updates from
/// 1. The gradients (and the partial sums of their squares) are taken as
/// the loss scale times the true ones: the norm and every gradient read are
/// multiplied by `inv_loss_scale` (a power of two; 1 without loss
/// scaling). The new parameters and states (f32, the parameters' shapes) are
/// written over that part of the arguments, in place; the result is the
/// norm before clipping. clip = 0 disables clipping (torch would zero every
/// gradient instead).
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
/// With `forDevice` (the GPU targets) @grad_squared_norm computes every part
/// in one call, one work-item per part, and part p of a tensor is its
/// elements p, p + parts, p + 2·parts, ... (neighbouring work-items read
/// neighbouring elements):
///
///   func.func @grad_squared_norm(%g_0..%g_{T-1}, %partials: tensor<?xf32>)
///       -> tensor<?xf32>   // materialized in %partials, parts = its size
///
/// and the runtime runs @optimizer_step as part 0 of 1 with those partials.
/// With `forDevice` and [train] batch_chunk > 1 the module also gets
///
///   func.func @accumulate_grads(%g_0..%g_{T-1}, %c_0..%c_{T-1},
///                               %scale: f32, %first: i64)
///       -> (tensor<n_i x f32>...)   // materialized in %g_i
///
/// train.py's accumulation of chunk gradients (each chunk's backward of
/// loss / batch_chunk adds into .grad): g_i = c_i * scale when `first` is
/// not 0, else g_i + c_i * scale, one work-item per element.
LogicalResult buildTrainingFunctions(ModuleOp module,
                                     const ModelConfig &config,
                                     bool forDevice = false);

} // namespace txl
} // namespace mlir

#endif // TXL_FRONTEND_TRAININGBUILDER_H

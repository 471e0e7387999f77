//===- TrainingBuilder.h - Optimizer step and lr schedule -------*- C++ -*-===//
//
// The two training functions of the model module, next to @segment and
// @segment_grad, compiled for every model so that every target gets them
// (runtime ABI: txl_optimizer_step and txl_learning_rate in
// runtime/include/txl/runtime.h). With T the trainable parameters of
// getParameterTable in order and S the optimizer's state lists:
//
//   func.func @optimizer_step(%p_0..%p_{T-1}, %g_0..%g_{T-1},
//                             %state_0_0..%state_{S-1}_{T-1},
//                             %lr: f64, %step: i64)
//       -> (new params..., new states..., tensor<1xf32> grad_norm)
//   func.func @learning_rate(%step: i64, %lr: f64) -> tensor<1xf64>
//
// Both follow the official pytorch/train.py: clip_grad_norm_ then
// optimizer.step() for one update, and its step-wise lr annealing.
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

/// Name of the generated learning-rate schedule.
inline constexpr llvm::StringLiteral kLearningRateFunctionName =
    "learning_rate";

/// The state tensors `optim` keeps per trainable parameter, in the order
/// @optimizer_step takes and returns their lists, named by torch.optim's
/// state keys: adam {exp_avg, exp_avg_sq}, sgd {momentum_buffer}, adagrad
/// {sum}. Empty for an optimizer the model file parser would reject.
SmallVector<StringRef, 2> getOptimizerStateNames(StringRef optim);

/// Appends @optimizer_step and @learning_rate for `config` to `module`.
///
/// @optimizer_step performs one update of official train.py: with `clip`
/// = [train] clip > 0, torch.nn.utils.clip_grad_norm_(params, clip) (global
/// L2 norm in f32, coefficient clip / (norm + 1e-6) clamped to 1, applied to
/// every gradient as it is read), then torch.optim.Adam (betas (0.9, 0.999),
/// eps 1e-8), SGD (momentum [train] mom) or Adagrad (eps 1e-10) at `lr`
/// (f64), `step` counting updates from 1. Outputs: the new parameters and
/// states (f32, the parameters' shapes) and the norm before clipping.
/// clip = 0 disables clipping (torch would zero every gradient instead).
///
/// @learning_rate(step, lr) returns the lr train.py has in effect after
/// update `step` (step 0: the lr of the first update), `lr` being the one in
/// effect for update `step`; see TrainingBuilder.cpp for each scheduler.
///
/// Fails with a diagnostic for an optimizer without a compiled update (the
/// model file parser rejects those before).
LogicalResult buildTrainingFunctions(ModuleOp module,
                                     const ModelConfig &config);

} // namespace txl
} // namespace mlir

#endif // TXL_FRONTEND_TRAININGBUILDER_H

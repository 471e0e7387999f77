//===- Optimizer.cpp - The update, the learning rate, the states ----------===//
//
// txl_session_optimizer_step: the clipping norm from the gradients' partial
// sums of squares, then the compiled optimizer the executable carries
// (@optimizer_step over the whole model, a GPU target's; @optimizer_update
// per tensor and element range on the worker pool, the CPU's); the
// compiled learning-rate schedule; the optimizer state in and out for
// checkpoints. Every array is the session's device's.
//
//===----------------------------------------------------------------------===//

#include "SessionState.h"

#include "txl/rt/session/MemRef.h"
#include "txl/rt/support/Status.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

using namespace txl::rt;

/// The gradients' norm from the partial sums of their squares, added in
/// order in f32 as @optimizer_update and @optimizer_step add them, and
/// unscaled.
static float normOf(const std::vector<float> &partials, float invLossScale) {
  float sum = 0;
  for (float part : partials)
    sum += part;
  return std::sqrt(sum) * invLossScale;
}

/// The whole-model update (txl_optimizer_step): every part of the clipping
/// norm in one call, their sum on the host, then the whole update as part 0
/// of 1 with that norm, unless it is not finite.
static float wholeModelStep(txl_session &session, double lr, int64_t step,
                            float invLossScale) {
  const size_t T = session.trainable.size();
  auto addGrads = [&](PackedArgs &args) {
    for (size_t t = 0; t < T; ++t)
      args.memref(session.grads[session.trainable[t]].buffer(),
                  flatShape(session, t));
  };
  PackedArgs norm;
  addGrads(norm);
  norm.memref(session.normPartials.buffer(), {normPartials(T)});
  txl_grad_squared_norm(norm.data());
  // The device's TXL_NORM_SUMS sums of the parts, after them.
  std::vector<float> partials(TXL_NORM_SUMS);
  session.normPartials.read(partials.data(),
                            session.normPartials.size() - TXL_NORM_SUMS,
                            TXL_NORM_SUMS);
  // The update's one synchronisation: the clipping norm, summed here in
  // @optimizer_update's order, decides whether there is an update and is
  // @optimizer_step's argument.
  const float total = normOf(partials, invLossScale);
  if (!std::isfinite(total))
    return total;

  PackedArgs args;
  for (size_t t = 0; t < T; ++t)
    args.memref(session.params[session.trainable[t]].buffer(),
                flatShape(session, t));
  addGrads(args);
  for (size_t s = 0; s < session.states.size(); ++s)
    args.memref(session.states[s].buffer(), flatShape(session, s % T));
  args.f64(lr);
  args.i64(step);
  args.f32(invLossScale);
  args.f32(total);
  args.i64(0);
  args.i64(1);
  txl_optimizer_step(args.data());
  return total;
}

/// The per-tensor update (txl_optimizer_update, on the host's worker pool):
/// `parts` element ranges, one per thread; first
/// each range's sum of squared gradients (txl_squared_norm_part per
/// gradient, added in parameter order), then, given them all, each range's
/// update in place (txl_optimizer_update per parameter), unless the norm is
/// not finite. The generated code is per tensor, so that it is compiled
/// once whatever the number of parameters (issue #48).
static float perTensorStep(txl_session &session, double lr, int64_t step,
                           float invLossScale, int parts) {
  const size_t T = session.trainable.size();
  const size_t S = T ? session.states.size() / T : 0;
  std::vector<float> partials(parts);
  session.pool.run(parts, [&](int part) {
    float sum = 0;
    for (size_t t = 0; t < T; ++t) {
      float square = 0;
      PackedArgs args;
      args.memref(session.grads[session.trainable[t]].buffer(),
                  flatShape(session, t));
      args.i64(part);
      args.i64(parts);
      args.memref(&square, {1});
      txl_squared_norm_part(args.data());
      sum = t == 0 ? square : sum + square;
    }
    partials[part] = sum;
  });
  float total = normOf(partials, invLossScale);
  if (!std::isfinite(total))
    return total;
  session.pool.run(parts, [&](int part) {
    for (size_t t = 0; t < T; ++t) {
      PackedArgs args;
      args.memref(session.params[session.trainable[t]].buffer(),
                  flatShape(session, t));
      args.memref(session.grads[session.trainable[t]].buffer(),
                  flatShape(session, t));
      for (size_t s = 0; s < S; ++s)
        args.memref(session.states[s * T + t].buffer(), flatShape(session, t));
      args.f64(lr);
      args.i64(step);
      args.f32(invLossScale);
      args.memref(partials.data(), {parts});
      args.i64(part);
      args.i64(parts);
      txl_optimizer_update(args.data());
    }
  });
  return total;
}

extern "C" txl_status_t txl_session_optimizer_step(txl_session_t *session,
                                                   double lr, int64_t step,
                                                   int32_t loss_scale_log2,
                                                   int32_t parts,
                                                   float *out_grad_norm) {
  return guardStatus([&] {
    requireSession(session);
    if (!out_grad_norm)
      fail(TXL_INVALID_ARGUMENT, "txl_session_optimizer_step: null argument");
    if (!std::isfinite(lr) || lr < 0)
      fail(TXL_INVALID_ARGUMENT,
           "txl_session_optimizer_step: lr must be finite and non-negative, "
           "got {}",
           lr);
    if (step < 1)
      fail(TXL_INVALID_ARGUMENT,
           "txl_session_optimizer_step: step counts from 1, got {}", step);
    if (loss_scale_log2 < 0 || loss_scale_log2 > 120)
      fail(TXL_INVALID_ARGUMENT, "loss_scale_log2 must be in [0, 120], got {}",
           loss_scale_log2);
    if (parts < 1)
      fail(TXL_INVALID_ARGUMENT,
           "txl_session_optimizer_step: parts must be at least 1, got {}",
           parts);
    ensureTrainingState(*session);
    float invLossScale = std::ldexp(1.0f, -loss_scale_log2);
    *out_grad_norm =
        session->wholeModelUpdate
            ? wholeModelStep(*session, lr, step, invLossScale)
            : perTensorStep(*session, lr, step, invLossScale, parts);
    // The update wrote the trainable parameters and the states.
    for (int32_t i : session->trainable)
      session->params[i].invalidate();
    for (DeviceArray &state : session->states)
      state.invalidate();
    parametersChanged(*session);
    reportCounts(*session, "update");
  });
}

extern "C" txl_status_t txl_session_learning_rate(txl_session_t *session,
                                                  int64_t step, double lr,
                                                  int64_t max_step,
                                                  double *out_lr) {
  return guardStatus([&] {
    requireSession(session);
    ensureTrainingState(*session);
    if (!out_lr)
      fail(TXL_INVALID_ARGUMENT, "txl_session_learning_rate: null argument");
    if (step < 0 || max_step < 1)
      fail(TXL_INVALID_ARGUMENT,
           "txl_session_learning_rate: step {} and max_step {} (step >= 0, "
           "max_step >= 1)",
           step, max_step);
    PackedArgs args;
    args.i64(step);
    args.f64(lr);
    args.i64(max_step);
    // Host code on every target: no device memory, no synchronisation.
    double next = 0;
    args.result(&next);
    txl_learning_rate(args.data());
    *out_lr = next;
  });
}

/// Optimizer state `state` of parameter `index`.
static DeviceArray &optimizerState(txl_session &session, int32_t state,
                                   int32_t index) {
  ensureTrainingState(session);
  const txl_model_info_t &info = *session.info;
  if (state < 0 || state >= info.n_optim_states)
    fail(TXL_INVALID_ARGUMENT, "optimizer state {} out of range [0, {})", state,
         info.n_optim_states);
  auto it =
      std::find(session.trainable.begin(), session.trainable.end(), index);
  if (it == session.trainable.end())
    fail(TXL_INVALID_ARGUMENT,
         "parameter index {} has no optimizer state (out of range or not "
         "trainable)",
         index);
  return session.states[size_t(state) * session.trainable.size() +
                        size_t(it - session.trainable.begin())];
}

extern "C" txl_status_t txl_session_optimizer_state(txl_session_t *session,
                                                    int32_t state,
                                                    int32_t index,
                                                    const float **out_data) {
  return guardStatus([&] {
    requireSession(session);
    if (!out_data)
      fail(TXL_INVALID_ARGUMENT, "txl_session_optimizer_state: null argument");
    *out_data = optimizerState(*session, state, index).map();
  });
}

extern "C" txl_status_t txl_session_set_optimizer_state(txl_session_t *session,
                                                        int32_t state,
                                                        int32_t index,
                                                        const float *data) {
  return guardStatus([&] {
    requireSession(session);
    if (!data)
      fail(TXL_INVALID_ARGUMENT,
           "txl_session_set_optimizer_state: null argument");
    DeviceArray &array = optimizerState(*session, state, index);
    array.write(data, 0, array.size());
  });
}

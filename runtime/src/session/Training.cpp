//===- Training.cpp - The training state and a chunk's backward -----------===//
//
// txl_session_train_segment (the backward of one batch chunk into the
// update's gradient, as train.py accumulates loss / batch_chunk) and the
// flat gradient's I/O the data-parallel ranks average through
// (txl_session_read_gradients, txl_session_write_gradients).
//
//===----------------------------------------------------------------------===//

#include "SessionState.h"

#include "txl/rt/collectives/DataParallel.h"
#include "txl/rt/session/MemRef.h"
#include "txl/rt/session/ModelInfo.h"
#include "txl/rt/support/Status.h"

#include <algorithm>
#include <cstdint>
#include <vector>

using namespace txl::rt;

void txl::rt::ensureTrainingState(txl_session &session) {
  if (!session.trainable.empty())
    return;
  // The GPU targets' whole-model update, or the CPU's per-tensor one.
  const bool wholeModel = txl_optimizer_step && txl_grad_squared_norm;
  if (!wholeModel && (!txl_optimizer_update || !txl_squared_norm_part))
    fail(TXL_INVALID_ARGUMENT,
         "this executable has no compiled optimizer (txl_optimizer_step and "
         "txl_grad_squared_norm, or txl_optimizer_update and "
         "txl_squared_norm_part); recompile the model with this txlc");
  if (!txl_learning_rate)
    fail(TXL_INVALID_ARGUMENT, "this executable has no compiled learning "
                               "rate schedule (txl_learning_rate); recompile "
                               "the model with this txlc");
  if (!session.loaded)
    fail(TXL_INVALID_ARGUMENT, "no checkpoint loaded");
  const txl_model_info_t &info = *session.info;
  for (int32_t i = 0; i < info.n_params; ++i)
    if (info.params[i].trainable)
      session.trainable.push_back(i);
  const size_t T = session.trainable.size();
  for (size_t s = 0; s < T * size_t(info.n_optim_states); ++s)
    session.states.push_back(DeviceArray::zeros(
        *session.device,
        size_t(parameterElements(info.params[session.trainable[s % T]]))));
  session.grads = allocateGrads(session);
  session.wholeModelUpdate = wholeModel;
  if (wholeModel)
    session.normPartials =
        DeviceArray(*session.device, size_t(normPartials(T)));
}

std::vector<int64_t> txl::rt::flatShape(const txl_session &session, size_t t) {
  return {parameterElements(session.info->params[session.trainable[t]])};
}

/// txl_session_train_segment, with `out_nll` written at the device's next
/// synchronisation when `deferOutput`.
static void trainSegment(txl_session_t *session, const int64_t *data,
                         const int64_t *target, int64_t qlen, int64_t batch,
                         const txl_run_options_t *options, int64_t chunk,
                         int64_t chunks, float *out_nll, bool deferOutput) {
  requireSession(session);
  ensureTrainingState(*session);
  if (chunks < 1 || chunk < 0 || chunk >= chunks)
    fail(TXL_INVALID_ARGUMENT, "chunk {} of {}: need 0 <= chunk < chunks",
         chunk, chunks);
  if (chunks > 1 && session->chunkGrads.empty())
    session->chunkGrads = allocateGrads(*session);
  runSegment(session, data, target, qlen, batch, options, out_nll, nullptr,
             chunks > 1 ? &session->chunkGrads : &session->grads,
             /*logProbs=*/false, deferOutput);
  if (chunks == 1)
    return;
  // train.py: each chunk's backward of loss / batch_chunk accumulates:
  // through the executable's txl_accumulate_grads where it has one (a
  // GPU target's, on the device), else on the arrays' host views.
  const float scale = 1.0f / static_cast<float>(chunks);
  if (txl_accumulate_grads) {
    PackedArgs args;
    for (const std::vector<DeviceArray> *list :
         {&session->grads, &session->chunkGrads})
      for (size_t t = 0; t < session->trainable.size(); ++t)
        args.memref((*list)[session->trainable[t]].buffer(),
                    flatShape(*session, t));
    args.f32(scale);
    args.i64(chunk == 0 ? 1 : 0);
    txl_accumulate_grads(args.data());
    for (int32_t i : session->trainable)
      session->grads[i].invalidate();
    return;
  }
  for (int32_t i : session->trainable) {
    float *total = session->grads[i].map();
    const float *part = session->chunkGrads[i].map();
    for (size_t k = 0; k < session->grads[i].size(); ++k)
      total[k] = chunk == 0 ? part[k] * scale : total[k] + part[k] * scale;
    session->grads[i].flush();
  }
}

extern "C" txl_status_t
txl_session_train_segment(txl_session_t *session, const int64_t *data,
                          const int64_t *target, int64_t qlen, int64_t batch,
                          const txl_run_options_t *options, int64_t chunk,
                          int64_t chunks, float *out_nll) {
  return guardStatus([&] {
    trainSegment(session, data, target, qlen, batch, options, chunk, chunks,
                 out_nll, /*deferOutput=*/false);
  });
}

extern "C" txl_status_t txl_session_enqueue_train_segment(
    txl_session_t *session, const int64_t *data, const int64_t *target,
    int64_t qlen, int64_t batch, const txl_run_options_t *options,
    int64_t chunk, int64_t chunks, float *out_nll) {
  return guardStatus([&] {
    trainSegment(session, data, target, qlen, batch, options, chunk, chunks,
                 out_nll, /*deferOutput=*/true);
  });
}

extern "C" int64_t txl_session_gradient_floats(txl_session_t *session) {
  if (!session)
    return 0;
  int64_t total = 0;
  for (int32_t i : session->trainable)
    total += parameterElements(session->info->params[i]);
  return total;
}

/// Calls `visit(index, begin, count, at)` for every trainable parameter's
/// part of flat gradient floats [offset, offset + count): its elements
/// [begin, begin + count), at `at` floats into the range.
template <typename Visit>
static void forGradientRange(txl_session &session, int64_t offset,
                             int64_t count, const void *buffer, Visit visit) {
  ensureTrainingState(session);
  const int64_t total = txl_session_gradient_floats(&session);
  if (!buffer)
    fail(TXL_INVALID_ARGUMENT, "gradient range: null buffer");
  if (offset < 0 || count < 0 || offset > total || count > total - offset)
    fail(TXL_INVALID_ARGUMENT,
         "gradient range: {} floats from offset {} are outside the flat "
         "gradient's {}",
         count, offset, total);
  std::vector<int64_t> sizes;
  for (int32_t i : session.trainable)
    sizes.push_back(parameterElements(session.info->params[i]));
  // The parts are consecutive in the flat gradient: each starts where the
  // previous one ended.
  int64_t at = 0;
  for (const TensorPart &part : tensorParts(sizes, {offset, count})) {
    visit(session.trainable[part.tensor], part.range.first, part.range.count,
          at);
    at += part.range.count;
  }
}

extern "C" void *txl_session_device_gradient(txl_session_t *session,
                                             int32_t index) {
  if (!session || index < 0 || size_t(index) >= session->grads.size())
    return nullptr;
  return session->grads[size_t(index)].buffer();
}

extern "C" txl_status_t txl_session_read_gradients(txl_session_t *session,
                                                   int64_t offset,
                                                   int64_t count, float *out) {
  return guardStatus([&] {
    requireSession(session);
    forGradientRange(*session, offset, count, out,
                     [&](int32_t i, int64_t begin, int64_t n, int64_t at) {
                       session->grads[i].read(out + at, size_t(begin),
                                              size_t(n));
                     });
  });
}

extern "C" txl_status_t txl_session_write_gradients(txl_session_t *session,
                                                    int64_t offset,
                                                    int64_t count,
                                                    const float *data) {
  return guardStatus([&] {
    requireSession(session);
    forGradientRange(*session, offset, count, data,
                     [&](int32_t i, int64_t begin, int64_t n, int64_t at) {
                       session->grads[i].write(data + at, size_t(begin),
                                               size_t(n));
                     });
  });
}

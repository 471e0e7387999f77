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
  // The CPU's per-tensor update, or the GPU targets' whole-model one.
  if (session.onDevice ? !txl_optimizer_step || !txl_grad_squared_norm
                       : !txl_optimizer_update || !txl_squared_norm_part)
    fail(TXL_INVALID_ARGUMENT,
         "this executable has no compiled optimizer ({}); recompile the model "
         "with this txlc",
         session.onDevice ? "txl_optimizer_step, txl_grad_squared_norm"
                          : "txl_optimizer_update, txl_squared_norm_part");
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
  session.states.resize(T * size_t(info.n_optim_states));
  for (size_t s = 0; s < session.states.size(); ++s)
    session.states[s].assign(
        size_t(parameterElements(info.params[session.trainable[s % T]])), 0.0f);
  if (!session.onDevice) {
    session.grads.resize(info.n_params);
    for (int32_t i : session.trainable)
      session.grads[i].resize(session.params[i].size());
    return;
  }
  session.deviceGrads = allocateDeviceGrads(session);
  for (const std::vector<float> &state : session.states) {
    void *buffer = mgpuMemAlloc(state.size() * sizeof(float), nullptr, false);
    mgpuMemset32(buffer, 0, state.size(), nullptr);
    session.deviceStates.push_back(buffer);
  }
  session.devicePartials =
      mgpuMemAlloc(size_t(normPartials(T)) * sizeof(float), nullptr, false);
  session.deviceScalar = mgpuMemAlloc(sizeof(double), nullptr, false);
}

std::vector<int64_t> txl::rt::flatShape(const txl_session &session, size_t t) {
  return {parameterElements(session.info->params[session.trainable[t]])};
}

extern "C" txl_status_t
txl_session_train_segment(txl_session_t *session, const int64_t *data,
                          const int64_t *target, int64_t qlen, int64_t batch,
                          const txl_run_options_t *options, int64_t chunk,
                          int64_t chunks, float *out_nll) {
  return guardStatus([&] {
    requireSession(session);
    ensureTrainingState(*session);
    if (chunks < 1 || chunk < 0 || chunk >= chunks)
      fail(TXL_INVALID_ARGUMENT, "chunk {} of {}: need 0 <= chunk < chunks",
           chunk, chunks);
    if (session->onDevice) {
      if (chunks == 1) {
        runSegment(session, data, target, qlen, batch, options, out_nll,
                   nullptr, &session->deviceGrads);
        return;
      }
      // train.py: each chunk's backward of loss / batch_chunk accumulates;
      // the chunk's gradient and the sum stay on the device.
      if (!txl_accumulate_grads)
        fail(TXL_INVALID_ARGUMENT,
             "batch_chunk {} on a GPU target needs txl_accumulate_grads, "
             "which this executable lacks; recompile the model with this "
             "txlc",
             chunks);
      if (session->deviceChunkGrads.empty())
        session->deviceChunkGrads = allocateDeviceGrads(*session);
      runSegment(session, data, target, qlen, batch, options, out_nll, nullptr,
                 &session->deviceChunkGrads);
      PackedArgs args;
      for (const std::vector<void *> *list :
           {&session->deviceGrads, &session->deviceChunkGrads})
        for (size_t t = 0; t < session->trainable.size(); ++t)
          args.memref((*list)[session->trainable[t]], flatShape(*session, t));
      args.f32(1.0f / static_cast<float>(chunks));
      args.i64(chunk == 0 ? 1 : 0);
      txl_accumulate_grads(args.data());
      return;
    }
    const txl_model_info_t &info = *session->info;
    if (chunks > 1 && session->chunkGrads.empty())
      session->chunkGrads = session->grads;
    std::vector<std::vector<float>> &into =
        chunks > 1 ? session->chunkGrads : session->grads;
    std::vector<float *> pointers(info.n_params, nullptr);
    for (int32_t i : session->trainable)
      pointers[i] = into[i].data();
    runSegment(session, data, target, qlen, batch, options, out_nll,
               pointers.data());
    if (chunks == 1)
      return;
    // train.py: each chunk's backward of loss / batch_chunk accumulates.
    const float scale = 1.0f / static_cast<float>(chunks);
    for (int32_t i : session->trainable) {
      std::vector<float> &total = session->grads[i];
      const std::vector<float> &part = session->chunkGrads[i];
      for (size_t k = 0; k < total.size(); ++k)
        total[k] = chunk == 0 ? part[k] * scale : total[k] + part[k] * scale;
    }
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
  if (!session || !session->onDevice || index < 0 ||
      size_t(index) >= session->deviceGrads.size())
    return nullptr;
  return session->deviceGrads[size_t(index)];
}

extern "C" txl_status_t txl_session_read_gradients(txl_session_t *session,
                                                   int64_t offset,
                                                   int64_t count, float *out) {
  return guardStatus([&] {
    requireSession(session);
    forGradientRange(*session, offset, count, out,
                     [&](int32_t i, int64_t begin, int64_t n, int64_t at) {
                       if (session->onDevice)
                         txl_device_read(out + at, session->deviceGrads[i],
                                         size_t(begin) * sizeof(float),
                                         size_t(n) * sizeof(float));
                       else
                         std::copy_n(session->grads[i].data() + begin, n,
                                     out + at);
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
                       if (session->onDevice)
                         txl_device_write(session->deviceGrads[i],
                                          size_t(begin) * sizeof(float),
                                          data + at, size_t(n) * sizeof(float));
                       else
                         std::copy_n(data + at, n,
                                     session->grads[i].data() + begin);
                     });
  });
}

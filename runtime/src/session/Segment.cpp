//===- Segment.cpp - A segment through the generated entries --------------===//
//
// txl_session_run_segment, txl_session_run_segment_log_probs and
// txl_session_run_segment_grad: the generated entries called through their
// packed convention (args[i] points at argument i: an MLIR memref descriptor
// {allocated, aligned, offset, sizes[rank], strides[rank]} or a scalar). On
// the CPU the batch columns run as parallel slices, each with its own memory;
// on a GPU target the batch runs as one call. The parameters and the memory
// are arrays of the session's device (Residency.cpp), whose buffer handles
// the descriptors carry: host addresses on the CPU.
//
//===----------------------------------------------------------------------===//

#include "SessionState.h"

#include "txl/rt/session/MemRef.h"
#include "txl/rt/session/ModelInfo.h"
#include "txl/rt/support/Status.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <mutex>
#include <vector>

using namespace txl::rt;

/// Columns [first, first + count) of a row-major [rows, batch, inner] array,
/// into a contiguous [rows, count, inner] one.
static void gatherColumns(const float *src, int64_t rows, int64_t batch,
                          int64_t inner, int64_t first, int64_t count,
                          float *dst) {
  for (int64_t r = 0; r < rows; ++r)
    std::copy_n(src + (r * batch + first) * inner, count * inner,
                dst + r * count * inner);
}

/// The inverse of gatherColumns: a [rows, count, inner] slice back into
/// columns [first, first + count) of [rows, batch, inner].
static void scatterColumns(const float *src, int64_t rows, int64_t batch,
                           int64_t inner, int64_t first, int64_t count,
                           float *dst) {
  for (int64_t r = 0; r < rows; ++r)
    std::copy_n(src + r * count * inner, count * inner,
                dst + (r * batch + first) * inner);
}

void txl::rt::addParameters(PackedArgs &args, const txl_session &session) {
  const txl_model_info_t &info = *session.info;
  for (int32_t i = 0; i < info.n_params; ++i) {
    const txl_param_info_t &p = info.params[i];
    args.memref(session.params[i].buffer(),
                std::vector<int64_t>(p.shape, p.shape + p.rank));
  }
}

void txl::rt::addRunScalars(PackedArgs &args, const txl_run_options_t &options,
                            int64_t dropoutColumn) {
  for (int64_t scalar : {options.mem_len, options.clamp_len,
                         int64_t(options.same_length ? 1 : 0),
                         options.dropout_seed, options.dropout_offset,
                         dropoutColumn, int64_t(options.training ? 1 : 0)})
    args.i64(scalar);
}

void txl::rt::callEntry(const txl_session &session, txl_segment_fn entry,
                        const txl_run_options_t &options, int64_t qlen,
                        int64_t newMlen, const SliceCall &call) {
  const txl_model_info_t &info = *session.info;
  const int64_t dModel = info.d_model;
  // Objective "alrfou"'s backward segment (runtime.h).
  const bool alrfou = !call.grads.empty() && isAlRfouObjective(info);
  PackedArgs args;
  addParameters(args, session);
  args.memref(call.data, {qlen, call.batch});
  const bool logProbs = !call.target; // txl_segment_log_probs (runtime.h)
  if (!logProbs)
    args.memref(call.target, {qlen + (alrfou ? 1 : 0), call.batch});
  for (const float *m : call.mems)
    args.memref(m, {session.mlen, call.batch, dModel});
  const bool kv = !call.rHeadK.empty();
  const int64_t hd = info.n_head * info.d_head;
  if (kv) {
    for (const auto *list : {&call.kWindows, &call.vWindows})
      for (const float *m : *list)
        args.memref(m, {session.mlen + qlen, call.batch, hd});
    for (const float *r : call.rHeadK)
      args.memref(r, {session.mlen + qlen, hd});
    args.i64(options.mem_len);
    args.i64(options.same_length ? 1 : 0);
  } else {
    addRunScalars(args, options, call.dropoutColumn);
  }
  if (alrfou) {
    args.memref(options.loss_weights, {2 * info.n_layer});
    args.memref(options.position_weights, {qlen});
  }
  if (!call.grads.empty())
    args.f32(std::ldexp(1.0f, options.loss_scale_log2));
  if (logProbs)
    args.memref(call.nll, {qlen, call.batch, info.n_token});
  else
    args.memref(call.nll, {qlen, call.batch});
  const int64_t stateRows = kv ? qlen : newMlen;
  for (float *m : call.newMems)
    args.memref(m, {stateRows, call.batch, dModel});
  if (alrfou)
    for (int64_t part = 0; part < 3; ++part)
      args.memref(call.lossParts + part * qlen * call.batch,
                  {qlen, call.batch});
  for (int32_t i = 0; i < static_cast<int32_t>(call.grads.size()); ++i) {
    const txl_param_info_t &p = info.params[i];
    if (p.trainable)
      args.memref(call.grads[i],
                  std::vector<int64_t>(p.shape, p.shape + p.rank));
  }
  entry(args.data());
}

void txl::rt::setBlasThreads(int threads) {
  static std::mutex mutex;
  static int current = 0; // the last value set
  std::lock_guard<std::mutex> lock(mutex);
  if (threads > 0 && threads != current) {
    openblas_set_num_threads(threads);
    current = threads;
  }
}

/// One segment on the device through `entry` (the forward, or with
/// `grads` the backward entry): tokens in, per-token NLL out, and the
/// gradient of every trainable parameter i into the device buffer
/// `(*grads)[i]`; the parameters and the memory stay on the device. For
/// objective "alrfou"'s backward, `lossParts` [3, qlen, batch] receives the
/// loss's parts. Without `target`, `entry` is txl_segment_log_probs and
/// `outNll` receives [qlen, batch, n_token] log-probabilities.
static void runSegmentOnDevice(txl_session &session, txl_segment_fn entry,
                               const int64_t *data, const int64_t *target,
                               int64_t qlen, int64_t newMlen,
                               const txl_run_options_t &options, float *outNll,
                               std::vector<DeviceArray> *grads,
                               float *lossParts) {
  const txl_model_info_t &info = *session.info;
  const int64_t batch = session.batch, dModel = info.d_model;
  const size_t tokens = size_t(qlen * batch);
  // Objective "alrfou"'s backward (runtime.h): qlen + 1 target rows, the
  // loss weights in and the loss's three parts out, each its own buffer.
  const bool alrfou = grads && isAlRfouObjective(info);
  const size_t targetTokens = tokens + (alrfou ? size_t(batch) : 0);
  const size_t width = target ? 1 : size_t(info.n_token);
  std::vector<void *> inputs = {
      deviceCopy(data, tokens * sizeof(int64_t)),
      target ? deviceCopy(target, targetTokens * sizeof(int64_t)) : nullptr};
  std::vector<void *> parts;
  if (alrfou) {
    inputs.push_back(deviceCopy(options.loss_weights,
                                size_t(2 * info.n_layer) * sizeof(float)));
    inputs.push_back(
        deviceCopy(options.position_weights, size_t(qlen) * sizeof(float)));
    for (int part = 0; part < 3; ++part)
      parts.push_back(mgpuMemAlloc(tokens * sizeof(float), nullptr, false));
  }
  void *nll = mgpuMemAlloc(tokens * width * sizeof(float), nullptr, false);
  std::vector<DeviceArray> newMems =
      allocateMemory(session, size_t(newMlen * batch * dModel));

  PackedArgs args;
  addParameters(args, session);
  args.memref(inputs[0], {qlen, batch});
  if (target)
    args.memref(inputs[1], {qlen + (alrfou ? 1 : 0), batch});
  for (const DeviceArray &m : session.mems)
    args.memref(m.buffer(), {session.mlen, batch, dModel});
  addRunScalars(args, options, options.dropout_column);
  if (alrfou) {
    args.memref(inputs[2], {2 * info.n_layer});
    args.memref(inputs[3], {qlen});
  }
  if (grads)
    args.f32(std::ldexp(1.0f, options.loss_scale_log2));
  if (target)
    args.memref(nll, {qlen, batch});
  else
    args.memref(nll, {qlen, batch, info.n_token});
  for (const DeviceArray &m : newMems)
    args.memref(m.buffer(), {newMlen, batch, dModel});
  for (void *part : parts)
    args.memref(part, {qlen, batch});
  if (grads)
    for (int32_t i = 0; i < info.n_params; ++i) {
      const txl_param_info_t &p = info.params[i];
      if (p.trainable)
        args.memref((*grads)[i].buffer(),
                    std::vector<int64_t>(p.shape, p.shape + p.rank));
    }
  entry(args.data());
  if (grads)
    for (DeviceArray &grad : *grads)
      grad.invalidate();

  txl_device_read(outNll, nll, 0, tokens * width * sizeof(float));
  for (size_t part = 0; part < parts.size(); ++part)
    txl_device_read(lossParts + part * tokens, parts[part], 0,
                    tokens * sizeof(float));
  mgpuMemFree(nll, nullptr);
  freeDevice(parts);
  freeDevice(inputs);
  for (DeviceArray &m : newMems)
    m.invalidate();
  session.mems = std::move(newMems);
  session.mlen = newMlen;
}

std::vector<int64_t> txl::rt::sliceBounds(const txl_session &session,
                                          int64_t batch) {
  const int slices =
      static_cast<int>(std::min<int64_t>(std::max(session.threads, 1), batch));
  std::vector<int64_t> first(slices + 1);
  for (int s = 0; s <= slices; ++s)
    first[s] = batch * s / slices;
  return first;
}

void txl::rt::runSegment(txl_session_t *session, const int64_t *data,
                         const int64_t *target, int64_t qlen, int64_t batch,
                         const txl_run_options_t *options, float *out_nll,
                         float *const *outGrads,
                         std::vector<DeviceArray> *intoGrads, bool logProbs) {
  requireSession(session);
  const bool backward = outGrads || intoGrads;
  validateSegment(*session, data, target, qlen, batch, options, out_nll,
                  backward, outGrads, logProbs);
  const txl_model_info_t &info = *session->info;
  // Per position: one NLL, or every token's log-probability.
  const int64_t width = logProbs ? info.n_token : 1;
  // Objective "alrfou"'s backward: qlen + 1 target rows and the loss's
  // parts (runtime.h).
  const bool alrfou = backward && isAlRfouObjective(info);
  const int64_t targetRows = qlen + (alrfou ? 1 : 0);
  std::vector<float> scratchParts;
  float *lossParts = options->out_loss_parts;
  if (alrfou && !lossParts) {
    scratchParts.resize(size_t(3 * qlen * batch));
    lossParts = scratchParts.data();
  }
  txl_segment_fn entry = backward   ? session->segmentGrad
                         : logProbs ? session->segmentLogProbs
                                    : session->segment;

  // The key/value cache (runtime.h): eval-mode forward runs whose cache
  // describes the memory, in the slices the cache has.
  if (!options->training && !backward && session->kvValid &&
      kvCacheActive(*session) && kvSlicesMatch(*session, batch)) {
    runSegmentKv(*session, data, target, qlen, batch, *options, out_nll,
                 logProbs);
    return;
  }
  dropKvCache(*session);

  const int64_t dModel = info.d_model;
  const int64_t mlen = session->mlen;
  const int64_t newMlen = std::min(options->mem_len, mlen + qlen);
  const int64_t layers = info.n_layer + 1;

  if (session->onDevice) {
    if (intoGrads) {
      runSegmentOnDevice(*session, entry, data, target, qlen, newMlen, *options,
                         out_nll, intoGrads, lossParts);
      return;
    }
    // Host gradients: through temporary device arrays, read back.
    std::vector<DeviceArray> grads;
    if (outGrads)
      grads = allocateGrads(*session);
    runSegmentOnDevice(*session, entry, data, target, qlen, newMlen, *options,
                       out_nll, outGrads ? &grads : nullptr, lossParts);
    for (int32_t i = 0; outGrads && i < info.n_params; ++i)
      if (grads[i].buffer())
        grads[i].read(outGrads[i], 0, grads[i].size());
    return;
  }
  // Gradients into the session's arrays: through their host views.
  std::vector<float *> gradViews;
  if (intoGrads) {
    for (DeviceArray &grad : *intoGrads)
      gradViews.push_back(grad.map());
    outGrads = gradViews.data();
  }
  // Every layer's memory after the segment (an array of 0 floats still has
  // a valid, non-null host view).
  std::vector<DeviceArray> newMems =
      allocateMemory(*session, size_t(newMlen * batch * dModel));
  const int slices =
      static_cast<int>(std::min<int64_t>(std::max(session->threads, 1), batch));
  if (slices == 1) {
    setBlasThreads(session->threads);
    SliceCall call{data,    target, batch, {}, options->dropout_column,
                   out_nll, {},     {}};
    for (DeviceArray &m : session->mems)
      call.mems.push_back(m.map());
    for (DeviceArray &m : newMems)
      call.newMems.push_back(m.map());
    if (outGrads)
      call.grads.assign(outGrads, outGrads + info.n_params);
    call.lossParts = lossParts;
    callEntry(*session, entry, *options, qlen, newMlen, call);
  } else {
    // Batch-parallel: the columns are independent streams (each has its own
    // memory), so slice s runs columns [first_s, first_s + count_s) on its
    // own thread with single-threaded BLAS. The backward returns each
    // slice's mean-NLL gradient; the batch's is their token-weighted sum.
    setBlasThreads(1);
    const std::vector<int64_t> first = sliceBounds(*session, batch);
    if (outGrads && session->sliceGrads.size() < size_t(slices)) {
      session->sliceGrads.resize(slices);
      for (auto &perParam : session->sliceGrads) {
        perParam.resize(info.n_params);
        for (int32_t i = 0; i < info.n_params; ++i)
          if (info.params[i].trainable)
            perParam[i].resize(session->params[i].size());
      }
    }
    // The host views, taken before the threads share them.
    std::vector<const float *> oldViews;
    std::vector<float *> newViews;
    for (int64_t l = 0; l < layers; ++l) {
      oldViews.push_back(session->mems[l].map());
      newViews.push_back(newMems[l].map());
    }
    session->pool.run(slices, [&](int s) {
      const int64_t b0 = first[s], nb = first[s + 1] - first[s];
      std::vector<int64_t> sliceData(qlen * nb), sliceTarget(targetRows * nb);
      for (int64_t r = 0; r < targetRows; ++r) {
        if (r < qlen)
          std::copy_n(data + r * batch + b0, nb, sliceData.data() + r * nb);
        if (target)
          std::copy_n(target + r * batch + b0, nb, sliceTarget.data() + r * nb);
      }
      std::vector<float> sliceParts(alrfou ? 3 * qlen * nb : 0);
      std::vector<std::vector<float>> mems(layers), outMems(layers);
      std::vector<float> nll(qlen * nb * width);
      // The slice's masks count its columns from its first global column:
      // those of the one-slice call.
      SliceCall call{sliceData.data(),
                     target ? sliceTarget.data() : nullptr,
                     nb,
                     {},
                     options->dropout_column + b0,
                     nll.data(),
                     {},
                     {}};
      for (int64_t l = 0; l < layers; ++l) {
        mems[l].resize(std::max<int64_t>(mlen * nb * dModel, 1));
        if (mlen)
          gatherColumns(oldViews[l], mlen, batch, dModel, b0, nb,
                        mems[l].data());
        call.mems.push_back(mems[l].data());
        outMems[l].resize(std::max<int64_t>(newMlen * nb * dModel, 1));
        call.newMems.push_back(outMems[l].data());
      }
      if (outGrads)
        for (auto &g : session->sliceGrads[s])
          call.grads.push_back(g.data());
      call.lossParts = sliceParts.data();
      callEntry(*session, entry, *options, qlen, newMlen, call);
      for (int64_t r = 0; r < qlen; ++r)
        std::copy_n(nll.data() + r * nb * width, nb * width,
                    out_nll + (r * batch + b0) * width);
      for (int64_t r = 0; alrfou && r < 3 * qlen; ++r)
        std::copy_n(sliceParts.data() + r * nb, nb, lossParts + r * batch + b0);
      for (int64_t l = 0; l < layers; ++l)
        if (newMlen)
          scatterColumns(outMems[l].data(), newMlen, batch, dModel, b0, nb,
                         newViews[l]);
    });
    if (outGrads) {
      // Sum the slices' gradients in slice order (deterministic), each
      // element range on its own thread.
      std::vector<float> weight(slices);
      for (int s = 0; s < slices; ++s)
        weight[s] = float(first[s + 1] - first[s]) / float(batch);
      session->pool.run(slices, [&](int t) {
        for (int32_t i = 0; i < info.n_params; ++i) {
          if (!info.params[i].trainable)
            continue;
          const size_t n = session->params[i].size();
          const size_t lo = n * t / slices, hi = n * (t + 1) / slices;
          // One pass per slice over plain pointers, so each vectorizes;
          // every element still sums w0 g0 + w1 g1 + ... left to right.
          float *out = outGrads[i];
          const float *g0 = session->sliceGrads[0][i].data();
          for (size_t k = lo; k < hi; ++k)
            out[k] = weight[0] * g0[k];
          for (int s = 1; s < slices; ++s) {
            const float *g = session->sliceGrads[s][i].data();
            const float w = weight[s];
            for (size_t k = lo; k < hi; ++k)
              out[k] += w * g[k];
          }
        }
      });
    }
  }

  for (DeviceArray &m : newMems)
    m.flush();
  if (intoGrads)
    for (DeviceArray &grad : *intoGrads)
      grad.flush();
  session->mems = std::move(newMems);
  session->mlen = newMlen;
}

extern "C" txl_status_t
txl_session_run_segment(txl_session_t *session, const int64_t *data,
                        const int64_t *target, int64_t qlen, int64_t batch,
                        const txl_run_options_t *options, float *out_nll) {
  return guardStatus([&] {
    runSegment(session, data, target, qlen, batch, options, out_nll, nullptr);
  });
}

extern "C" txl_status_t txl_session_run_segment_log_probs(
    txl_session_t *session, const int64_t *data, int64_t qlen, int64_t batch,
    const txl_run_options_t *options, float *out_log_probs) {
  return guardStatus([&] {
    runSegment(session, data, nullptr, qlen, batch, options, out_log_probs,
               nullptr, nullptr, /*logProbs=*/true);
  });
}

extern "C" txl_status_t
txl_session_run_segment_grad(txl_session_t *session, const int64_t *data,
                             const int64_t *target, int64_t qlen, int64_t batch,
                             const txl_run_options_t *options, float *out_nll,
                             float *const *out_grads) {
  return guardStatus([&] {
    if (!out_grads)
      fail(TXL_INVALID_ARGUMENT, "txl_session_run_segment_grad: null "
                                 "gradient list");
    runSegment(session, data, target, qlen, batch, options, out_nll, out_grads);
  });
}

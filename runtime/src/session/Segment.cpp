//===- Segment.cpp - A segment through the generated entries --------------===//
//
// txl_session_run_segment, txl_session_run_segment_log_probs and
// txl_session_run_segment_grad: the generated entries called through their
// packed convention (args[i] points at argument i: an MLIR memref descriptor
// {allocated, aligned, offset, sizes[rank], strides[rank]} or a scalar). The
// parameters, the memory and the gradients are arrays of the session's
// device (Residency.cpp), whose buffer handles the descriptors carry (host
// addresses on the CPU). A batch runs as one call on every target
// (runWholeBatch), or, on the host with several threads, as parallel slices
// of its columns, each with its own memory (runSlices).
//
//===----------------------------------------------------------------------===//

#include "SessionState.h"

#include "txl/rt/session/MemRef.h"
#include "txl/rt/session/ModelInfo.h"
#include "txl/rt/support/Status.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string_view>
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
  for (const void *m : call.mems)
    args.memref(m, {session.mlen, call.batch, dModel});
  const bool kv = !call.rHeadK.empty();
  const int64_t hd = info.n_head * info.d_head;
  if (kv) {
    for (const auto *list : {&call.kWindows, &call.vWindows})
      for (const void *m : *list)
        args.memref(m, {session.mlen + qlen, call.batch, hd});
    for (const void *r : call.rHeadK)
      args.memref(r, {session.mlen + qlen, hd});
    args.i64(options.mem_len);
    args.i64(options.same_length ? 1 : 0);
  } else {
    addRunScalars(args, options, call.dropoutColumn);
  }
  if (alrfou) {
    args.memref(call.lossWeights, {2 * info.n_layer});
    args.memref(call.positionWeights, {qlen});
  }
  if (!call.grads.empty())
    args.f32(std::ldexp(1.0f, options.loss_scale_log2));
  if (logProbs)
    args.memref(call.nll, {qlen, call.batch, info.n_token});
  else
    args.memref(call.nll, {qlen, call.batch});
  const int64_t stateRows = kv ? qlen : newMlen;
  for (void *m : call.newMems)
    args.memref(m, {stateRows, call.batch, dModel});
  if (alrfou)
    for (void *part : call.lossParts)
      args.memref(part, {qlen, call.batch});
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

std::vector<int64_t> txl::rt::sliceBounds(const txl_session &session,
                                          int64_t batch) {
  const int slices = session.device->hostMemory()
                         ? static_cast<int>(std::min<int64_t>(
                               std::max(session.threads, 1), batch))
                         : 1;
  std::vector<int64_t> first(slices + 1);
  for (int s = 0; s <= slices; ++s)
    first[s] = batch * s / slices;
  return first;
}

namespace {
/// What a segment's call takes and gives beyond the session's arrays:
/// the caller's host arrays (runSegment's arguments).
struct SegmentIo {
  const int64_t *data, *target;
  int64_t qlen, batch, newMlen;
  /// Floats per position of `outNll`: 1, or n_token for log-probabilities.
  int64_t width;
  float *outNll;
  /// Objective "alrfou"'s backward: [3, qlen, batch]; null otherwise.
  float *lossParts;
  float *const *outGrads; ///< host gradients, or null
  /// Gradients into the session's arrays, or null.
  std::vector<DeviceArray> *intoGrads;
  /// `outNll` may arrive at the device's next synchronisation.
  bool deferOutput;
  bool backward() const { return outGrads || intoGrads; }
};
} // namespace

/// The whole batch as one call of `entry` on the session's device: the
/// session's parameters, memory and gradient arrays as they are, the
/// caller's arrays as HostArguments (themselves where the device's memory
/// is the host's, copies on a GPU); `newMems` receive the memory after the
/// segment. Host gradients (`io.outGrads`) come from zeroed device copies
/// on a GPU (whose backward may accumulate into them).
static void runWholeBatch(txl_session &session, txl_segment_fn entry,
                          const txl_run_options_t &options, const SegmentIo &io,
                          std::vector<DeviceArray> &newMems) {
  const txl_model_info_t &info = *session.info;
  Device &device = *session.device;
  const size_t tokens = size_t(io.qlen * io.batch);
  const bool alrfou = io.backward() && isAlRfouObjective(info);
  // Objective "alrfou"'s backward (runtime.h): qlen + 1 target rows, the
  // loss weights in and the loss's three parts out.
  const size_t targetTokens = tokens + (alrfou ? size_t(io.batch) : 0);
  std::vector<HostArgument> in;
  in.emplace_back(device, io.data, tokens * sizeof(int64_t), HostArgument::In);
  in.emplace_back(device, io.target, targetTokens * sizeof(int64_t),
                  HostArgument::In);
  std::vector<HostArgument> out;
  if (alrfou) {
    in.emplace_back(device, options.loss_weights,
                    size_t(2 * info.n_layer) * sizeof(float), HostArgument::In);
    in.emplace_back(device, options.position_weights,
                    size_t(io.qlen) * sizeof(float), HostArgument::In);
    for (size_t part = 0; part < 3; ++part)
      out.emplace_back(device, io.lossParts + part * tokens,
                       tokens * sizeof(float), HostArgument::Out);
  }
  out.emplace_back(device, io.outNll, tokens * size_t(io.width) * sizeof(float),
                   HostArgument::Out);
  newMems =
      allocateMemory(session, size_t(io.newMlen * io.batch * info.d_model));

  SliceCall call{in[0].buffer(),         in[1].buffer(),      io.batch, {},
                 options.dropout_column, out.back().buffer(), {},       {}};
  for (const DeviceArray &m : session.mems)
    call.mems.push_back(m.buffer());
  for (const DeviceArray &m : newMems)
    call.newMems.push_back(m.buffer());
  if (alrfou) {
    call.lossWeights = in[2].buffer();
    call.positionWeights = in[3].buffer();
    for (size_t part = 0; part < 3; ++part)
      call.lossParts.push_back(out[part].buffer());
  }
  std::vector<HostArgument> hostGrads;
  if (io.intoGrads)
    for (const DeviceArray &grad : *io.intoGrads)
      call.grads.push_back(grad.buffer());
  if (io.outGrads)
    for (int32_t i = 0; i < info.n_params; ++i) {
      const bool trainable = info.params[i].trainable;
      hostGrads.emplace_back(device, trainable ? io.outGrads[i] : nullptr,
                             size_t(parameterElements(info.params[i])) *
                                 sizeof(float),
                             HostArgument::OutZeroed);
      call.grads.push_back(hostGrads.back().buffer());
    }
  // The host's BLAS runs the call's products only on the host; elsewhere
  // its process-wide thread count stays the caller's.
  if (device.hostMemory())
    setBlasThreads(session.threads);
  callEntry(session, entry, options, io.qlen, io.newMlen, call);

  // The nll before the loss's parts, as the device path always read them.
  if (io.deferOutput)
    out.back().finishLater();
  else
    out.back().finish();
  for (size_t part = 0; part + 1 < out.size(); ++part)
    out[part].finish();
  for (HostArgument &grad : hostGrads)
    grad.finish();
  if (io.intoGrads)
    for (DeviceArray &grad : *io.intoGrads)
      grad.invalidate();
  for (DeviceArray &m : newMems)
    m.invalidate();
}

/// The batch as parallel slices on the host (the session's device is the
/// host): the columns are independent streams (each has its own memory),
/// so slice s runs columns [first_s, first_s + count_s) on its own thread
/// with single-threaded BLAS. The backward returns each slice's mean-NLL
/// gradient; the batch's is their token-weighted sum.
static void runSlices(txl_session &session, txl_segment_fn entry,
                      const txl_run_options_t &options, const SegmentIo &io,
                      std::vector<DeviceArray> &newMems) {
  const txl_model_info_t &info = *session.info;
  const int64_t qlen = io.qlen, batch = io.batch, newMlen = io.newMlen;
  const int64_t dModel = info.d_model, width = io.width;
  const int64_t mlen = session.mlen, layers = info.n_layer + 1;
  const bool alrfou = io.backward() && isAlRfouObjective(info);
  const int64_t targetRows = qlen + (alrfou ? 1 : 0);
  // Host gradients: the caller's, or the views of the session's arrays.
  float *const *outGrads = io.outGrads;
  std::vector<float *> gradViews;
  if (io.intoGrads) {
    for (DeviceArray &grad : *io.intoGrads)
      gradViews.push_back(grad.map());
    outGrads = gradViews.data();
  }
  setBlasThreads(1);
  const std::vector<int64_t> first = sliceBounds(session, batch);
  const int slices = int(first.size()) - 1;
  if (outGrads && session.sliceGrads.size() < size_t(slices)) {
    session.sliceGrads.resize(slices);
    for (auto &perParam : session.sliceGrads) {
      perParam.resize(info.n_params);
      for (int32_t i = 0; i < info.n_params; ++i)
        if (info.params[i].trainable)
          perParam[i].resize(session.params[i].size());
    }
  }
  newMems = allocateMemory(session, size_t(newMlen * batch * dModel));
  // The host views, taken before the threads share them.
  std::vector<const float *> oldViews;
  std::vector<float *> newViews;
  for (int64_t l = 0; l < layers; ++l) {
    oldViews.push_back(session.mems[l].map());
    newViews.push_back(newMems[l].map());
  }
  session.pool.run(slices, [&](int s) {
    const int64_t b0 = first[s], nb = first[s + 1] - first[s];
    std::vector<int64_t> sliceData(qlen * nb), sliceTarget(targetRows * nb);
    for (int64_t r = 0; r < targetRows; ++r) {
      if (r < qlen)
        std::copy_n(io.data + r * batch + b0, nb, sliceData.data() + r * nb);
      if (io.target)
        std::copy_n(io.target + r * batch + b0, nb,
                    sliceTarget.data() + r * nb);
    }
    std::vector<float> sliceParts(alrfou ? 3 * qlen * nb : 0);
    std::vector<std::vector<float>> mems(layers), outMems(layers);
    std::vector<float> nll(qlen * nb * width);
    // The slice's masks count its columns from its first global column:
    // those of the one-slice call.
    SliceCall call{sliceData.data(),
                   io.target ? sliceTarget.data() : nullptr,
                   nb,
                   {},
                   options.dropout_column + b0,
                   nll.data(),
                   {},
                   {}};
    for (int64_t l = 0; l < layers; ++l) {
      mems[l].resize(std::max<int64_t>(mlen * nb * dModel, 1));
      if (mlen)
        gatherColumns(oldViews[l], mlen, batch, dModel, b0, nb, mems[l].data());
      call.mems.push_back(mems[l].data());
      outMems[l].resize(std::max<int64_t>(newMlen * nb * dModel, 1));
      call.newMems.push_back(outMems[l].data());
    }
    if (outGrads)
      for (auto &g : session.sliceGrads[s])
        call.grads.push_back(g.data());
    if (alrfou) {
      call.lossWeights = options.loss_weights;
      call.positionWeights = options.position_weights;
      for (int64_t part = 0; part < 3; ++part)
        call.lossParts.push_back(sliceParts.data() + part * qlen * nb);
    }
    callEntry(session, entry, options, qlen, newMlen, call);
    for (int64_t r = 0; r < qlen; ++r)
      std::copy_n(nll.data() + r * nb * width, nb * width,
                  io.outNll + (r * batch + b0) * width);
    for (int64_t r = 0; alrfou && r < 3 * qlen; ++r)
      std::copy_n(sliceParts.data() + r * nb, nb,
                  io.lossParts + r * batch + b0);
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
    session.pool.run(slices, [&](int t) {
      for (int32_t i = 0; i < info.n_params; ++i) {
        if (!info.params[i].trainable)
          continue;
        const size_t n = session.params[i].size();
        const size_t lo = n * t / slices, hi = n * (t + 1) / slices;
        // One pass per slice over plain pointers, so each vectorizes;
        // every element still sums w0 g0 + w1 g1 + ... left to right.
        float *out = outGrads[i];
        const float *g0 = session.sliceGrads[0][i].data();
        for (size_t k = lo; k < hi; ++k)
          out[k] = weight[0] * g0[k];
        for (int s = 1; s < slices; ++s) {
          const float *g = session.sliceGrads[s][i].data();
          const float w = weight[s];
          for (size_t k = lo; k < hi; ++k)
            out[k] += w * g[k];
        }
      }
    });
  }
  for (DeviceArray &m : newMems)
    m.flush();
  if (io.intoGrads)
    for (DeviceArray &grad : *io.intoGrads)
      grad.flush();
}

void txl::rt::runSegment(txl_session_t *session, const int64_t *data,
                         const int64_t *target, int64_t qlen, int64_t batch,
                         const txl_run_options_t *options, float *out_nll,
                         float *const *outGrads,
                         std::vector<DeviceArray> *intoGrads, bool logProbs,
                         bool deferOutput) {
  requireSession(session);
  const bool backward = outGrads || intoGrads;
  validateSegment(*session, data, target, qlen, batch, options, out_nll,
                  backward, outGrads, logProbs);
  const txl_model_info_t &info = *session->info;
  // Objective "alrfou"'s backward: the loss's parts (runtime.h), into the
  // caller's array or a scratch one.
  const bool alrfou = backward && isAlRfouObjective(info);
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
                 logProbs, deferOutput);
    reportCounts(*session, "segment");
    return;
  }
  dropKvCache(*session);

  const int64_t newMlen = std::min(options->mem_len, session->mlen + qlen);
  // Per position: one NLL, or every token's log-probability.
  const SegmentIo io{data,       target,
                     qlen,       batch,
                     newMlen,    logProbs ? info.n_token : 1,
                     out_nll,    alrfou ? lossParts : nullptr,
                     outGrads,   intoGrads,
                     deferOutput};
  std::vector<DeviceArray> newMems;
  if (sliceBounds(*session, batch).size() == 2)
    runWholeBatch(*session, entry, *options, io, newMems);
  else
    runSlices(*session, entry, *options, io, newMems);
  session->mems = std::move(newMems);
  session->mlen = newMlen;
  reportCounts(*session, "segment");
}

void txl::rt::reportCounts(txl_session &session, const char *what) {
  if (!session.reportsCounts)
    return;
  txl_device_counters_t now;
  txl_device_counters(&now);
  const txl_device_counters_t &was = session.countsBefore;
  const std::string_view kind = what;
  const int64_t n = kind == "segment"       ? ++session.countedSegments
                    : kind == "synchronize" ? ++session.countedSyncs
                                            : ++session.countedSteps;
  std::fprintf(
      stderr,
      "counts: %s %lld: %llu launches, %llu library calls, %llu "
      "uploads (%llu bytes), %llu downloads (%llu bytes), %llu "
      "device copies, %llu syncs, %llu allocations, %llu frees, %llu "
      "serial launches, %llu work-items, %llu product FLOPs, %llu product "
      "bytes\n",
      what, static_cast<long long>(n),
      static_cast<unsigned long long>(now.launches - was.launches),
      static_cast<unsigned long long>(now.library_calls - was.library_calls),
      static_cast<unsigned long long>(now.uploads - was.uploads),
      static_cast<unsigned long long>(now.upload_bytes - was.upload_bytes),
      static_cast<unsigned long long>(now.downloads - was.downloads),
      static_cast<unsigned long long>(now.download_bytes - was.download_bytes),
      static_cast<unsigned long long>(now.device_copies - was.device_copies),
      static_cast<unsigned long long>(now.syncs - was.syncs),
      static_cast<unsigned long long>(now.allocations - was.allocations),
      static_cast<unsigned long long>(now.frees - was.frees),
      static_cast<unsigned long long>(now.serial_launches -
                                      was.serial_launches),
      static_cast<unsigned long long>(now.work_items - was.work_items),
      static_cast<unsigned long long>(now.product_flops - was.product_flops),
      static_cast<unsigned long long>(now.product_bytes - was.product_bytes));
  session.countsBefore = now;
}

extern "C" txl_status_t
txl_session_run_segment(txl_session_t *session, const int64_t *data,
                        const int64_t *target, int64_t qlen, int64_t batch,
                        const txl_run_options_t *options, float *out_nll) {
  return guardStatus([&] {
    runSegment(session, data, target, qlen, batch, options, out_nll, nullptr);
  });
}

extern "C" txl_status_t
txl_session_enqueue_segment(txl_session_t *session, const int64_t *data,
                            const int64_t *target, int64_t qlen, int64_t batch,
                            const txl_run_options_t *options, float *out_nll) {
  return guardStatus([&] {
    runSegment(session, data, target, qlen, batch, options, out_nll, nullptr,
               nullptr, /*logProbs=*/false, /*deferOutput=*/true);
  });
}

extern "C" txl_status_t txl_session_synchronize(txl_session_t *session) {
  return guardStatus([&] {
    requireSession(session);
    session->device->synchronize();
    reportCounts(*session, "synchronize");
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

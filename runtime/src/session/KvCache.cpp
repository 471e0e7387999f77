//===- KvCache.cpp - The key/value cache of eval runs ---------------------===//
//
// runtime.h, "The key/value cache": eval-mode segments keep each layer's
// keys and values of the memory rows (and r_head_k for the run's klen), so
// that a segment projects only its own rows (txl_segment_kv). The cache is
// held by batch slice in a RowWindows of the session's device (KvCache.h),
// r_head_k in DeviceArrays, and describes the memory
// until a run that does not go through it (training, a backward, another
// thread count), which drops it.
//
//===----------------------------------------------------------------------===//

#include "SessionState.h"

#include "txl/rt/session/MemRef.h"
#include "txl/rt/support/Status.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

using namespace txl::rt;

void txl::rt::syncMemory(txl_session &session) {
  if (!session.memsInSlices)
    return;
  const int64_t dModel = session.info->d_model, mlen = session.mlen;
  const size_t rowBytes = size_t(dModel) * sizeof(float);
  Device &device = *session.device;
  session.mems = allocateMemory(session, size_t(mlen * session.batch * dModel));
  // Each slice's rows into its columns of the batch's memory, on the device.
  for (size_t l = 0; l < session.mems.size(); ++l) {
    for (const auto &slice : session.kvSlices)
      for (int64_t r = 0; r < mlen; ++r)
        device.copyOnDevice(session.mems[l].buffer(),
                            size_t(r * session.batch + slice.first) * rowBytes,
                            slice.windows.data(),
                            slice.windows.offsetBytes(slice.mem(int64_t(l)), r),
                            size_t(slice.count) * rowBytes);
    session.mems[l].invalidate();
  }
  session.memsInSlices = false;
}

void txl::rt::dropKvCache(txl_session &session) {
  syncMemory(session);
  session.kvValid = false;
  session.kvSlices.clear();
}

void txl::rt::discardKvCache(txl_session &session) {
  session.memsInSlices = false;
  session.kvValid = false;
  session.kvSlices.clear();
}

void txl::rt::parametersChanged(txl_session &session) {
  dropKvCache(session);
  session.rHeadK.clear();
  session.rHeadKKlen = -1;
}

bool txl::rt::kvCacheActive(const txl_session &session) {
  // One implementation for every target: it runs where the executable
  // carries the cache's entries; its windows are views of the device's
  // buffers (Device::view), whose alignment kvSlicesMatch checks.
  return session.kvCacheEnabled && session.segment == &txl_segment_forward &&
         txl_segment_kv && txl_segment_log_probs_kv && txl_segment_r_head_k;
}

/// Brings the session's r_head_k up to date for `klen` and the run's
/// clamp_len (txl_segment_r_head_k), its products on `blasThreads` OpenBLAS
/// threads: 1 where the segments run as parallel slices, whose own BLAS is
/// single-threaded. (A threaded call wakes OpenBLAS's workers, which then
/// spin in sched_yield for about 2^28 cycles before they sleep: on a
/// 2-core machine that took half a core from the slices for the first
/// 0.1 s of a 1.3 s ptb_small eval.)
static void updateRHeadK(txl_session &session, int64_t klen, int64_t clampLen,
                         int blasThreads) {
  if (session.rHeadKKlen == klen && session.rHeadKClamp == clampLen)
    return;
  const txl_model_info_t &info = *session.info;
  const int64_t hd = info.n_head * info.d_head;
  session.rHeadK.clear();
  PackedArgs args;
  addParameters(args, session);
  args.i64(klen);
  args.i64(clampLen);
  for (int32_t l = 0; l < info.n_layer; ++l) {
    session.rHeadK.emplace_back(*session.device, size_t(klen * hd));
    args.memref(session.rHeadK.back().buffer(), {klen, hd});
  }
  if (session.device->hostMemory())
    setBlasThreads(blasThreads);
  txl_segment_r_head_k(args.data());
  for (DeviceArray &r : session.rHeadK)
    r.invalidate();
  session.rHeadKKlen = klen;
  session.rHeadKClamp = clampLen;
}

bool txl::rt::kvSlicesMatch(const txl_session &session, int64_t batch) {
  std::vector<int64_t> first = sliceBounds(session, batch);
  // A window starts at a whole row: a row of every state must be a
  // multiple of the device's view alignment (OpenCL's sub-buffers).
  const size_t alignment = session.device->viewAlignment();
  const txl_model_info_t &info = *session.info;
  for (size_t s = 0; s + 1 < first.size(); ++s)
    for (int64_t width : {info.d_model, info.n_head * info.d_head})
      if (size_t(first[s + 1] - first[s]) * size_t(width) * sizeof(float) %
              alignment !=
          0)
        return false;
  if (session.kvSlices.empty())
    return session.mlen == 0;
  if (first.size() != session.kvSlices.size() + 1)
    return false;
  for (size_t s = 0; s < session.kvSlices.size(); ++s)
    if (session.kvSlices[s].first != first[s] ||
        session.kvSlices[s].count != first[s + 1] - first[s])
      return false;
  return true;
}

void txl::rt::runSegmentKv(txl_session &session, const int64_t *data,
                           const int64_t *target, int64_t qlen, int64_t batch,
                           const txl_run_options_t &options, float *out,
                           bool logProbs, bool deferOutput) {
  const txl_model_info_t &info = *session.info;
  const int64_t dModel = info.d_model, hd = info.n_head * info.d_head;
  const int64_t layers = info.n_layer + 1;
  const int64_t width = logProbs ? info.n_token : 1;
  const int64_t mlen = session.mlen;
  const int64_t newMlen = std::min(options.mem_len, mlen + qlen);
  // Room for mem_len more rows after a full memory (txl_kv_cache_floats).
  const int64_t capacity = std::max(2 * options.mem_len, mlen + qlen);
  std::vector<int64_t> first = sliceBounds(session, batch);
  const int slices = int(first.size()) - 1;
  if (session.kvSlices.empty()) { // the empty memory after a reset
    session.kvSlices.reserve(size_t(slices));
    for (int s = 0; s < slices; ++s)
      session.kvSlices.emplace_back(*session.device, first[s],
                                    first[s + 1] - first[s], layers, dModel,
                                    info.n_layer, hd);
  }
  updateRHeadK(session, mlen + qlen, options.clamp_len,
               slices > 1 ? 1 : session.threads);
  txl_segment_fn entry = logProbs ? &txl_segment_log_probs_kv : &txl_segment_kv;
  auto runSlice = [&](int s) {
    auto &slice = session.kvSlices[s];
    const int64_t b0 = slice.first, nb = slice.count;
    std::vector<int64_t> sliceData, sliceTarget;
    std::vector<float> sliceOut;
    const int64_t *d = data, *t = target;
    float *o = out;
    if (slices > 1) {
      sliceData.resize(size_t(qlen * nb));
      sliceTarget.resize(target ? size_t(qlen * nb) : 0);
      for (int64_t r = 0; r < qlen; ++r) {
        std::copy_n(data + r * batch + b0, nb, sliceData.data() + r * nb);
        if (target)
          std::copy_n(target + r * batch + b0, nb, sliceTarget.data() + r * nb);
      }
      sliceOut.resize(size_t(qlen * nb * width));
      d = sliceData.data();
      t = target ? sliceTarget.data() : nullptr;
      o = sliceOut.data();
    }
    // The caller's arrays as the device takes them (themselves on the
    // host).
    Device &device = *session.device;
    const size_t tokens = size_t(qlen * nb);
    HostArgument dataArg(device, d, tokens * sizeof(int64_t), HostArgument::In);
    HostArgument targetArg(device, t, tokens * sizeof(int64_t),
                           HostArgument::In);
    HostArgument outArg(device, o, tokens * size_t(width) * sizeof(float),
                        HostArgument::Out);
    SliceCall call{dataArg.buffer(),
                   targetArg.buffer(),
                   nb,
                   {},
                   0,
                   outArg.buffer(),
                   {},
                   {}};
    // The windows as the call takes them (after reserve(), which may move
    // them), released once it is enqueued: each memory's room for the
    // segment's rows, each layer's key and value window with those rows.
    RowWindows &windows = slice.windows;
    windows.reserve(qlen, capacity);
    std::vector<BufferView> views;
    views.reserve(windows.states());
    for (int64_t l = 0; l < layers; ++l)
      call.newMems.push_back(
          views.emplace_back(windows.addedRows(slice.mem(l), qlen)).handle());
    for (int64_t l = 0; l < info.n_layer; ++l) {
      call.kWindows.push_back(
          views.emplace_back(windows.window(slice.key(l), qlen)).handle());
      call.vWindows.push_back(
          views.emplace_back(windows.window(slice.value(l), qlen)).handle());
      call.rHeadK.push_back(session.rHeadK[l].buffer());
    }
    callEntry(session, entry, options, qlen, newMlen, call);
    // A slice's output is gathered into the caller's at once.
    if (deferOutput && slices == 1)
      outArg.finishLater();
    else
      outArg.finish();
    windows.append(qlen, newMlen);
    if (slices > 1)
      for (int64_t r = 0; r < qlen; ++r)
        std::copy_n(sliceOut.data() + r * nb * width, nb * width,
                    out + (r * batch + b0) * width);
  };
  if (slices == 1) {
    if (session.device->hostMemory())
      setBlasThreads(session.threads);
    runSlice(0);
  } else {
    setBlasThreads(1);
    session.pool.run(slices, runSlice);
  }
  session.mlen = newMlen;
  session.memsInSlices = true;
}

extern "C" txl_status_t txl_session_set_kv_cache(txl_session_t *session,
                                                 int32_t enabled) {
  return guardStatus([&] {
    requireSession(session);
    session->kvCacheEnabled = enabled != 0;
    if (!enabled)
      parametersChanged(*session);
  });
}

extern "C" int32_t txl_session_kv_cache_active(const txl_session_t *session) {
  return session && kvCacheActive(*session) ? 1 : 0;
}

extern "C" int32_t txl_session_kv_cache_ready(const txl_session_t *session) {
  return session && kvCacheActive(*session) && session->kvValid &&
                 kvSlicesMatch(*session, session->batch)
             ? 1
             : 0;
}

extern "C" txl_status_t txl_kv_cache_floats(const txl_model_info_t *info,
                                            int64_t mem_len, int64_t batch,
                                            int64_t *out_floats) {
  return guardStatus([&] {
    if (!info || !out_floats)
      fail(TXL_INVALID_ARGUMENT, "txl_kv_cache_floats: null argument");
    if (mem_len < 0 || batch < 0)
      fail(TXL_INVALID_ARGUMENT,
           "txl_kv_cache_floats: mem_len {} and batch {} must not be negative",
           mem_len, batch);
    // RowWindows regions of 2·mem_len rows (runSegmentKv's capacity).
    int64_t floats = 1;
    for (int64_t factor : {int64_t(4), int64_t(info->n_layer), mem_len, batch,
                           int64_t(info->n_head), int64_t(info->d_head)})
      if (__builtin_mul_overflow(floats, factor, &floats))
        fail(TXL_INVALID_ARGUMENT,
             "txl_kv_cache_floats: the cache of mem_len {} and batch {} holds "
             "more than {} floats",
             mem_len, batch, INT64_MAX);
    *out_floats = floats;
  });
}

//===----------------------------------------------------------------------===//

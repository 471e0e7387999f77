//===- Session.cpp - A model's session: parameters and memory -------------===//
//
// txl_session_create and the parameters and memory of a session
// (runtime.h): the checkpoint or initialisation the parameters come from,
// the memory of every layer and its slots (train.py's one `mems` per batch
// chunk), all in buffers of the session's device: the host device on the
// CPU; for the GPU targets (txl_model_info.backend) the device the session
// opens when it is created. SessionState.h lists the other
// files of the session.
//
//===----------------------------------------------------------------------===//

#include "SessionState.h"

#include "txl/rt/collectives/DataParallel.h"
#include "txl/rt/data/ModelParameters.h"
#include "txl/rt/device/CountingDevice.h"
#include "txl/rt/session/ModelInfo.h"
#include "txl/rt/session/ParamInit.h"
#include "txl/rt/support/Status.h"
#include "txl/rt/support/Tensor.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

using namespace txl::rt;

/// The device a session opens (runtime.h: txl_session_create). Errors:
/// $TXL_DEVICE not a device number.
static int deviceOrdinal(int32_t backend) {
  if (const char *chosen = std::getenv("TXL_DEVICE"); chosen && *chosen) {
    char *end = nullptr;
    long ordinal = std::strtol(chosen, &end, 10);
    if (*end != '\0' || ordinal < 0 || ordinal > 1024)
      fail(TXL_INVALID_ARGUMENT, "TXL_DEVICE='{}' is not a device number",
           chosen);
    return int(ordinal);
  }
  return backend == TXL_BACKEND_CUDA ? launcherLocalRank() : 0;
}

extern "C" txl_status_t txl_session_create(const txl_model_info_t *info,
                                           txl_segment_fn segment_fn,
                                           txl_session_t **out_session) {
  return guardStatus([&] {
    if (!info || !out_session)
      fail(TXL_INVALID_ARGUMENT, "txl_session_create: null argument");
    if (info->abi_version != TXL_ABI_VERSION)
      fail(TXL_INVALID_ARGUMENT,
           "model was compiled for runtime ABI {}, this runtime is ABI {}",
           info->abi_version, TXL_ABI_VERSION);
    // What compiled code writes is consistent; a table filled by hand may
    // not be (issue 48, item 12).
    if (info->n_params < 0 || (info->n_params > 0 && !info->params) ||
        info->n_layer < 1 || info->d_model < 1 || info->n_head < 1 ||
        info->d_head < 1)
      fail(TXL_INVALID_ARGUMENT,
           "txl_session_create: the model table has n_params {}, n_layer {}, "
           "d_model {}, n_head {}, d_head {} (n_params must not be negative "
           "and come with a table, the sizes must be positive)",
           info->n_params, info->n_layer, info->d_model, info->n_head,
           info->d_head);
    if (!txl_backend_name(info->backend) ||
        !txl_precision_name(info->precision))
      fail(TXL_INVALID_ARGUMENT,
           "txl_session_create: the model table has backend {} and precision "
           "{} (a txl_backend_t and a txl_precision_t)",
           int(info->backend), int(info->precision));
    auto session = std::make_unique<txl_session>();
    session->info = info;
    session->segment = segment_fn ? segment_fn : &txl_segment_forward;
    // Weak: null in executables compiled without the backward segment, and
    // unused when the caller brings its own forward function.
    session->segmentGrad = segment_fn ? nullptr : &txl_segment_grad;
    session->segmentLogProbs = segment_fn ? nullptr : &txl_segment_log_probs;
    session->mems.resize(info->n_layer + 1);
    session->threads = openblas_get_num_threads();
    if (info->backend != TXL_BACKEND_CPU) {
      char error[512] = {};
      int status = txl_device_open(info->backend, deviceOrdinal(info->backend),
                                   error, sizeof(error));
      if (status != TXL_OK)
        throw Error(static_cast<txl_status_code_t>(status), error);
      session->closesDevice = true;
      session->device = &openedDevice();
      std::fprintf(stderr, "device: %s\n", txl_device_description());
      session->reportsCounts = profileCounts();
      txl_device_counters(&session->countsBefore);
    } else {
      session->hostDevice = openHostDevice();
      session->device = session->hostDevice.get();
    }
    *out_session = session.release();
  });
}

extern "C" void txl_session_release(txl_session_t *session) { delete session; }

extern "C" txl_status_t txl_session_set_threads(txl_session_t *session,
                                                int32_t threads) {
  return guardStatus([&] {
    requireSession(session);
    if (threads < 0)
      fail(TXL_INVALID_ARGUMENT, "threads must not be negative, got {}",
           threads);
    session->threads = threads > 0 ? threads : openblas_get_num_threads();
  });
}

extern "C" int32_t txl_session_threads(txl_session_t *session) {
  return session ? session->threads : 0;
}

extern "C" int32_t txl_session_batch_slices(const txl_session_t *session,
                                            int64_t batch) {
  if (!session || batch < 1)
    return 0;
  return int32_t(sliceBounds(*session, batch).size() - 1);
}

extern "C" txl_status_t txl_session_load_checkpoint(txl_session_t *session,
                                                    const char *path) {
  return guardStatus([&] {
    requireSession(session);
    if (!path)
      fail(TXL_INVALID_ARGUMENT, "null checkpoint path");
    ModelParameters loaded =
        readModelParameters(path, *session->info, session->allowExtraTensors);
    setParameters(*session, loaded.values);
    session->loaded = true;
    session->missingTrainingOnly = std::move(loaded.missingTrainingOnly);
    parametersChanged(*session);
  });
}

extern "C" txl_status_t txl_session_allow_extra_tensors(txl_session_t *session,
                                                        int32_t allow) {
  return guardStatus([&] {
    requireSession(session);
    session->allowExtraTensors = allow != 0;
  });
}

extern "C" txl_status_t txl_session_init_parameters(txl_session_t *session,
                                                    uint64_t seed) {
  return guardStatus([&] {
    requireSession(session);
    const txl_model_info_t &info = *session->info;
    std::vector<std::vector<float>> params(info.n_params);
    for (int32_t i = 0; i < info.n_params; ++i) {
      params[i].resize(size_t(parameterElements(info.params[i])));
      initParameter(info, i, seed, params[i].data());
    }
    setParameters(*session, params);
    session->loaded = true;
    session->missingTrainingOnly.clear();
    parametersChanged(*session);
  });
}

extern "C" txl_status_t txl_session_parameter(txl_session_t *session,
                                              int32_t index, float **out_data) {
  return guardStatus([&] {
    requireSession(session);
    if (!out_data)
      fail(TXL_INVALID_ARGUMENT, "txl_session_parameter: null argument");
    if (!session->loaded)
      fail(TXL_INVALID_ARGUMENT, "no checkpoint loaded");
    if (index < 0 || index >= session->info->n_params)
      fail(TXL_INVALID_ARGUMENT, "parameter index {} out of range [0, {})",
           index, session->info->n_params);
    // The caller may write through the pointer.
    parametersChanged(*session);
    *out_data = session->params[index].map();
  });
}

extern "C" txl_status_t txl_session_set_memory(txl_session_t *session,
                                               int64_t mlen, int64_t batch,
                                               const float *const *layers) {
  return guardStatus([&] {
    requireSession(session);
    if (batch <= 0 || mlen < 0)
      fail(TXL_INVALID_ARGUMENT,
           "memory of {} rows and batch size {}: need rows >= 0, batch > 0",
           mlen, batch);
    const txl_model_info_t &info = *session->info;
    int64_t elements = 0;
    if (!checkedNumElements({mlen, batch, info.d_model}, sizeof(float),
                            elements))
      fail(TXL_INVALID_ARGUMENT,
           "memory of {} rows and batch size {}: [{}, {}, {}] floats do not "
           "fit in memory",
           mlen, batch, mlen, batch, info.d_model);
    size_t count = static_cast<size_t>(elements);
    for (int64_t l = 0; l <= info.n_layer; ++l)
      if (count && (!layers || !layers[l]))
        fail(TXL_INVALID_ARGUMENT, "no memory given for layer {}", l);
    std::vector<DeviceArray> mems = allocateMemory(*session, count);
    for (int64_t l = 0; l <= info.n_layer; ++l)
      mems[l].write(layers ? layers[l] : nullptr, 0, count);
    discardKvCache(*session);
    session->mems = std::move(mems);
    session->mlen = mlen;
    session->batch = batch;
  });
}

extern "C" txl_status_t txl_session_reset_memory(txl_session_t *session,
                                                 int64_t batch) {
  return guardStatus([&] {
    requireSession(session);
    if (batch <= 0)
      fail(TXL_INVALID_ARGUMENT, "batch size must be positive, got {}", batch);
    discardKvCache(*session);
    session->mems = allocateMemory(*session, 0);
    session->mlen = 0;
    session->batch = batch;
    // An empty memory has an empty cache.
    session->kvValid = true;
  });
}

extern "C" txl_status_t txl_session_select_memory(txl_session_t *session,
                                                  int64_t slot) {
  return guardStatus([&] {
    requireSession(session);
    if (slot < 0 || slot >= TXL_MAX_MEMORY_SLOTS)
      fail(TXL_INVALID_ARGUMENT, "memory slot {} out of range [0, {})", slot,
           TXL_MAX_MEMORY_SLOTS);
    txl_session &s = *session;
    if (slot == s.memorySlot)
      return;
    dropKvCache(s);
    if (s.parkedMemory.size() <= size_t(std::max(slot, s.memorySlot)))
      s.parkedMemory.resize(size_t(std::max(slot, s.memorySlot)) + 1);
    auto &from = s.parkedMemory[size_t(s.memorySlot)];
    from.mems = std::move(s.mems);
    from.mlen = s.mlen;
    from.batch = s.batch;
    auto &to = s.parkedMemory[size_t(slot)];
    s.mems = std::move(to.mems);
    // A slot never used holds no memory and no batch size: runs refuse it
    // until txl_session_reset_memory or txl_session_set_memory.
    s.mems.resize(size_t(s.info->n_layer + 1));
    s.mlen = to.mlen;
    s.batch = to.batch;
    to = {};
    s.memorySlot = slot;
  });
}

extern "C" txl_status_t txl_session_memory(txl_session_t *session,
                                           int64_t layer,
                                           const float **out_data,
                                           int64_t *out_mlen) {
  return guardStatus([&] {
    requireSession(session);
    if (!out_data || !out_mlen)
      fail(TXL_INVALID_ARGUMENT, "txl_session_memory: null argument");
    if (layer < 0 || layer > session->info->n_layer)
      fail(TXL_INVALID_ARGUMENT, "memory layer {} out of range [0, {}]", layer,
           session->info->n_layer);
    syncMemory(*session);
    *out_data = session->mems[layer].map();
    *out_mlen = session->mlen;
  });
}

//===- Session.cpp - Run generated segments on the CPU or a device -------===//
//
// A session owns the parameters (float32, in the generated function's
// argument order), the memory of every layer, and calls the generated
// `txl_segment_forward` (and `txl_segment_grad`) through its packed convention:
// args[i] points at argument i — an MLIR memref descriptor {allocated, aligned,
// offset, sizes[rank], strides[rank]} or an int64 scalar. For the GPU targets
// (txl_model_info.device_backend) the session opens the device when it is
// created, keeps the parameters and the memory there, and passes device
// buffer handles in the same descriptors.
//
//===----------------------------------------------------------------------===//

#include "txl/runtime.h"

#include "txl/device.h"
#include "txl/rt/collectives/DataParallel.h"
#include "txl/rt/data/SafeTensors.h"
#include "txl/rt/session/MemRef.h"
#include "txl/rt/session/ModelInfo.h"
#include "txl/rt/session/ParamInit.h"
#include "txl/rt/support/Status.h"
#include "txl/rt/support/WorkerPool.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <sys/mman.h>

using namespace txl::rt;

// OpenBLAS's thread control (see Commands.cpp for why not cblas.h).
extern "C" void openblas_set_num_threads(int numThreads);
extern "C" int openblas_get_num_threads(void);

/// The parts of the clipping norm's sum of squares on the GPU targets, one
/// work-item each (buildTrainingFunctions with forDevice): enough
/// work-items to stream the gradients at full bandwidth, few enough that
/// @optimizer_step adds their sums quickly in one work-item.
static constexpr int64_t kDeviceNormParts = 16384;

/// The size of the GPU form's partials: kDeviceNormParts per group of
/// TXL_NORM_TENSORS_PER_KERNEL of the `trainable` gradients (txl/device.h).
static int64_t normPartials(size_t trainable) {
  return kDeviceNormParts *
         int64_t((trainable + TXL_NORM_TENSORS_PER_KERNEL - 1) /
                 TXL_NORM_TENSORS_PER_KERNEL);
}

namespace {
/// One state of the key/value cache's slices (a layer's memory, keys or
/// values) [rows, count, width]: `rows` consecutive rows of a buffer with
/// room after them. txl_segment_kv writes a segment's rows straight into
/// that room, and the window then slides over them to keep the last mem_len
/// rows. The window moves back to the buffer's front only when the room
/// runs out: with a buffer of 2·mem_len rows, once every mem_len / qlen
/// segments, where the official recurrence's cat(mem, hids)[-mem_len:]
/// copies the memory every segment.
class RowWindow {
public:
  explicit RowWindow(int64_t rowFloats = 0) : rowFloats(rowFloats) {}

  int64_t rows() const { return windowRows; }

  /// The window's first row: [rows(), count, width] (a valid pointer when
  /// empty, as the generated code takes none other).
  const float *data() const {
    return buffer ? buffer.get() + first * rowFloats : &kEmpty;
  }
  /// data() of a window with room reserved: the entry writes after it.
  float *data() { return buffer ? buffer.get() + first * rowFloats : nullptr; }

  /// Where `added` new rows go, right after the window, in a buffer of at
  /// least `capacity` rows (capacity >= rows() + added); the window moves to
  /// the buffer's front when the rows after it do not fit. The buffer is
  /// not cleared (every row is written before the window holds it) and
  /// asks for transparent huge pages: at the enwik8 paper setting the
  /// cache is 787.5 MiB, and zeroing it in 4 KiB page faults took about a
  /// tenth of a 30-segment eval (Intel Xeon, session 50).
  float *reserve(int64_t added, int64_t capacity) {
    capacity = std::max(capacity, windowRows + added);
    if (size < capacity * rowFloats) {
      Buffer grown = allocate(capacity * rowFloats);
      if (windowRows)
        std::copy_n(data(), windowRows * rowFloats, grown.get());
      buffer = std::move(grown);
      size = capacity * rowFloats;
      first = 0;
    }
    if ((first + windowRows + added) * rowFloats > size) {
      std::copy_n(buffer.get() + first * rowFloats, windowRows * rowFloats,
                  buffer.get());
      first = 0;
    }
    return buffer.get() + (first + windowRows) * rowFloats;
  }

  /// Takes the `added` rows written at reserve()'s pointer into the window
  /// and keeps its last `keep` rows (keep <= rows() + added).
  void append(int64_t added, int64_t keep) {
    first += windowRows + added - keep;
    windowRows = keep;
  }

private:
  struct Free {
    void operator()(float *p) const { std::free(p); }
  };
  using Buffer = std::unique_ptr<float[], Free>;
  /// `floats` uninitialised floats, 2 MiB aligned, advised as huge pages.
  static Buffer allocate(int64_t floats) {
    constexpr size_t kHugePage = size_t(2) << 20;
    size_t bytes = (size_t(floats) * sizeof(float) + kHugePage - 1) /
                   kHugePage * kHugePage;
    auto *p = static_cast<float *>(std::aligned_alloc(kHugePage, bytes));
    if (!p)
      throw std::bad_alloc();
    madvise(p, bytes, MADV_HUGEPAGE);
    return Buffer(p);
  }

  static inline const float kEmpty = 0.0f;
  Buffer buffer;
  int64_t rowFloats, size = 0, first = 0, windowRows = 0;
};
} // namespace

struct txl_session {
  const txl_model_info_t *info = nullptr;
  txl_segment_fn segment = nullptr;
  txl_segment_fn segmentGrad = nullptr; ///< null: no backward entry linked
  /// null: the model has no distribution entry (txl_segment_log_probs).
  txl_segment_fn segmentLogProbs = nullptr;
  std::vector<std::vector<float>> params; ///< by txl_param_info_t order
  bool loaded = false;
  /// The first training-only tensor (objective "alrfou"'s auxiliary heads)
  /// the loaded checkpoint left out, now zeros; empty when none. A backward
  /// run then refuses to start.
  std::string missingTrainingOnly;
  /// mems[l]: [mlen, batch, d_model] row-major, l = 0..n_layer.
  std::vector<std::vector<float>> mems;
  int64_t mlen = 0, batch = 0;
  /// txl_session_set_threads: slices run in parallel (and BLAS threads when
  /// the batch runs as one slice); the OpenBLAS default until set.
  int threads = 0;
  WorkerPool pool;
  /// sliceGrads[s][i]: slice s's gradient of parameter i (batch-parallel
  /// backward only).
  std::vector<std::vector<std::vector<float>>> sliceGrads;

  /// GPU targets (info->device_backend set): the parameters and the memory
  /// live on the device for the whole run (`params` and `mems` above are
  /// host copies: the parameters as loaded, the memory as last read back).
  bool onDevice = false;
  std::vector<void *> deviceParams;
  std::vector<void *> deviceMems; ///< [mlen, batch, d_model] per layer
  bool memsOnHostCurrent = true;

  /// The memories not in use (txl_session_select_memory: train.py's one
  /// `mems` per batch chunk), by slot; the fields above are slot
  /// `memorySlot`'s. On the GPU targets a parked memory stays on the device.
  struct ParkedMemory {
    std::vector<std::vector<float>> mems;
    int64_t mlen = 0, batch = 0;
    std::vector<void *> deviceMems;
    bool memsOnHostCurrent = true;
  };
  std::vector<ParkedMemory> parkedMemory;
  int64_t memorySlot = 0;

  /// The key/value cache (txl_session_run_segment), by batch slice: the
  /// columns [first, first + count) that one call of txl_segment_kv runs
  /// (as the batch-parallel slices of runSegment). Each slice keeps its
  /// memory and its layers' keys and values of the memory rows, each in a
  /// RowWindow, so that a run moves nothing between the batch and the
  /// slices, and txl_segment_kv writes a segment's rows straight after them.
  struct KvSlice {
    int64_t first = 0, count = 0;
    std::vector<RowWindow> mems, k, v; ///< [mlen, count, *] each
  };
  bool kvCacheEnabled = true;
  /// The slices describe the memory: every run since the last reset went
  /// through the cache (with no slice yet, the memory is empty).
  bool kvValid = false;
  std::vector<KvSlice> kvSlices;
  /// The slices hold the memory, and `mems` above is stale (syncMemory).
  bool memsInSlices = false;
  /// rHeadK[l] [rHeadKKlen, n_head·d_head]: layer l's r_head_k for
  /// (rHeadKKlen, rHeadKClamp); stale when rHeadKKlen < 0.
  std::vector<std::vector<float>> rHeadK;
  int64_t rHeadKKlen = -1, rHeadKClamp = 0;

  /// Training (txl_session_train_segment, txl_session_optimizer_step),
  /// allocated on first use: the update's gradient per parameter (empty for
  /// buffers), one chunk's gradient (batch_chunk > 1), and the optimizer
  /// states, states[s * T + t] for trainable parameter trainable[t]. On the
  /// GPU targets they live in the device buffers below, and the host arrays
  /// hold the last copy read back.
  std::vector<int32_t> trainable;
  std::vector<std::vector<float>> grads, chunkGrads, states;
  std::vector<void *> deviceGrads, deviceStates;
  /// batch_chunk > 1 on the GPU targets: the gradient of the chunk being
  /// run, per parameter, before @accumulate_grads adds it into deviceGrads.
  std::vector<void *> deviceChunkGrads;
  void *devicePartials = nullptr; ///< normPartials(T) floats
  void *deviceScalar = nullptr;   ///< 8 bytes: the norm, the lr
  bool paramsOnHostCurrent = true, statesOnHostCurrent = true;
  /// txl_session_allow_extra_tensors.
  bool allowExtraTensors = false;

  ~txl_session() {
    if (onDevice)
      txl_device_close();
  }
};

/// Brings `mems` up to date from the key/value cache's slices (which keep
/// the memory too, and stay valid).
static void syncMemory(txl_session &session) {
  if (!session.memsInSlices)
    return;
  const int64_t dModel = session.info->d_model, mlen = session.mlen;
  for (size_t l = 0; l < session.mems.size(); ++l) {
    session.mems[l].resize(size_t(mlen * session.batch * dModel));
    for (const auto &slice : session.kvSlices)
      for (int64_t r = 0; r < mlen; ++r)
        std::copy_n(slice.mems[l].data() + r * slice.count * dModel,
                    slice.count * dModel,
                    session.mems[l].data() +
                        (r * session.batch + slice.first) * dModel);
  }
  session.memsInSlices = false;
}

/// Drops the key/value cache, keeping the memory: runs use @segment until
/// the next reset.
static void dropKvCache(txl_session &session) {
  syncMemory(session);
  session.kvValid = false;
  session.kvSlices.clear();
}

/// Drops the key/value cache and the memory it holds (the memory is being
/// replaced).
static void discardKvCache(txl_session &session) {
  session.memsInSlices = false;
  session.kvValid = false;
  session.kvSlices.clear();
}

/// Drops everything computed from the parameters (they may have changed).
static void parametersChanged(txl_session &session) {
  dropKvCache(session);
  session.rHeadK.clear();
  session.rHeadKKlen = -1;
}

static int64_t elementCount(const txl_param_info_t &p) {
  int64_t count = 1;
  for (int32_t d = 0; d < p.rank; ++d)
    count *= p.shape[d];
  return count;
}

/// Device buffers through the ABI the compiled code uses (txl/device.h).
static void *deviceCopy(const void *host, size_t bytes) {
  void *buffer = mgpuMemAlloc(bytes, nullptr, false);
  txl_device_write(buffer, 0, host, bytes);
  return buffer;
}

static void freeDevice(std::vector<void *> &buffers) {
  for (void *b : buffers)
    if (b)
      mgpuMemFree(b, nullptr);
  buffers.clear();
}

/// Replaces `device` by copies of the host arrays `host`.
static void upload(const std::vector<std::vector<float>> &host,
                   std::vector<void *> &device) {
  freeDevice(device);
  for (const auto &array : host)
    device.push_back(deviceCopy(array.data(), array.size() * sizeof(float)));
}

/// Uploads the session's parameters (after a load or an initialization).
static void uploadParameters(txl_session &session) {
  if (session.onDevice)
    upload(session.params, session.deviceParams);
  session.paramsOnHostCurrent = true;
}

/// Brings the host copies of the parameters up to date after device
/// updates.
static void readBackParameters(txl_session &session) {
  if (session.paramsOnHostCurrent)
    return;
  for (size_t i = 0; i < session.params.size(); ++i)
    txl_device_read(session.params[i].data(), session.deviceParams[i], 0,
                    session.params[i].size() * sizeof(float));
  session.paramsOnHostCurrent = true;
}

/// Uploads the host memory (txl_session_set_memory, reset).
static void uploadMemory(txl_session &session) {
  if (!session.onDevice)
    return;
  upload(session.mems, session.deviceMems);
  session.memsOnHostCurrent = true;
}

static void requireSession(txl_session_t *session) {
  if (!session)
    fail(TXL_INVALID_ARGUMENT, "null session");
}

/// The device a session opens (runtime.h: txl_session_create). Errors:
/// $TXL_DEVICE not a device number.
static int deviceOrdinal(const char *backend) {
  if (const char *chosen = std::getenv("TXL_DEVICE"); chosen && *chosen) {
    char *end = nullptr;
    long ordinal = std::strtol(chosen, &end, 10);
    if (*end != '\0' || ordinal < 0 || ordinal > 1024)
      fail(TXL_INVALID_ARGUMENT, "TXL_DEVICE='{}' is not a device number",
           chosen);
    return int(ordinal);
  }
  return std::string_view(backend) == "cuda" ? launcherLocalRank() : 0;
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
    auto session = std::make_unique<txl_session>();
    session->info = info;
    session->segment = segment_fn ? segment_fn : &txl_segment_forward;
    // Weak: null in executables compiled without the backward segment, and
    // unused when the caller brings its own forward function.
    session->segmentGrad = segment_fn ? nullptr : &txl_segment_grad;
    session->segmentLogProbs = segment_fn ? nullptr : &txl_segment_log_probs;
    session->mems.resize(info->n_layer + 1);
    session->threads = openblas_get_num_threads();
    if (info->device_backend && *info->device_backend) {
      char error[512] = {};
      int status = txl_device_open(info->device_backend,
                                   deviceOrdinal(info->device_backend), error,
                                   sizeof(error));
      if (status != TXL_OK)
        throw Error(static_cast<txl_status_code_t>(status), error);
      session->onDevice = true;
      std::fprintf(stderr, "device: %s\n", txl_device_description());
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

extern "C" txl_status_t txl_session_load_checkpoint(txl_session_t *session,
                                                    const char *path) {
  return guardStatus([&] {
    requireSession(session);
    if (!path)
      fail(TXL_INVALID_ARGUMENT, "null checkpoint path");
    SafeTensorsFile file = SafeTensorsFile::open(path);
    const txl_model_info_t &info = *session->info;
    std::vector<std::vector<float>> params(info.n_params);
    std::string missingTrainingOnly;
    for (int32_t i = 0; i < info.n_params; ++i) {
      const txl_param_info_t &p = info.params[i];
      Shape shape(p.shape, p.shape + p.rank);
      // A tied parameter may be stored under either of its names.
      std::string_view name = p.name;
      for (const char *const *alias = p.aliases; !file.find(name) && *alias;
           ++alias)
        if (file.find(*alias))
          name = *alias;
      int64_t count = 1;
      for (int64_t d : shape)
        count *= d;
      params[i].resize(count);
      // Evaluation never reads a training-only tensor: a checkpoint for
      // inference may drop it (zeros stand in).
      if (p.training_only && !file.find(name)) {
        if (missingTrainingOnly.empty())
          missingTrainingOnly = p.name;
        continue;
      }
      file.readF32(name, shape, params[i].data());
      // A NaN or infinity would not stop a run: ReLU maps NaN to 0, and a
      // loss can stay finite while the model is wrong.
      for (int64_t k = 0; k < count; ++k)
        if (!std::isfinite(params[i][k]))
          fail(TXL_DATA_ERROR,
               "{}: tensor '{}': element {} is {} (every parameter must be "
               "finite)",
               path, name, k, params[i][k]);
      // Tied copies stored under several names must agree (the official
      // state_dict holds each alias; a file edited by hand may not).
      std::vector<float> copy;
      for (const char *const *alias = p.aliases; *alias; ++alias) {
        std::string_view other = *alias == name ? p.name : *alias;
        if (other == name || !file.find(other))
          continue;
        copy.resize(count);
        file.readF32(other, shape, copy.data());
        if (std::memcmp(copy.data(), params[i].data(), sizeof(float) * count) !=
            0)
          fail(TXL_DATA_ERROR,
               "{}: tensors '{}' and '{}' are one tied parameter of this "
               "model but hold different values",
               path, name, other);
      }
    }
    // Tensors none of the model's parameters claim: another model's
    // (issue 48, item 14: layers.3.* of a 4-layer file loaded silently into
    // a 3-layer model). The runtime's training state (train.*, optim.*) is
    // its own.
    if (!session->allowExtraTensors) {
      std::set<std::string_view> known;
      for (int32_t i = 0; i < info.n_params; ++i) {
        known.insert(info.params[i].name);
        for (const char *const *alias = info.params[i].aliases; *alias; ++alias)
          known.insert(*alias);
      }
      std::vector<std::string_view> extra;
      for (const SafeTensorInfo &tensor : file.tensors()) {
        std::string_view name = tensor.name;
        if (!known.count(name) && name.substr(0, 6) != "train." &&
            name.substr(0, 6) != "optim.")
          extra.push_back(name);
      }
      if (!extra.empty())
        fail(TXL_DATA_ERROR,
             "{}: tensor '{}' is not a parameter of this model ({} such "
             "tensor{}; another model's checkpoint?); --allow-extra-tensors "
             "loads the model's and passes over the others",
             path, extra.front(), extra.size(), extra.size() == 1 ? "" : "s");
    }
    session->params = std::move(params);
    session->loaded = true;
    session->missingTrainingOnly = std::move(missingTrainingOnly);
    parametersChanged(*session);
    uploadParameters(*session);
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
      int64_t count = 1;
      for (int32_t d = 0; d < info.params[i].rank; ++d)
        count *= info.params[i].shape[d];
      params[i].resize(count);
      initParameter(info, i, seed, params[i].data());
    }
    session->params = std::move(params);
    session->loaded = true;
    session->missingTrainingOnly.clear();
    parametersChanged(*session);
    uploadParameters(*session);
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
    readBackParameters(*session);
    // The caller may write through the pointer.
    parametersChanged(*session);
    *out_data = session->params[index].data();
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
    std::vector<std::vector<float>> mems(info.n_layer + 1);
    for (int64_t l = 0; l <= info.n_layer; ++l) {
      if (count && (!layers || !layers[l]))
        fail(TXL_INVALID_ARGUMENT, "no memory given for layer {}", l);
      if (count)
        mems[l].assign(layers[l], layers[l] + count);
    }
    discardKvCache(*session);
    session->mems = std::move(mems);
    session->mlen = mlen;
    session->batch = batch;
    uploadMemory(*session);
  });
}

/// Bytes as MiB with one decimal, for the device-memory lines.
static std::string mebibytes(size_t bytes) {
  return fmt::format("{:.1f} MiB", bytes / double(1 << 20));
}

extern "C" txl_status_t
txl_session_report_device_memory(txl_session_t *session) {
  return guardStatus([&] {
    requireSession(session);
    if (!session->onDevice)
      return;
    size_t peak = 0;
    txl_device_memory(nullptr, nullptr, nullptr, &peak);
    std::fprintf(stderr,
                 "device memory: peak %s (%zu bytes) in use (parameters, "
                 "memory state and segment workspace)\n",
                 mebibytes(peak).c_str(), peak);
  });
}

extern "C" txl_status_t txl_session_reset_memory(txl_session_t *session,
                                                 int64_t batch) {
  return guardStatus([&] {
    requireSession(session);
    if (batch <= 0)
      fail(TXL_INVALID_ARGUMENT, "batch size must be positive, got {}", batch);
    discardKvCache(*session);
    for (auto &m : session->mems)
      m.clear();
    session->mlen = 0;
    session->batch = batch;
    // An empty memory has an empty cache.
    session->kvValid = true;
    uploadMemory(*session);
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
    from.deviceMems = std::move(s.deviceMems);
    from.memsOnHostCurrent = s.memsOnHostCurrent;
    auto &to = s.parkedMemory[size_t(slot)];
    s.mems = std::move(to.mems);
    // A slot never used holds no memory and no batch size: runs refuse it
    // until txl_session_reset_memory or txl_session_set_memory.
    s.mems.resize(size_t(s.info->n_layer + 1));
    s.mlen = to.mlen;
    s.batch = to.batch;
    s.deviceMems = std::move(to.deviceMems);
    s.memsOnHostCurrent = to.memsOnHostCurrent;
    to = {};
    s.memorySlot = slot;
  });
}

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

/// One call of a generated entry on `batch` columns, every array contiguous.
struct SliceCall {
  const int64_t *data, *target;
  int64_t batch;
  std::vector<const float *> mems; ///< [mlen, batch, d_model] per layer
  /// The global batch column of column 0 (txl_run_options_t's
  /// dropout_column plus the slice's first column).
  int64_t dropoutColumn;
  float *nll;                   ///< [qlen, batch] ([qlen, batch, n_token]
                                ///< of log-probabilities when target is null)
  std::vector<float *> newMems; ///< [newMlen, batch, d_model]
  std::vector<float *> grads;   ///< per parameter; empty: forward
  /// Objective "alrfou"'s backward: [3, qlen, batch], the loss's parts.
  float *lossParts = nullptr;
  /// Key/value-cache entries (txl_segment_kv): per layer, windows [klen,
  /// batch, n_head·d_head] of the memory rows' keys and values followed by
  /// room for the segment's, which the entry writes there, and r_head_k
  /// [klen, n_head·d_head] (there, `mems` is empty and `newMems` receive
  /// [qlen, batch, d_model]: the rows to append). Empty for the other
  /// entries (default-initialized, so that the other entries' calls can
  /// leave them out).
  std::vector<float *> kWindows{}, vWindows{};
  std::vector<const float *> rHeadK{};
};

static void callEntry(const txl_session &session, txl_segment_fn entry,
                      const txl_run_options_t &options, int64_t qlen,
                      int64_t newMlen, const SliceCall &call) {
  const txl_model_info_t &info = *session.info;
  const int64_t dModel = info.d_model;
  // Objective "alrfou"'s backward segment (runtime.h).
  const bool alrfou = !call.grads.empty() && isAlRfouObjective(info);
  PackedArgs args;
  for (int32_t i = 0; i < info.n_params; ++i) {
    const txl_param_info_t &p = info.params[i];
    args.memref(session.params[i].data(),
                std::vector<int64_t>(p.shape, p.shape + p.rank));
  }
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
    for (int64_t scalar :
         {options.mem_len, options.clamp_len,
          int64_t(options.same_length ? 1 : 0), options.dropout_seed,
          options.dropout_offset, call.dropoutColumn,
          int64_t(options.training ? 1 : 0)})
      args.i64(scalar);
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

/// Sets OpenBLAS's (process-wide) thread count for a call: the session's
/// threads when the batch runs as one slice, 1 when slices run in parallel.
/// Called only between a session's calls, never while its products run;
/// sessions on other threads share the setting (txl/runtime.h, "Threads"),
/// and the mutex keeps the last value and OpenBLAS's in step.
static void setBlasThreads(int threads) {
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
                               const std::vector<void *> *grads,
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
  std::vector<void *> newMems;
  for (int64_t l = 0; l <= info.n_layer; ++l)
    newMems.push_back(mgpuMemAlloc(
        size_t(newMlen * batch * dModel) * sizeof(float), nullptr, false));

  PackedArgs args;
  for (int32_t i = 0; i < info.n_params; ++i) {
    const txl_param_info_t &p = info.params[i];
    args.memref(session.deviceParams[i],
                std::vector<int64_t>(p.shape, p.shape + p.rank));
  }
  args.memref(inputs[0], {qlen, batch});
  if (target)
    args.memref(inputs[1], {qlen + (alrfou ? 1 : 0), batch});
  for (void *m : session.deviceMems)
    args.memref(m, {session.mlen, batch, dModel});
  for (int64_t scalar :
       {options.mem_len, options.clamp_len,
        int64_t(options.same_length ? 1 : 0), options.dropout_seed,
        options.dropout_offset, options.dropout_column,
        int64_t(options.training ? 1 : 0)})
    args.i64(scalar);
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
  for (void *m : newMems)
    args.memref(m, {newMlen, batch, dModel});
  for (void *part : parts)
    args.memref(part, {qlen, batch});
  if (grads)
    for (int32_t i = 0; i < info.n_params; ++i) {
      const txl_param_info_t &p = info.params[i];
      if (p.trainable)
        args.memref((*grads)[i],
                    std::vector<int64_t>(p.shape, p.shape + p.rank));
    }
  entry(args.data());

  txl_device_read(outNll, nll, 0, tokens * width * sizeof(float));
  for (size_t part = 0; part < parts.size(); ++part)
    txl_device_read(lossParts + part * tokens, parts[part], 0,
                    tokens * sizeof(float));
  mgpuMemFree(nll, nullptr);
  freeDevice(parts);
  freeDevice(inputs);
  freeDevice(session.deviceMems);
  session.deviceMems = std::move(newMems);
  session.mlen = newMlen;
  session.memsOnHostCurrent = false;
}

/// Device buffers for the gradient of every trainable parameter (null for
/// buffers), zeroed.
static std::vector<void *> allocateDeviceGrads(const txl_session &session) {
  const txl_model_info_t &info = *session.info;
  std::vector<void *> grads(info.n_params, nullptr);
  for (int32_t i = 0; i < info.n_params; ++i)
    if (info.params[i].trainable) {
      size_t count = size_t(elementCount(info.params[i]));
      grads[i] = mgpuMemAlloc(count * sizeof(float), nullptr, false);
      mgpuMemset32(grads[i], 0, count, nullptr);
    }
  return grads;
}

static bool kvCacheActive(const txl_session &session) {
  return session.kvCacheEnabled && !session.onDevice &&
         session.segment == &txl_segment_forward && txl_segment_kv &&
         txl_segment_log_probs_kv && txl_segment_r_head_k;
}

/// Brings the session's r_head_k up to date for `klen` and the run's
/// clamp_len (txl_segment_r_head_k).
static void updateRHeadK(txl_session &session, int64_t klen, int64_t clampLen) {
  if (session.rHeadKKlen == klen && session.rHeadKClamp == clampLen)
    return;
  const txl_model_info_t &info = *session.info;
  const int64_t hd = info.n_head * info.d_head;
  session.rHeadK.resize(size_t(info.n_layer));
  PackedArgs args;
  for (int32_t i = 0; i < info.n_params; ++i) {
    const txl_param_info_t &p = info.params[i];
    args.memref(session.params[i].data(),
                std::vector<int64_t>(p.shape, p.shape + p.rank));
  }
  args.i64(klen);
  args.i64(clampLen);
  for (auto &r : session.rHeadK) {
    r.resize(size_t(klen * hd));
    args.memref(r.data(), {klen, hd});
  }
  setBlasThreads(session.threads);
  txl_segment_r_head_k(args.data());
  session.rHeadKKlen = klen;
  session.rHeadKClamp = clampLen;
}

/// The batch slices of a run of `batch` columns: slice s runs columns
/// [first[s], first[s + 1]).
static std::vector<int64_t> sliceBounds(const txl_session &session,
                                        int64_t batch) {
  const int slices =
      static_cast<int>(std::min<int64_t>(std::max(session.threads, 1), batch));
  std::vector<int64_t> first(slices + 1);
  for (int s = 0; s <= slices; ++s)
    first[s] = batch * s / slices;
  return first;
}

/// Whether the key/value cache's slices are those a run of `batch` columns
/// uses now (the thread count may have changed since the cache was made).
static bool kvSlicesMatch(const txl_session &session, int64_t batch) {
  if (session.kvSlices.empty())
    return session.mlen == 0;
  std::vector<int64_t> first = sliceBounds(session, batch);
  if (first.size() != session.kvSlices.size() + 1)
    return false;
  for (size_t s = 0; s < session.kvSlices.size(); ++s)
    if (session.kvSlices[s].first != first[s] ||
        session.kvSlices[s].count != first[s + 1] - first[s])
      return false;
  return true;
}

/// One eval-mode segment through txl_segment_kv (txl_segment_log_probs_kv
/// with `logProbs`): each slice runs on its own memory and cache, and the
/// segment's rows of both go straight into their windows' room (RowWindow):
/// the memories' as the entry's destinations, the keys' and values' by the
/// entry itself, which reads the window with them. The caller has
/// validated the arguments, and kvSlicesMatch holds.
static void runSegmentKv(txl_session &session, const int64_t *data,
                         const int64_t *target, int64_t qlen, int64_t batch,
                         const txl_run_options_t &options, float *out,
                         bool logProbs) {
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
    session.kvSlices.resize(size_t(slices));
    for (int s = 0; s < slices; ++s) {
      auto &slice = session.kvSlices[s];
      slice.first = first[s];
      slice.count = first[s + 1] - first[s];
      for (int64_t l = 0; l < layers; ++l)
        slice.mems.emplace_back(slice.count * dModel);
      for (auto *list : {&slice.k, &slice.v})
        for (int64_t l = 0; l < info.n_layer; ++l)
          list->emplace_back(slice.count * hd);
    }
  }
  updateRHeadK(session, mlen + qlen, options.clamp_len);
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
    SliceCall call{d, t, nb, {}, 0, o, {}, {}};
    for (RowWindow &mem : slice.mems)
      call.newMems.push_back(mem.reserve(qlen, capacity));
    for (int64_t l = 0; l < info.n_layer; ++l) {
      for (auto [state, windows] : {std::pair(&slice.k[l], &call.kWindows),
                                    std::pair(&slice.v[l], &call.vWindows)}) {
        state->reserve(qlen, capacity);
        // After reserve(), which may move the window.
        windows->push_back(state->data());
      }
      call.rHeadK.push_back(session.rHeadK[l].data());
    }
    callEntry(session, entry, options, qlen, newMlen, call);
    for (auto *list : {&slice.mems, &slice.k, &slice.v})
      for (RowWindow &state : *list)
        state.append(qlen, newMlen);
    if (slices > 1)
      for (int64_t r = 0; r < qlen; ++r)
        std::copy_n(sliceOut.data() + r * nb * width, nb * width,
                    out + (r * batch + b0) * width);
  };
  if (slices == 1) {
    setBlasThreads(session.threads);
    runSlice(0);
  } else {
    setBlasThreads(1);
    session.pool.run(slices, runSlice);
  }
  session.mlen = newMlen;
  session.memsInSlices = true;
}

/// One segment through the forward entry, or through the backward entry
/// when `outGrads` is not null (one float32 buffer per trainable parameter,
/// in parameter order; entries for buffers are ignored), or, with
/// `intoDeviceGrads`, into those device gradient buffers (one per
/// parameter, null for buffers). With `logProbs` (and no target) through
/// txl_segment_log_probs: `out_nll` receives [qlen, batch, n_token]
/// log-probabilities.
static void runSegment(txl_session_t *session, const int64_t *data,
                       const int64_t *target, int64_t qlen, int64_t batch,
                       const txl_run_options_t *options, float *out_nll,
                       float *const *outGrads,
                       const std::vector<void *> *intoDeviceGrads = nullptr,
                       bool logProbs = false) {
  requireSession(session);
  const txl_model_info_t &info = *session->info;
  if (!session->loaded)
    fail(TXL_INVALID_ARGUMENT, "no checkpoint loaded");
  if (!data || (!target && !logProbs) || !options || !out_nll)
    fail(TXL_INVALID_ARGUMENT, "txl_session_run_segment: null argument");
  if (logProbs && !session->segmentLogProbs)
    fail(TXL_INVALID_ARGUMENT,
         "this executable has no distribution entry (txl_segment_log_probs):"
         " compile the model again with this txlc");
  // Per position: one NLL, or every token's log-probability.
  const int64_t width = logProbs ? info.n_token : 1;
  if (qlen <= 0)
    fail(TXL_INVALID_ARGUMENT, "segment length must be positive, got {}", qlen);
  // The products' row counts (qlen or klen positions times the batch) go
  // to BLAS as 32-bit ints; klen is at most the memory kept plus qlen.
  constexpr int64_t kBlasMax = std::numeric_limits<int32_t>::max();
  int64_t mostMemory = std::max<int64_t>(options->mem_len, session->mlen);
  if (qlen > kBlasMax / std::max<int64_t>(batch, 1) ||
      mostMemory > kBlasMax / std::max<int64_t>(batch, 1) - qlen)
    fail(TXL_INVALID_ARGUMENT,
         "segment of {} positions over {} of memory at batch {}: its "
         "products would have more than the {} rows BLAS takes",
         qlen, mostMemory, batch, kBlasMax);
  if (options->training) {
    if (options->dropout_column < 0)
      fail(TXL_INVALID_ARGUMENT, "dropout_column must not be negative, got {}",
           options->dropout_column);
    // The masks count elements by global column, up to the call's last.
    checkDropoutElements(info, qlen, qlen + mostMemory,
                         options->dropout_column + batch);
  }
  if (batch != session->batch)
    fail(TXL_INVALID_ARGUMENT,
         "batch size {} differs from the memory's batch size {} (reset the "
         "memory first)",
         batch, session->batch);
  if (options->mem_len < 0)
    fail(TXL_INVALID_ARGUMENT, "mem_len must be >= 0, got {}",
         options->mem_len);
  if (options->same_length && options->mem_len == 0)
    fail(TXL_INVALID_ARGUMENT, "same_length requires mem_len > 0");
  if (options->loss_scale_log2 < 0 || options->loss_scale_log2 > 120)
    fail(TXL_INVALID_ARGUMENT, "loss_scale_log2 must be in [0, 120], got {}",
         options->loss_scale_log2);
  // Objective "alrfou"'s backward: qlen + 1 target rows and the loss
  // weights (runtime.h).
  const bool alrfou = (outGrads || intoDeviceGrads) && isAlRfouObjective(info);
  if ((outGrads || intoDeviceGrads) && !session->missingTrainingOnly.empty())
    fail(TXL_INVALID_ARGUMENT,
         "the loaded checkpoint has no '{}' (a training-only tensor, "
         "dropped for inference): a backward run needs it",
         session->missingTrainingOnly);
  const int64_t targetRows = qlen + (alrfou ? 1 : 0);
  if (alrfou && (!options->loss_weights || !options->position_weights))
    fail(TXL_INVALID_ARGUMENT,
         "objective 'alrfou': a backward run needs loss_weights and "
         "position_weights");
  for (int64_t i = 0; i < (logProbs ? qlen : targetRows) * batch; ++i) {
    if ((i < qlen * batch && (data[i] < 0 || data[i] >= info.n_token)) ||
        (!logProbs && (target[i] < 0 || target[i] >= info.n_token)))
      fail(TXL_INVALID_ARGUMENT,
           "token id out of range [0, {}) at position {} of the segment",
           info.n_token, i);
  }
  std::vector<float> scratchParts;
  float *lossParts = options->out_loss_parts;
  if (alrfou && !lossParts) {
    scratchParts.resize(size_t(3 * qlen * batch));
    lossParts = scratchParts.data();
  }
  txl_segment_fn entry = logProbs ? session->segmentLogProbs : session->segment;
  if (outGrads || intoDeviceGrads) {
    entry = session->segmentGrad;
    if (!entry)
      fail(TXL_INVALID_ARGUMENT,
           "this executable has no backward segment (txl_segment_grad); "
           "compile the model with --backward (the default)");
    for (int32_t i = 0; outGrads && i < info.n_params; ++i)
      if (info.params[i].trainable && !outGrads[i])
        fail(TXL_INVALID_ARGUMENT, "no gradient buffer for parameter '{}'",
             info.params[i].name);
  }

  // The key/value cache (runtime.h): eval-mode forward runs whose cache
  // describes the memory, in the slices the cache has.
  if (!options->training && !outGrads && !intoDeviceGrads && session->kvValid &&
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
  // An empty memory or output still needs a valid (non-null) pointer.
  static float emptyMemory = 0.0f;
  std::vector<std::vector<float>> newMems(layers);
  for (auto &m : newMems)
    m.resize(std::max<int64_t>(newMlen * batch * dModel, 1));

  if (session->onDevice) {
    if (intoDeviceGrads) {
      runSegmentOnDevice(*session, entry, data, target, qlen, newMlen, *options,
                         out_nll, intoDeviceGrads, lossParts);
      return;
    }
    // Host gradients: through temporary device buffers, read back.
    std::vector<void *> grads;
    if (outGrads)
      grads = allocateDeviceGrads(*session);
    runSegmentOnDevice(*session, entry, data, target, qlen, newMlen, *options,
                       out_nll, outGrads ? &grads : nullptr, lossParts);
    for (int32_t i = 0; outGrads && i < info.n_params; ++i)
      if (grads[i])
        txl_device_read(outGrads[i], grads[i], 0,
                        size_t(elementCount(info.params[i])) * sizeof(float));
    freeDevice(grads);
    return;
  }
  const int slices =
      static_cast<int>(std::min<int64_t>(std::max(session->threads, 1), batch));
  if (slices == 1) {
    setBlasThreads(session->threads);
    SliceCall call{data,    target, batch, {}, options->dropout_column,
                   out_nll, {},     {}};
    for (auto &m : session->mems)
      call.mems.push_back(m.empty() ? &emptyMemory : m.data());
    for (auto &m : newMems)
      call.newMems.push_back(m.data());
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
    std::vector<int64_t> first(slices + 1);
    for (int s = 0; s <= slices; ++s)
      first[s] = batch * s / slices;
    if (outGrads && session->sliceGrads.size() < size_t(slices)) {
      session->sliceGrads.resize(slices);
      for (auto &perParam : session->sliceGrads) {
        perParam.resize(info.n_params);
        for (int32_t i = 0; i < info.n_params; ++i)
          if (info.params[i].trainable)
            perParam[i].resize(session->params[i].size());
      }
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
          gatherColumns(session->mems[l].data(), mlen, batch, dModel, b0, nb,
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
                         newMems[l].data());
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

  for (auto &m : newMems)
    m.resize(newMlen * batch * dModel);
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
    if (session->onDevice && !session->memsOnHostCurrent) {
      const size_t count =
          size_t(session->mlen * session->batch * session->info->d_model);
      for (size_t l = 0; l < session->deviceMems.size(); ++l) {
        session->mems[l].resize(count);
        txl_device_read(session->mems[l].data(), session->deviceMems[l], 0,
                        count * sizeof(float));
      }
      session->memsOnHostCurrent = true;
    }
    *out_data = session->mems[layer].data();
    *out_mlen = session->mlen;
  });
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
    // RowWindow buffers of 2·mem_len rows (runSegmentKv's capacity).
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
// Training
//===----------------------------------------------------------------------===//

/// Allocates the training state on first use: the gradients and the
/// optimizer states (zero, as torch.optim starts them).
static void ensureTrainingState(txl_session &session) {
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
        size_t(elementCount(info.params[session.trainable[s % T]])), 0.0f);
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

/// The flat shape the training functions take each tensor in (runtime.h).
static std::vector<int64_t> flatShape(const txl_session &session, size_t t) {
  return {elementCount(session.info->params[session.trainable[t]])};
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

/// The gradients' norm from the partial sums of their squares, added in
/// order in f32 as @optimizer_update and @optimizer_step add them, and
/// unscaled.
static float normOf(const std::vector<float> &partials, float invLossScale) {
  float sum = 0;
  for (float part : partials)
    sum += part;
  return std::sqrt(sum) * invLossScale;
}

/// The update on the device: every part of the clipping norm in one call,
/// then the whole update as part 0 of 1, unless the norm is not finite.
static float deviceOptimizerStep(txl_session &session, double lr, int64_t step,
                                 float invLossScale) {
  const size_t T = session.trainable.size();
  auto addGrads = [&](PackedArgs &args) {
    for (size_t t = 0; t < T; ++t)
      args.memref(session.deviceGrads[session.trainable[t]],
                  flatShape(session, t));
  };
  PackedArgs norm;
  addGrads(norm);
  norm.memref(session.devicePartials, {normPartials(T)});
  txl_grad_squared_norm(norm.data());
  std::vector<float> partials(size_t(normPartials(T)));
  txl_device_read(partials.data(), session.devicePartials, 0,
                  partials.size() * sizeof(float));
  if (float total = normOf(partials, invLossScale); !std::isfinite(total))
    return total;

  PackedArgs args;
  for (size_t t = 0; t < T; ++t)
    args.memref(session.deviceParams[session.trainable[t]],
                flatShape(session, t));
  addGrads(args);
  for (size_t s = 0; s < session.deviceStates.size(); ++s)
    args.memref(session.deviceStates[s], flatShape(session, s % T));
  args.f64(lr);
  args.i64(step);
  args.f32(invLossScale);
  args.memref(session.devicePartials, {normPartials(T)});
  args.i64(0);
  args.i64(1);
  args.memref(session.deviceScalar, {1});
  txl_optimizer_step(args.data());
  session.paramsOnHostCurrent = false;
  session.statesOnHostCurrent = false;
  float gradNorm = 0;
  txl_device_read(&gradNorm, session.deviceScalar, 0, sizeof(float));
  return gradNorm;
}

/// The update on the CPU: `parts` element ranges, one per thread; first
/// each range's sum of squared gradients (txl_squared_norm_part per
/// gradient, added in parameter order), then, given them all, each range's
/// update in place (txl_optimizer_update per parameter), unless the norm is
/// not finite. The generated code is per tensor, so that it is compiled
/// once whatever the number of parameters (issue #48).
static float hostOptimizerStep(txl_session &session, double lr, int64_t step,
                               float invLossScale, int parts) {
  const size_t T = session.trainable.size();
  const size_t S = T ? session.states.size() / T : 0;
  std::vector<float> partials(parts);
  session.pool.run(parts, [&](int part) {
    float sum = 0;
    for (size_t t = 0; t < T; ++t) {
      float square = 0;
      PackedArgs args;
      args.memref(session.grads[session.trainable[t]].data(),
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
      args.memref(session.params[session.trainable[t]].data(),
                  flatShape(session, t));
      args.memref(session.grads[session.trainable[t]].data(),
                  flatShape(session, t));
      for (size_t s = 0; s < S; ++s)
        args.memref(session.states[s * T + t].data(), flatShape(session, t));
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
        session->onDevice
            ? deviceOptimizerStep(*session, lr, step, invLossScale)
            : hostOptimizerStep(*session, lr, step, invLossScale, parts);
    parametersChanged(*session);
  });
}

extern "C" int64_t txl_session_gradient_floats(txl_session_t *session) {
  if (!session)
    return 0;
  int64_t total = 0;
  for (int32_t i : session->trainable)
    total += elementCount(session->info->params[i]);
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
    sizes.push_back(elementCount(session.info->params[i]));
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
    args.memref(session->onDevice ? session->deviceScalar : out_lr, {1});
    txl_learning_rate(args.data());
    if (session->onDevice)
      txl_device_read(out_lr, session->deviceScalar, 0, sizeof(double));
  });
}

/// The host array of optimizer state `state` of parameter `index`, read
/// back from the device when it is behind.
static std::vector<float> &optimizerState(txl_session &session, int32_t state,
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
  if (session.onDevice && !session.statesOnHostCurrent) {
    for (size_t s = 0; s < session.states.size(); ++s)
      txl_device_read(session.states[s].data(), session.deviceStates[s], 0,
                      session.states[s].size() * sizeof(float));
    session.statesOnHostCurrent = true;
  }
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
    *out_data = optimizerState(*session, state, index).data();
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
    std::vector<float> &host = optimizerState(*session, state, index);
    std::copy_n(data, host.size(), host.begin());
    if (session->onDevice) {
      size_t s = size_t(&host - session->states.data());
      txl_device_write(session->deviceStates[s], 0, host.data(),
                       host.size() * sizeof(float));
    }
  });
}

//===----------------------------------------------------------------------===//
// The device-memory check
//===----------------------------------------------------------------------===//

namespace {
/// A session on a dry run's buffers (txl/device.h): it allocates what the
/// session it copies would, but no memory backs its buffers, and its
/// destructor leaves the device open.
struct DryRunSession {
  txl_session s;
  bool ended = false;

  explicit DryRunSession(const txl_session &real) {
    txl_device_begin_dry_run();
    s.info = real.info;
    s.segment = real.segment;
    s.segmentGrad = real.segmentGrad;
    s.segmentLogProbs = real.segmentLogProbs;
    s.onDevice = true;
    s.loaded = true;
    s.threads = 1;
    s.kvCacheEnabled = false;
    s.mems.resize(size_t(real.info->n_layer + 1));
    for (int32_t i = 0; i < real.info->n_params; ++i)
      s.deviceParams.push_back(mgpuMemAlloc(
          size_t(elementCount(real.info->params[i])) * sizeof(float), nullptr,
          false));
  }
  /// The most bytes held at once since the dry run began.
  size_t end() {
    ended = true;
    s.onDevice = false;
    return txl_device_end_dry_run();
  }
  ~DryRunSession() {
    if (!ended)
      end();
  }

  /// Replaces the memory by one of `mlen` rows x `batch` columns.
  void setMemory(int64_t mlen, int64_t batch) {
    freeDevice(s.deviceMems);
    for (size_t l = 0; l < s.mems.size(); ++l)
      s.deviceMems.push_back(
          mgpuMemAlloc(size_t(mlen * batch * s.info->d_model) * sizeof(float),
                       nullptr, false));
    s.mlen = mlen;
    s.batch = batch;
    s.memsOnHostCurrent = false;
  }

  /// One segment of `qlen` rows over the memory, as a run of `kind` runs
  /// it: forward (TXL_RUN_EVAL, TXL_RUN_LOG_PROBS), forward and backward to
  /// host gradients (TXL_RUN_GRADIENTS), or forward and backward into the
  /// update's gradient (TXL_RUN_TRAIN, as chunk 0 of `chunks`).
  void runSegment(txl_run_kind_t kind, int64_t qlen, int64_t memLen,
                  int64_t chunks) {
    const txl_model_info_t &info = *s.info;
    const bool training = kind == TXL_RUN_TRAIN;
    const bool alrfou =
        (training || kind == TXL_RUN_GRADIENTS) && isAlRfouObjective(info);
    std::vector<int64_t> tokens(size_t((qlen + 1) * s.batch), 0);
    std::vector<float> out(
        size_t(qlen * s.batch) *
        size_t(kind == TXL_RUN_LOG_PROBS ? info.n_token : 1));
    std::vector<float> lossWeights(size_t(2 * info.n_layer), 0.0f),
        positionWeights(size_t(qlen), 0.0f);
    txl_run_options_t options{};
    options.mem_len = memLen;
    options.clamp_len = info.clamp_len;
    options.same_length = info.same_length && memLen > 0;
    options.training = training ? 1 : 0;
    if (alrfou) {
      options.loss_weights = lossWeights.data();
      options.position_weights = positionWeights.data();
    }
    if (training) {
      checkStatus(txl_session_train_segment(&s, tokens.data(), tokens.data(),
                                            qlen, s.batch, &options, 0, chunks,
                                            out.data()));
    } else if (kind == TXL_RUN_GRADIENTS) {
      // The gradients come back to host arrays of the parameters' sizes.
      std::vector<std::vector<float>> grads(size_t(info.n_params));
      std::vector<float *> pointers;
      for (int32_t i = 0; i < info.n_params; ++i) {
        if (info.params[i].trainable)
          grads[size_t(i)].resize(size_t(elementCount(info.params[i])));
        pointers.push_back(grads[size_t(i)].data());
      }
      checkStatus(txl_session_run_segment_grad(&s, tokens.data(), tokens.data(),
                                               qlen, s.batch, &options,
                                               out.data(), pointers.data()));
    } else if (kind == TXL_RUN_LOG_PROBS)
      checkStatus(txl_session_run_segment_log_probs(
          &s, tokens.data(), qlen, s.batch, &options, out.data()));
    else
      checkStatus(txl_session_run_segment(&s, tokens.data(), tokens.data(),
                                          qlen, s.batch, &options, out.data()));
  }
};
} // namespace

extern "C" txl_status_t
txl_session_check_device_memory(txl_session_t *session,
                                const txl_device_memory_plan_t *plan) {
  return guardStatus([&] {
    requireSession(session);
    if (!plan)
      fail(TXL_INVALID_ARGUMENT, "txl_session_check_device_memory: null plan");
    if (!session->onDevice)
      return;
    const txl_device_memory_plan_t &p = *plan;
    const bool training = p.kind == TXL_RUN_TRAIN;
    if (p.qlen < 1 || p.mem_len < 0 || p.batch < 1 || p.chunks < 1 ||
        p.eval_mem_len < 0 || p.eval_batch < 0 ||
        (p.eval_batch > 0 && p.eval_qlen < 1))
      fail(TXL_INVALID_ARGUMENT,
           "device memory plan: segments of {} rows over {} memory rows, "
           "batch {} in {} chunks (validation {} rows over {}, batch {}): "
           "need rows, batch and chunks >= 1 (validation rows too when it "
           "has columns), memory rows >= 0",
           p.qlen, p.mem_len, p.batch, p.chunks, p.eval_qlen, p.eval_mem_len,
           p.eval_batch);
    const txl_model_info_t &info = *session->info;
    size_t params = 0, trainable = 0, trainableCount = 0;
    for (int32_t i = 0; i < info.n_params; ++i) {
      size_t bytes = size_t(elementCount(info.params[i])) * sizeof(float);
      params += bytes;
      if (info.params[i].trainable) {
        trainable += bytes;
        ++trainableCount;
      }
    }
    // Training: a gradient and n_optim_states states per trainable
    // parameter (and a chunk's gradient with chunks > 1), the clipping
    // norm's partial sums and a scalar.
    size_t gradientSets = p.chunks > 1 ? 2 : 1;
    size_t optimizer =
        training ? trainable * size_t(gradientSets + info.n_optim_states) +
                       size_t(normPartials(trainableCount)) * sizeof(float) +
                       sizeof(double)
                 : 0;
    const int64_t columns = p.batch * p.chunks;
    size_t memory = static_cast<size_t>(info.n_layer + 1) *
                    static_cast<size_t>(p.mem_len) *
                    static_cast<size_t>(columns) *
                    static_cast<size_t>(info.d_model) * sizeof(float);
    size_t total = 0, free = 0;
    txl_device_memory(&total, &free, nullptr, nullptr);
    std::string state = fmt::format(
        "parameters {}, memory state {} ({} x {} rows x batch {} x {}){}",
        mebibytes(params), mebibytes(memory), info.n_layer + 1, p.mem_len,
        columns, info.d_model,
        training ? fmt::format(", gradients and optimizer state {}",
                               mebibytes(optimizer))
                 : std::string());
    auto tooBig = [&](size_t need, const std::string &what, const char *when) {
      fail(TXL_UNAVAILABLE,
           "the run needs {} of device memory ({}){}, but the device has {} "
           "free of {}",
           mebibytes(need), what, when, mebibytes(free), mebibytes(total));
    };
    if (params + memory + optimizer > free)
      tooBig(params + memory + optimizer, state, " before its first segment");

    // The dry run: the state, then the largest steps of the run.
    DryRunSession dry(*session);
    const int64_t layers = info.n_layer + 1;
    std::vector<void *> parked; // the other chunks' memories
    for (int64_t c = 1; c < p.chunks; ++c)
      for (int64_t l = 0; l < layers; ++l)
        parked.push_back(mgpuMemAlloc(
            size_t(p.mem_len * p.batch * info.d_model) * sizeof(float), nullptr,
            false));
    dry.setMemory(p.mem_len, p.batch);
    dry.runSegment(p.kind, p.qlen, p.mem_len, p.chunks);
    if (training) {
      float norm = 0;
      checkStatus(txl_session_optimizer_step(&dry.s, 0.0, 1, 0, 1, &norm));
      if (p.eval_batch > 0) {
        // The training memory of the chunk run last goes to the host.
        dry.setMemory(p.eval_mem_len, p.eval_batch);
        dry.runSegment(TXL_RUN_EVAL, p.eval_qlen, p.eval_mem_len, 1);
      }
    }
    freeDevice(parked);
    const size_t need = dry.end();
    const size_t workspace = need - std::min(need, params + memory + optimizer);
    std::string steps =
        fmt::format("a dry run of a segment of {} rows over {} memory rows{}",
                    p.qlen, p.mem_len,
                    !training ? std::string()
                    : p.eval_batch > 0
                        ? fmt::format(", its backward and update, and "
                                      "validation segments of {} rows "
                                      "over {} at batch {}",
                                      p.eval_qlen, p.eval_mem_len, p.eval_batch)
                        : std::string(", its backward and update"));
    std::string needs = fmt::format("{}, segment workspace {} ({})", state,
                                    mebibytes(workspace), steps);
    if (need > free)
      tooBig(need, needs, "");
    std::fprintf(stderr,
                 "device memory: the run needs %s (%zu bytes): %s; %s free "
                 "of %s\n",
                 mebibytes(need).c_str(), need, needs.c_str(),
                 mebibytes(free).c_str(), mebibytes(total).c_str());
  });
}

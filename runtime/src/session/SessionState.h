//===- SessionState.h - A session's state, shared by its files --*- C++ -*-===//
//
// What txl_session_t holds, and the functions the session's files share.
// The session is split by concern, one file each:
//
//   Session.cpp     creation, threads, parameters in (checkpoint, init),
//                   the memory and its slots
//   Validation.cpp  the C API's argument checks
//   Residency.cpp   the arrays on the session's device (DeviceArray)
//   Segment.cpp     a segment through the generated entries: the whole
//                   batch as one call, or slices on the host's worker
//                   pool; txl_session_run_segment*
//   KvCache.cpp     the key/value cache (runtime.h)
//   Training.cpp    the training state, a chunk's backward, gradient I/O
//   Optimizer.cpp   the update (clipping norm, compiled optimizer), the
//                   learning rate, the optimizer state
//   MemoryPlan.cpp  the device-memory check's dry run
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_SESSION_SESSIONSTATE_H
#define TXL_RT_SESSION_SESSIONSTATE_H

#include "KvCache.h"

#include "txl/device.h"
#include "txl/rt/device/CpuBlas.h"
#include "txl/rt/device/Device.h"
#include "txl/rt/session/DeviceArray.h"
#include "txl/rt/session/MemRef.h"
#include "txl/rt/support/WorkerPool.h"
#include "txl/runtime.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

struct txl_session {
  const txl_model_info_t *info = nullptr;
  txl_segment_fn segment = nullptr;
  txl_segment_fn segmentGrad = nullptr; ///< null: no backward entry linked
  /// null: the model has no distribution entry (txl_segment_log_probs).
  txl_segment_fn segmentLogProbs = nullptr;
  /// The device the session's arrays live on: the host device on the CPU
  /// target (owned by `hostDevice`), the opened device on a GPU target.
  txl::rt::Device *device = nullptr;
  std::unique_ptr<txl::rt::Device> hostDevice;
  std::vector<txl::rt::DeviceArray> params; ///< by txl_param_info_t order
  bool loaded = false;
  /// The first training-only tensor (objective "alrfou"'s auxiliary heads)
  /// the loaded checkpoint left out, now zeros; empty when none. A backward
  /// run then refuses to start.
  std::string missingTrainingOnly;
  /// mems[l]: [mlen, batch, d_model] row-major, l = 0..n_layer; no
  /// buffers until the first txl_session_reset_memory or
  /// txl_session_set_memory.
  std::vector<txl::rt::DeviceArray> mems;
  int64_t mlen = 0, batch = 0;
  /// txl_session_set_threads: slices run in parallel (and BLAS threads when
  /// the batch runs as one slice); the OpenBLAS default until set.
  int threads = 0;
  txl::rt::WorkerPool pool;
  /// sliceGrads[s][i]: slice s's gradient of parameter i (batch-parallel
  /// backward only).
  std::vector<std::vector<std::vector<float>>> sliceGrads;

  /// The session opened the GPU device (txl_device_open) and closes it
  /// when released.
  bool closesDevice = false;
  /// TXL_PROFILE=counts on a GPU target: the device's counters printed per
  /// segment, per optimizer step and per txl_session_synchronize
  /// (reportCounts), as differences from `countsBefore`; `countedSegments`,
  /// `countedSteps` and `countedSyncs` number them.
  bool reportsCounts = false;
  txl_device_counters_t countsBefore{};
  int64_t countedSegments = 0, countedSteps = 0, countedSyncs = 0;

  /// The memories not in use (txl_session_select_memory: train.py's one
  /// `mems` per batch chunk), by slot; the fields above are slot
  /// `memorySlot`'s. A parked memory stays on the device.
  struct ParkedMemory {
    std::vector<txl::rt::DeviceArray> mems;
    int64_t mlen = 0, batch = 0;
  };
  std::vector<ParkedMemory> parkedMemory;
  int64_t memorySlot = 0;

  /// The key/value cache (txl_session_run_segment, KvCache.cpp), by batch
  /// slice.
  bool kvCacheEnabled = true;
  /// The slices describe the memory: every run since the last reset went
  /// through the cache (with no slice yet, the memory is empty).
  bool kvValid = false;
  std::vector<txl::rt::KvSlice> kvSlices;
  /// The slices hold the memory, and `mems` above is stale (syncMemory).
  bool memsInSlices = false;
  /// rHeadK[l] [rHeadKKlen, n_head·d_head]: layer l's r_head_k for
  /// (rHeadKKlen, rHeadKClamp); stale when rHeadKKlen < 0.
  std::vector<txl::rt::DeviceArray> rHeadK;
  int64_t rHeadKKlen = -1, rHeadKClamp = 0;

  /// Training (txl_session_train_segment, txl_session_optimizer_step),
  /// allocated on first use: the update's gradient per parameter (empty for
  /// buffers), one chunk's gradient (batch_chunk > 1), and the optimizer
  /// states, states[s * T + t] for trainable parameter trainable[t], all
  /// on the session's device. `grads` and `chunkGrads` are by parameter,
  /// with no buffer for the parameters that are not trainable;
  /// `chunkGrads` (batch_chunk > 1) holds the gradient of the chunk being
  /// run before it is added into `grads`.
  std::vector<int32_t> trainable;
  std::vector<txl::rt::DeviceArray> grads, chunkGrads, states;
  /// The update the executable carries: the whole model in one call
  /// (txl_optimizer_step, the GPU targets'), or per tensor over element
  /// ranges on the worker pool (txl_optimizer_update, the CPU's).
  bool wholeModelUpdate = false;
  /// The whole-model update's partial sums of squares, normPartials(T)
  /// floats (no buffer for the per-tensor update).
  txl::rt::DeviceArray normPartials;
  /// txl_session_allow_extra_tensors.
  bool allowExtraTensors = false;

  /// Frees every buffer the session holds on its device (its arrays, the
  /// key/value cache): before the device closes, or a dry run ends.
  void releaseArrays() {
    kvSlices.clear();
    rHeadK.clear();
    params.clear();
    mems.clear();
    parkedMemory.clear();
    states.clear();
    grads.clear();
    chunkGrads.clear();
    normPartials = {};
  }

  ~txl_session() {
    // The arrays go before the device that holds them.
    releaseArrays();
    if (closesDevice)
      txl_device_close();
  }
};

namespace txl::rt {

//===----------------------------------------------------------------------===//
// Validation.cpp
//===----------------------------------------------------------------------===//

/// Throws Error(TXL_INVALID_ARGUMENT) "null session" for a null session.
void requireSession(txl_session_t *session);

/// The checks of a segment's call (txl_session_run_segment and its
/// variants) before it runs: a loaded checkpoint, non-null buffers, the
/// segment's sizes (BLAS's 32-bit rows, dropout's mask elements), the
/// batch the memory has, the run options, the entry the call needs, and
/// every token id. `grads`: a backward run (host or device gradients);
/// `outGrads`: its host buffers when it has them. Errors:
/// TXL_INVALID_ARGUMENT naming the value.
void validateSegment(const txl_session &session, const int64_t *data,
                     const int64_t *target, int64_t qlen, int64_t batch,
                     const txl_run_options_t *options, const float *out,
                     bool grads, float *const *outGrads, bool logProbs);

//===----------------------------------------------------------------------===//
// Residency.cpp: the session's arrays on its device
//===----------------------------------------------------------------------===//

/// The session's parameters from host arrays (a load or an
/// initialization), in buffers of its device.
void setParameters(txl_session &session,
                   const std::vector<std::vector<float>> &values);
/// Arrays of `count` floats on the session's device for every layer's
/// memory (n_layer + 1), their contents undefined.
std::vector<DeviceArray> allocateMemory(txl_session &session, size_t count);
/// Arrays on the session's device for the gradient of every parameter,
/// zeros for the trainable ones and no buffer for the others.
std::vector<DeviceArray> allocateGrads(txl_session &session);

//===----------------------------------------------------------------------===//
// Segment.cpp
//===----------------------------------------------------------------------===//

/// One call of a generated entry on `batch` columns, every array contiguous
/// and a buffer of the session's device (host addresses on the CPU, whose
/// device is the host).
struct SliceCall {
  const void *data, *target;
  int64_t batch;
  std::vector<const void *> mems; ///< [mlen, batch, d_model] per layer
  /// The global batch column of column 0 (txl_run_options_t's
  /// dropout_column plus the slice's first column).
  int64_t dropoutColumn;
  void *nll;                   ///< [qlen, batch] ([qlen, batch, n_token]
                               ///< of log-probabilities when target is null)
  std::vector<void *> newMems; ///< [newMlen, batch, d_model]
  std::vector<void *> grads;   ///< per parameter; empty: forward
  /// Objective "alrfou"'s backward: the loss weights [2·n_layer] and the
  /// position weights [qlen] in, the loss's three parts [qlen, batch] out.
  const void *lossWeights = nullptr, *positionWeights = nullptr;
  std::vector<void *> lossParts{};
  /// Key/value-cache entries (txl_segment_kv): per layer, windows [klen,
  /// batch, n_head·d_head] of the memory rows' keys and values followed by
  /// room for the segment's, which the entry writes there, and r_head_k
  /// [klen, n_head·d_head] (there, `mems` is empty and `newMems` receive
  /// [qlen, batch, d_model]: the rows to append). Empty for the other
  /// entries (default-initialized, so that the other entries' calls can
  /// leave them out).
  std::vector<void *> kWindows{}, vWindows{};
  std::vector<const void *> rHeadK{};
};

/// Adds the parameters to a generated entry's arguments, in the model
/// table's order: their buffers on the session's device.
void addParameters(PackedArgs &args, const txl_session &session);

/// Adds a forward or backward entry's run-time scalars (runtime.h:
/// mem_len, clamp_len, same_length, dropout_seed, dropout_offset,
/// dropout_column, training), the dropout column being `dropoutColumn`.
void addRunScalars(PackedArgs &args, const txl_run_options_t &options,
                   int64_t dropoutColumn);

/// Calls the entry `entry` (txl_segment_*) on `call` through the packed
/// convention, with the session's parameters.
void callEntry(const txl_session &session, txl_segment_fn entry,
               const txl_run_options_t &options, int64_t qlen, int64_t newMlen,
               const SliceCall &call);

/// Sets OpenBLAS's (process-wide) thread count for a call: the session's
/// threads when the batch runs as one slice, 1 when slices run in parallel.
/// Called only between a session's calls, never while its products run;
/// sessions on other threads share the setting (txl/runtime.h, "Threads"),
/// and a mutex keeps the last value and OpenBLAS's in step.
void setBlasThreads(int threads);

/// The batch slices of a run of `batch` columns: slice s runs columns
/// [first[s], first[s + 1]); min(threads, batch) slices where the session's
/// device is the host (each a call on a thread of the worker pool), one on
/// a GPU (one call over the batch).
std::vector<int64_t> sliceBounds(const txl_session &session, int64_t batch);

/// One segment through the forward entry, or through the backward entry
/// when `outGrads` is not null (one float32 host buffer per trainable
/// parameter, in parameter order; entries for buffers are ignored), or,
/// with `intoGrads`, into those arrays of the session's device (one per
/// parameter, allocateGrads). With `logProbs` (and no target) through
/// txl_segment_log_probs: `out_nll` receives [qlen, batch, n_token]
/// log-probabilities. With `deferOutput` (a forward run),
/// `out_nll` is written once the session's device is next synchronized
/// (txl_session_enqueue_segment) where the device is not the host.
void runSegment(txl_session_t *session, const int64_t *data,
                const int64_t *target, int64_t qlen, int64_t batch,
                const txl_run_options_t *options, float *out_nll,
                float *const *outGrads,
                std::vector<DeviceArray> *intoGrads = nullptr,
                bool logProbs = false, bool deferOutput = false);

/// With reportsCounts, prints to stderr what the device was asked to do
/// since the last report (txl_device_counters), as "counts: <what> <n>:
/// ..." for the n-th segment, optimizer step or txl_session_synchronize
/// (`what` "segment", "update" or "synchronize").
void reportCounts(txl_session &session, const char *what);

//===----------------------------------------------------------------------===//
// KvCache.cpp
//===----------------------------------------------------------------------===//

/// Brings `mems` up to date from the key/value cache's slices (which keep
/// the memory too, and stay valid).
void syncMemory(txl_session &session);
/// Drops the key/value cache, keeping the memory: runs use @segment until
/// the next reset.
void dropKvCache(txl_session &session);
/// Drops the key/value cache and the memory it holds (the memory is being
/// replaced).
void discardKvCache(txl_session &session);
/// Drops everything computed from the parameters (they may have changed).
void parametersChanged(txl_session &session);
/// Whether eval-mode runs may go through the cache: enabled, with the
/// session's own forward entry and the cache's entries linked.
bool kvCacheActive(const txl_session &session);
/// Whether the key/value cache's slices are those a run of `batch` columns
/// uses now (the thread count may have changed since the cache was made),
/// and their rows start where the device can make views
/// (Device::viewAlignment).
bool kvSlicesMatch(const txl_session &session, int64_t batch);
/// One eval-mode segment through txl_segment_kv (txl_segment_log_probs_kv
/// with `logProbs`); the caller has validated the arguments, and
/// kvSlicesMatch holds.
/// With `deferOutput`, `out` as in runSegment.
void runSegmentKv(txl_session &session, const int64_t *data,
                  const int64_t *target, int64_t qlen, int64_t batch,
                  const txl_run_options_t &options, float *out, bool logProbs,
                  bool deferOutput = false);

//===----------------------------------------------------------------------===//
// Training.cpp
//===----------------------------------------------------------------------===//

/// The parts of the clipping norm's sum of squares on the GPU targets, one
/// work-item each (buildTrainingFunctions with forDevice): 256 workgroups
/// of 256, enough to fill an H100/H200's 132 multiprocessors while the
/// gradients stream through (16,384 left half of them idle, a serial
/// launch of the counters: txl_device_counters_t).
inline constexpr int64_t kDeviceNormParts = 65536;

/// The size of the GPU form's partials: kDeviceNormParts per group of
/// TXL_NORM_TENSORS_PER_KERNEL of the `trainable` gradients, then the
/// TXL_NORM_SUMS sums of those parts that the host reads (1 KiB an update;
/// txl/device.h).
inline int64_t normPartials(size_t trainable) {
  return kDeviceNormParts *
             int64_t((trainable + TXL_NORM_TENSORS_PER_KERNEL - 1) /
                     TXL_NORM_TENSORS_PER_KERNEL) +
         TXL_NORM_SUMS;
}

/// Allocates the training state on first use: the gradients and the
/// optimizer states (zero, as torch.optim starts them). Errors: an
/// executable without the compiled optimizer or schedule, no parameters.
void ensureTrainingState(txl_session &session);

/// The flat shape the training functions take trainable tensor `t` in
/// (runtime.h).
std::vector<int64_t> flatShape(const txl_session &session, size_t t);

} // namespace txl::rt

#endif // TXL_RT_SESSION_SESSIONSTATE_H

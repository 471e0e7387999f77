//===- MemoryPlan.cpp - The device-memory check's dry run -----------------===//
//
// txl_session_check_device_memory: before a GPU run's first segment, what
// its state needs and a dry run (txl/device.h) of its largest steps, on
// buffers no memory backs, give the bytes the run will hold at its peak;
// a run that does not fit stops there, naming the need and the device's
// free memory. txl_session_report_device_memory prints the peak measured.
//
//===----------------------------------------------------------------------===//

#include "SessionState.h"

#include "txl/rt/session/ModelInfo.h"
#include "txl/rt/support/Status.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

using namespace txl::rt;

/// Bytes as MiB with one decimal, for the device-memory lines.
static std::string mebibytes(size_t bytes) {
  return fmt::format("{:.1f} MiB", bytes / double(1 << 20));
}

extern "C" txl_status_t
txl_session_report_device_memory(txl_session_t *session) {
  return guardStatus([&] {
    requireSession(session);
    // The host's memory is not planned: the host device has no dry run.
    if (session->device->hostMemory())
      return;
    size_t peak = 0;
    txl_device_memory(nullptr, nullptr, nullptr, &peak);
    std::fprintf(stderr,
                 "device memory: peak %s (%zu bytes) in use (parameters, "
                 "memory state and segment workspace)\n",
                 mebibytes(peak).c_str(), peak);
  });
}

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
    s.device = real.device;
    s.loaded = true;
    s.threads = 1;
    s.kvCacheEnabled = false;
    s.mems.resize(size_t(real.info->n_layer + 1));
    for (int32_t i = 0; i < real.info->n_params; ++i)
      s.params.emplace_back(*s.device,
                            size_t(parameterElements(real.info->params[i])));
  }
  /// The most bytes held at once since the dry run began.
  size_t end() {
    ended = true;
    // The dry run's buffers go before it ends, which forgets them.
    s.releaseArrays();
    return txl_device_end_dry_run();
  }
  ~DryRunSession() {
    if (!ended)
      end();
  }

  /// Replaces the memory by one of `mlen` rows x `batch` columns (and
  /// drops the key/value cache's windows, keeping r_head_k as a run does).
  void setMemory(int64_t mlen, int64_t batch) {
    discardKvCache(s);
    s.mems.clear();
    s.mems = allocateMemory(s, size_t(mlen * batch * s.info->d_model));
    s.mlen = mlen;
    s.batch = batch;
  }

  /// Segments of `qlen` rows through the key/value cache (eval-mode, or
  /// log-probabilities with `logProbs`) from an empty memory of `batch`
  /// columns until it holds `memLen` rows, and one more: its windows, every
  /// layer's r_head_k (which stays, as after a real run, until the
  /// parameters change) and their workspace. Nothing where the cache does
  /// not run (kvCacheActive, kvSlicesMatch).
  void runKvSegments(bool logProbs, int64_t qlen, int64_t memLen,
                     int64_t batch) {
    s.kvCacheEnabled = true;
    if (kvCacheActive(s)) {
      checkStatus(txl_session_reset_memory(&s, batch));
      for (int64_t i = 0; i < memLen / qlen + 2; ++i)
        runSegment(logProbs ? TXL_RUN_LOG_PROBS : TXL_RUN_EVAL, qlen, memLen,
                   1);
    }
    s.kvCacheEnabled = false;
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
          grads[size_t(i)].resize(size_t(parameterElements(info.params[i])));
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
    if (session->device->hostMemory())
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
      size_t bytes = size_t(parameterElements(info.params[i])) * sizeof(float);
      params += bytes;
      if (info.params[i].trainable) {
        trainable += bytes;
        ++trainableCount;
      }
    }
    // Training: a gradient and n_optim_states states per trainable
    // parameter (and a chunk's gradient with chunks > 1), the clipping
    // norm's partial sums.
    size_t gradientSets = p.chunks > 1 ? 2 : 1;
    size_t optimizer =
        training ? trainable * size_t(gradientSets + info.n_optim_states) +
                       size_t(normPartials(trainableCount)) * sizeof(float)
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

    // The dry run: the state, then the largest steps of the run, after the
    // key/value cache's segments where the run's eval-mode segments go
    // through it (their r_head_k stays during the steps after them).
    DryRunSession dry(*session);
    const bool kvSegments =
        kvCacheActive(*session) && (!training || p.eval_batch > 0);
    if (kvSegments) {
      if (training)
        dry.runKvSegments(false, p.eval_qlen, p.eval_mem_len, p.eval_batch);
      else
        dry.runKvSegments(p.kind == TXL_RUN_LOG_PROBS, p.qlen, p.mem_len,
                          p.batch);
    }
    const int64_t layers = info.n_layer + 1;
    // The other chunks' memories (freed before the dry run ends, also when
    // it throws: declared after it).
    std::vector<DeviceArray> parked;
    for (int64_t c = 1; c < p.chunks; ++c)
      for (int64_t l = 0; l < layers; ++l)
        parked.emplace_back(*dry.s.device,
                            size_t(p.mem_len * p.batch * info.d_model));
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
    parked.clear();
    const size_t need = dry.end();
    const size_t workspace = need - std::min(need, params + memory + optimizer);
    std::string steps = fmt::format(
        "a dry run of {}a segment of {} rows over {} memory rows{}",
        !kvSegments ? std::string()
        : training  ? fmt::format("the key/value cache's segments of {} rows "
                                   "up to {} memory rows at batch {}, ",
                                  p.eval_qlen, p.eval_mem_len, p.eval_batch)
                    : fmt::format("the key/value cache's segments up to {} "
                                   "memory rows, ",
                                  p.mem_len),
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

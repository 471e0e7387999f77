//===- TrainSchedule.cpp - A run's settings and its schedules -------------===//
//
// resolveSettings, the compiled learning-rate schedule (scheduledLr), what
// follows max_step, and ReduceLROnPlateau for the dev_perf scheduler
// (TrainParts.h).
//
//===----------------------------------------------------------------------===//

#include "TrainParts.h"

#include "txl/rt/session/ModelInfo.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <string_view>
#include <vector>

namespace txl::rt {

Settings resolveSettings(const txl_model_info_t &info,
                         const TrainOptions &options) {
  Settings s;
  s.dataDir = options.dataDir.empty() ? info.data_path : options.dataDir;
  s.dataset = options.dataset.empty() ? info.dataset : options.dataset;
  s.workDir = options.workDir;
  if (s.workDir.empty())
    fail(TXL_INVALID_ARGUMENT, "train needs --work-dir");
  if (s.dataset.empty())
    fail(TXL_INVALID_ARGUMENT,
         "no dataset: the model file sets no [data] dataset; pass --dataset");
  if (s.dataDir.empty())
    fail(TXL_INVALID_ARGUMENT,
         "no data directory: the model file sets no [data] path; pass --data");
  // lm1b's official train iterator (LMMultiFileIterator) has no
  // get_varlen_iter, and the alrfou objective samples windows of one stream.
  if (datasetSpec(s.dataset).sentenceLevel && info.varlen)
    fail(TXL_INVALID_ARGUMENT,
         "[train] varlen: '{}' is read as sentence shards, whose official "
         "iterator has fixed-length segments only",
         s.dataset);
  if (datasetSpec(s.dataset).sentenceLevel && isAlRfouObjective(info))
    fail(TXL_INVALID_ARGUMENT,
         "[train] objective = \"alrfou\" samples windows of one text "
         "stream; '{}' is sentence shards",
         s.dataset);
  s.characterLevel = isCharacterDataset(s.dataset);
  s.maxStep = options.maxStep.value_or(info.max_step);
  s.logInterval = options.logInterval.value_or(info.log_interval);
  s.evalInterval = options.evalInterval.value_or(info.eval_interval);
  s.checkpointInterval = options.checkpointInterval.value_or(s.logInterval);
  s.maxEvalSteps = options.maxEvalSteps.value_or(info.max_eval_steps);
  s.seed = static_cast<uint64_t>(options.seed.value_or(info.seed));
  s.threads = options.threads.value_or(0);
  for (auto [name, value] :
       {std::pair<const char *, int64_t>{"max-step", s.maxStep},
        {"log-interval", s.logInterval},
        {"eval-interval", s.evalInterval},
        {"checkpoint-interval", s.checkpointInterval}})
    if (value <= 0)
      fail(TXL_INVALID_ARGUMENT, "--{} must be positive, got {}", name, value);
  if (info.batch_chunk <= 0 || info.batch_size % info.batch_chunk != 0)
    fail(TXL_INVALID_ARGUMENT,
         "[train] batch_chunk {} must divide batch_size {}", info.batch_chunk,
         info.batch_size);
  if (options.threads && *options.threads < 0)
    fail(TXL_INVALID_ARGUMENT, "--threads must not be negative, got {}",
         *options.threads);
  s.evalTgtLen = info.eval_tgt_len;
  s.evalMemLen = info.mem_len + info.tgt_len - info.eval_tgt_len;
  if (info.mem_len == 0 || s.evalMemLen < 0)
    s.evalMemLen = 0; // train.py grows ext_len instead; ext_len is 0 here
  s.evalBatch = info.eval_batch_size;
  s.lossScaling = info.precision == TXL_PRECISION_FP16;
  if (s.lossScaling)
    s.lossScaleInitLog2 = 16; // official train.py: apex's init_scale 2^16
  if (!s.lossScaling && (options.lossScaleInit || options.lossScaleWindow))
    fail(TXL_INVALID_ARGUMENT,
         "--loss-scale-init and --loss-scale-window apply to executables "
         "compiled with --precision=fp16; this one is {}",
         txl_precision_name(info.precision));
  if (options.lossScaleInit) {
    int exponent = 0;
    double mantissa = std::frexp(*options.lossScaleInit, &exponent);
    if (mantissa != 0.5 || exponent - 1 < 0 || exponent - 1 > 120)
      fail(TXL_INVALID_ARGUMENT,
           "--loss-scale-init must be a power of two from 1 to 2^120, got {}",
           *options.lossScaleInit);
    s.lossScaleInitLog2 = exponent - 1;
  }
  s.lossScaleWindow = options.lossScaleWindow.value_or(s.lossScaleWindow);
  if (s.lossScaleWindow <= 0)
    fail(TXL_INVALID_ARGUMENT, "--loss-scale-window must be positive, got {}",
         s.lossScaleWindow);
  return s;
}

double scheduledLr(txl_session_t *session, int64_t step, double lr,
                   int64_t maxStep) {
  double out = 0;
  checkStatus(txl_session_learning_rate(session, step, lr, maxStep, &out));
  return out;
}

std::string maxStepSchedules(const txl_model_info_t &info) {
  std::vector<std::string> what;
  if (std::string_view(info.scheduler) == "cosine")
    what.push_back("cosine learning rate (T_max)");
  if (isAlRfouObjective(info) && info.intermediate_layers && info.n_layer > 1)
    what.push_back("intermediate-layer losses (each dropped at a fraction)");
  return fmt::format("{}", fmt::join(what, " and "));
}

double plateauStep(const txl_model_info_t &info, LoopState &state,
                   double valLoss) {
  if (valLoss < state.plateauBest * (1.0 - 1e-4)) {
    state.plateauBest = valLoss;
    state.plateauBad = 0;
  } else {
    ++state.plateauBad;
  }
  if (state.plateauBad <= info.patience)
    return state.lr;
  state.plateauBad = 0;
  double reduced = std::max(state.lr * info.decay_rate, info.lr_min);
  return state.lr - reduced > 1e-8 ? reduced : state.lr;
}

} // namespace txl::rt

//===- Train.cpp - `<model> train`: the official train.py loop --*- C++ -*-===//
//
// The loop is train.py's `train()` over an LMOrderedIterator; the numerics
// are generated code (txl_segment_grad, the optimizer update,
// txl_learning_rate), which the session runs on the CPU or, for the GPU
// targets, on the device, where the parameters, gradients and optimizer
// states stay; this file only sequences them and logs, and saves and
// restores the state through TrainCheckpoint.cpp (TrainParts.h lists the
// parts of `train`). Everything a later update depends on is in the
// checkpoint, and every quantity is computed in a fixed order, so a resumed
// run reproduces the uninterrupted one bit for bit (with the same OpenBLAS
// thread count).
//
//===----------------------------------------------------------------------===//

#include "TrainParts.h"

#include "txl/rt/collectives/DataParallel.h"
#include "txl/rt/commands/AlRfou.h"
#include "txl/rt/commands/Commands.h"
#include "txl/rt/commands/GradientReducer.h"
#include "txl/rt/commands/Progress.h"
#include "txl/rt/data/Checkpoint.h"
#include "txl/rt/data/Corpus.h"
#include "txl/rt/data/LMIterator.h"
#include "txl/rt/data/SafeTensors.h"
#include "txl/rt/session/ModelInfo.h"
#include "txl/rt/support/Status.h"

#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

namespace txl::rt {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

} // namespace

std::string formatTrainLine(int64_t epoch, int64_t step, int64_t batches,
                            double lr, double msPerBatch, double loss,
                            bool characterLevel) {
  std::string line = fmt::format(
      "| epoch {:3d} step {:>8d} | {:>6d} batches | lr {:.3g} | ms/batch "
      "{:5.2f} | loss {:5.2f}",
      epoch, step, batches, lr, msPerBatch, loss);
  if (characterLevel)
    return line + fmt::format(" | bpc {:9.5f}", loss / std::log(2.0));
  return line + fmt::format(" | ppl {:9.3f}", std::exp(loss));
}

std::string formatValidLine(int64_t evalIndex, int64_t step, double seconds,
                            double loss, bool characterLevel) {
  std::string line = fmt::format(
      "| Eval {:3d} at step {:>8d} | time: {:5.2f}s | valid loss {:5.2f}",
      evalIndex, step, seconds, loss);
  if (characterLevel)
    return line + fmt::format(" | bpc {:9.5f}", loss / std::log(2.0));
  return line + fmt::format(" | valid ppl {:9.3f}", std::exp(loss));
}

namespace {

/// A 64-bit FNV-1a hash of every parameter's bit patterns, a float at a
/// time: equal on every rank while the ranks stay replicas.
uint64_t parameterHash(const txl_model_info_t &info, txl_session_t *session) {
  uint64_t hash = 14695981039346656037ull;
  for (int32_t i = 0; i < info.n_params; ++i) {
    float *data = nullptr;
    checkStatus(txl_session_parameter(session, i, &data));
    for (int64_t k = 0; k < parameterElements(info.params[i]); ++k) {
      uint32_t bits;
      std::memcpy(&bits, data + k, sizeof bits);
      hash = (hash ^ bits) * 1099511628211ull;
    }
  }
  return hash;
}

/// The run's log: each line to `out` and, on rank 0, to train.log; the
/// records of metrics.jsonl (rank 0); the progress bar (rank 0, on a
/// terminal), erased before each line.
class RunLog {
public:
  RunLog(const WorkPaths &paths, std::FILE *out, bool root, int64_t tokens,
         bool progress)
      : bar("train", tokens, stderr,
            root && progress && isatty(fileno(stderr))),
        out(out), root(root) {
    if (root) {
      logFile.open(paths.log, std::ios::app);
      metrics.open(paths.metrics, std::ios::app);
    }
  }

  void line(const std::string &text) {
    bar.finish();
    fmt::print(out, "{}\n", text);
    std::fflush(out);
    logFile << text << '\n' << std::flush;
  }

  void record(const nlohmann::json &json) {
    if (root)
      metrics << json.dump() << '\n' << std::flush;
  }

  ProgressBar bar;

private:
  std::FILE *out;
  bool root;
  std::ofstream logFile, metrics;
};

/// Fails unless every split the run evaluates (valid every eval_interval
/// updates when max_step reaches one, test at the end) fills a segment:
/// known before update 1, not at the first evaluation (issue 48, item 11).
void checkEvaluatedSplits(const Corpus &corpus, const Settings &settings) {
  for (Split split : {Split::Valid, Split::Test}) {
    if (split == Split::Valid && settings.evalInterval > settings.maxStep)
      continue;
    SplitIterator iterator(corpus, split, settings.evalBatch,
                           settings.evalTgtLen);
    LMSegment first;
    if (!iterator.next(first))
      fail(TXL_DATA_ERROR,
           "the {} split of {} fills no segment of {} columns of {} tokens, "
           "and the run evaluates it",
           splitName(split), settings.dataDir, settings.evalBatch,
           settings.evalTgtLen);
  }
}

/// GPU targets: fails unless the run fits on the device, checked before
/// anything is allocated: the training state, the memory of every chunk
/// (all the rank's columns), the longest segment's backward and the
/// validation between updates.
void checkDeviceMemory(const txl_model_info_t &info, txl_session_t *session,
                       const TrainingData &data, const Settings &settings,
                       const Communicator &comm) {
  txl_device_memory_plan_t plan{};
  plan.kind = TXL_RUN_TRAIN;
  plan.qlen =
      info.varlen ? LMVarlenIterator::maxLength(info.tgt_len) : info.tgt_len;
  plan.mem_len = info.mem_len;
  plan.batch = data.chunkBatch();
  plan.chunks = info.batch_chunk;
  plan.eval_qlen = settings.evalTgtLen;
  plan.eval_mem_len = settings.evalMemLen;
  plan.eval_batch =
      unevenColumns(settings.evalBatch, comm.rank(), comm.size()).count;
  checkStatus(txl_session_check_device_memory(session, &plan));
}

/// The run's first lines: the parameter counts (or where it resumed), the
/// settings, the ranks, the loss scaling and objective "alrfou"'s options.
void logHeader(RunLog &log, const txl_model_info_t &info,
               const Settings &settings, const LoopState &state,
               const WorkPaths &paths, bool resumed, const Communicator &comm,
               const IndexRange &columns) {
  int64_t nAll = 0, nNonEmb = 0;
  for (int32_t i = 0; i < info.n_params; ++i) {
    if (!info.params[i].trainable)
      continue;
    nAll += parameterElements(info.params[i]);
    if (std::string_view(info.params[i].name).substr(0, 7) == "layers.")
      nNonEmb += parameterElements(info.params[i]);
  }
  if (resumed)
    log.line(fmt::format("| resumed from {} at step {} (epoch {})", paths.last,
                         state.step, state.epoch));
  else
    log.line(fmt::format("#params = {}\n#non emb params = {}", nAll, nNonEmb));
  log.line(fmt::format("| optim {} | lr {} | scheduler {} | warmup_step {} | "
                       "max_step {} | batch_size {} | tgt_len {} | mem_len {} "
                       "| seed {} | threads {}",
                       info.optim, info.lr, info.scheduler, info.warmup_step,
                       settings.maxStep, info.batch_size, info.tgt_len,
                       info.mem_len, settings.seed, settings.threads));
  if (comm.size() > 1)
    log.line(fmt::format("| data parallel | {} ranks ({}) | {} batch columns "
                         "and threads {} each",
                         comm.size(), comm.description(), columns.count,
                         settings.threads));
  if (settings.lossScaling)
    log.line(fmt::format("| precision fp16 | dynamic loss scale 2^{} (x2 "
                         "after {} updates without overflow, /2 and the "
                         "update skipped on an overflow)",
                         state.lossScaleLog2, settings.lossScaleWindow));
  if (isAlRfouObjective(info))
    log.line(fmt::format("| objective alrfou | multiple positions {} | "
                         "intermediate layers {} | multiple targets {}",
                         info.multiple_positions ? "on" : "off",
                         info.intermediate_layers ? "on" : "off",
                         info.multiple_targets ? "on" : "off"));
}

/// The most updates whose losses wait for a synchronisation (settleLosses).
constexpr int64_t kMaxPendingUpdates = 100;

/// The updates of one rank's run, from `state` to max_step (or
/// --stop-after): per update the chunks' backward, the optimizer step, the
/// log line every log_interval updates, validation every eval_interval and
/// the checkpoint. Rank 0 writes the log, metrics.jsonl and the
/// checkpoints.
class RankRun {
public:
  RankRun(const txl_model_info_t &info, const TrainOptions &options,
          Communicator &comm, const Settings &settings, const WorkPaths &paths,
          const Corpus &corpus, const IndexRange &columns,
          txl_session_t *session, OptimizerStates &optimizer,
          TrainingData &data, LoopState &state,
          std::optional<int64_t> savedStep, RunLog &log)
      : info(info), options(options), comm(comm), settings(settings),
        paths(paths), corpus(corpus), columns(columns), session(session),
        optimizer(optimizer), data(data), state(state), savedStep(savedStep),
        log(log), reducer(comm, info), alrfou(isAlRfouObjective(info)) {
    runOptions.mem_len = info.mem_len;
    runOptions.clamp_len = info.clamp_len;
    runOptions.same_length = info.same_length;
    // Train mode: dropout masks keyed by the seed, the update as the
    // counter offset, so a resumed run draws the same masks, and each
    // chunk's first global column, so that chunks, threads and ranks draw
    // the masks of the whole batch (runtime.h: dropout_column).
    runOptions.training = 1;
    runOptions.dropout_seed = static_cast<int64_t>(settings.seed);
    // The gradient norm's partial sums (txl_session_optimizer_step): a
    // rank adds them as one process of N·T threads does, the global
    // slices, so that the ranks clip exactly as that process.
    normParts = settings.threads;
    if (comm.size() > 1)
      normParts =
          comm.size() * txl_session_batch_slices(session, data.chunkBatch());
    if (alrfou && !state.intervalParts)
      state.intervalParts.emplace(std::array<double, 3>{0, 0, 0});
  }

  /// Runs the updates; false when --stop-after ended the run before
  /// max_step.
  bool run();

private:
  /// train.py's share of an update's loss: each chunk's mean NLL /
  /// batch_chunk, and (objective "alrfou") the same of the loss's parts.
  struct UpdateLoss {
    double loss = 0;
    double parts[3] = {0, 0, 0};
  };
  /// An update whose chunks' NLL the device writes at its next
  /// synchronisation (txl_session_enqueue_train_segment): its step, each
  /// chunk's NLL buffer, and the loss's parts (written on return).
  struct PendingUpdate {
    int64_t step = 0;
    std::vector<std::vector<float>> nll;
    double parts[3] = {0, 0, 0};
  };

  /// The next update's segment: objective "alrfou"'s random windows (and
  /// the update's loss weights), or the train iterator's next, a new epoch
  /// starting when it ends.
  void nextSegment(LMSegment &segment);
  /// The backward of every chunk of `segment` (gradients accumulate), its
  /// NLL left pending (settleLosses), then, with several ranks, the global
  /// batch's gradients.
  void backward(const LMSegment &segment);
  /// One synchronisation of the session, then the pending updates' losses
  /// in order (with several ranks, the global batch's), each checked
  /// finite, into the interval's sums: before every log line, validation,
  /// checkpoint and the end of the run, and every kMaxPendingUpdates
  /// updates. Returns the last update's loss.
  double settleLosses();
  /// The optimizer step: returns the gradients' norm. Without loss scaling
  /// a non-finite norm ends the run; with it the step is skipped and the
  /// scale halved (apex's DynamicLossScaler).
  float optimizerStep();
  /// The log_interval line and record, and the divergence warning.
  void logInterval(double lastLoss, float gradNorm);
  /// Validation (the session's memory kept): the log lines and record, the
  /// best checkpoint, dev_perf's plateau rule.
  void validate();
  /// last.safetensors, once the parameters are known finite and (several
  /// ranks) the replicas identical.
  void saveCheckpoint();
  /// Where the run can resume from, for the messages of a failed update.
  std::string lastCheckpoint() const {
    return savedStep ? fmt::format("{} holds the last checkpoint (step {})",
                                   paths.last, *savedStep)
                     : std::string("no checkpoint was written yet");
  }

  const txl_model_info_t &info;
  const TrainOptions &options;
  Communicator &comm;
  const Settings &settings;
  const WorkPaths &paths;
  const Corpus &corpus;
  const IndexRange &columns;
  txl_session_t *session;
  OptimizerStates &optimizer;
  TrainingData &data;
  LoopState &state;
  /// The update count of the last complete checkpoint.
  std::optional<int64_t> savedStep;
  RunLog &log;
  GradientReducer reducer;
  const bool alrfou;
  txl_run_options_t runOptions{};
  int32_t normParts = 0;
  AlRfouWeights weights;
  std::vector<float> lossParts;
  std::vector<PendingUpdate> pending;
  double lastLoss = 0;
  /// Whether the last log line warned of divergence (a warning is logged
  /// when the loss starts diverging, not at every line while it does).
  bool warnedDivergence = false;
  Clock::time_point intervalStart = Clock::now(), evalStart = Clock::now();
  int64_t stepsThisInterval = 0, tokensDone = 0;
};

void RankRun::nextSegment(LMSegment &segment) {
  if (alrfou) {
    sampleAlRfouWindows(corpus.train, info.tgt_len, info.batch_size, data.rng(),
                        segment);
    weights =
        alRfouWeights(info, state.step + 1, settings.maxStep, info.tgt_len);
    runOptions.loss_weights = weights.loss.data();
    runOptions.position_weights = weights.position.data();
  } else if (!data.next(segment)) {
    // train.py: the epoch ends with the iterator; train() starts the next
    // one with an empty memory.
    ++state.epoch;
    state.batchInEpoch = 0;
    data.startEpoch(session);
    if (!data.next(segment))
      fail(TXL_DATA_ERROR,
           "the train split gives no segment of {} columns of {} tokens",
           info.batch_size, info.tgt_len);
  }
}

void RankRun::backward(const LMSegment &segment) {
  // train.py: per chunk, loss.float().mean() / batch_chunk, backward
  // (gradients accumulate) and train_loss += its float value: the NLL is
  // read at the next synchronisation (settleLosses), not per chunk.
  PendingUpdate &update = pending.emplace_back();
  update.step = state.step + 1;
  const int64_t chunks = data.chunks();
  const int64_t targetRows = segment.seqLen + (alrfou ? 1 : 0);
  for (int64_t c = 0; c < chunks; ++c) {
    std::vector<int64_t> chunkData, chunkTarget;
    const bool whole = data.wholeBatch();
    if (!whole) {
      chunkData = data.chunkColumns(segment.data, segment.dataRows, c);
      chunkTarget = data.chunkColumns(segment.target, targetRows, c);
    }
    if (alrfou) {
      lossParts.resize(size_t(3 * segment.seqLen * data.chunkBatch()));
      runOptions.out_loss_parts = lossParts.data();
    }
    runOptions.dropout_offset = state.step;
    runOptions.dropout_column = columns.first + c * data.chunkBatch();
    runOptions.loss_scale_log2 = state.lossScaleLog2;
    data.enterChunk(session, c);
    std::vector<float> &nll = update.nll.emplace_back(
        static_cast<size_t>(segment.seqLen * data.chunkBatch()));
    checkStatus(txl_session_enqueue_train_segment(
        session, whole ? segment.data.data() : chunkData.data(),
        whole ? segment.target.data() : chunkTarget.data(), segment.seqLen,
        data.chunkBatch(), &runOptions, c, chunks, nll.data()));
    for (size_t part = 0; alrfou && part < 3; ++part) {
      double partSum = 0;
      for (size_t i = 0; i < nll.size(); ++i)
        partSum += lossParts[part * nll.size() + i];
      update.parts[part] += partSum / double(nll.size()) / double(chunks);
    }
  }
  // The global batch's gradient: each rank's share, summed over the ranks.
  if (comm.size() > 1)
    reducer.reduce(session);
}

double RankRun::settleLosses() {
  if (pending.empty())
    return lastLoss;
  checkStatus(txl_session_synchronize(session));
  for (const PendingUpdate &update : pending) {
    UpdateLoss result;
    const double chunks = double(update.nll.size());
    for (const std::vector<float> &nll : update.nll) {
      double sum = 0;
      for (float value : nll)
        sum += value;
      float mean = static_cast<float>(sum / static_cast<double>(nll.size()));
      result.loss += static_cast<float>(mean / static_cast<float>(chunks));
    }
    for (int part = 0; part < 3; ++part)
      result.parts[part] = update.parts[part];
    if (comm.size() > 1) {
      // The global batch's loss (every rank's the mean of as many tokens).
      double sums[4] = {result.loss, result.parts[0], result.parts[1],
                        result.parts[2]};
      comm.allreduceSum(sums, 4);
      result.loss = sums[0] / comm.size();
      for (int part = 0; part < 3; ++part)
        result.parts[part] = sums[part + 1] / comm.size();
    }
    if (!std::isfinite(result.loss))
      fail(TXL_DATA_ERROR, "the training loss is {} at step {}; {}",
           result.loss, update.step, lastCheckpoint());
    state.intervalLoss += result.loss;
    for (int part = 0; alrfou && part < 3; ++part)
      (*state.intervalParts)[part] += result.parts[part];
    lastLoss = result.loss;
  }
  pending.clear();
  return lastLoss;
}

float RankRun::optimizerStep() {
  // The optimizer's step counts the updates made (torch.optim's state
  // 'step'); train_step counts skipped ones too.
  float gradNorm = 0;
  checkStatus(txl_session_optimizer_step(
      session, state.lr, state.step + 1 - state.skippedSteps,
      state.lossScaleLog2, normParts, &gradNorm));
  bool overflow = !std::isfinite(gradNorm);
  if (overflow && !settings.lossScaling)
    fail(TXL_DATA_ERROR,
         "the gradients' norm is {} at step {}: no update was made; {}",
         gradNorm, state.step + 1, lastCheckpoint());
  ++state.step;
  if (!settings.lossScaling)
    return gradNorm;
  // apex's DynamicLossScaler: on an overflow skip the update and halve the
  // scale (not below 1); double it after `window` clean updates.
  int32_t before = state.lossScaleLog2;
  if (overflow) {
    ++state.skippedSteps;
    state.cleanSteps = 0;
    state.lossScaleLog2 = std::max(before - 1, 0);
  } else if (++state.cleanSteps == settings.lossScaleWindow) {
    state.cleanSteps = 0;
    state.lossScaleLog2 = std::min(before + 1, 120);
  }
  if (overflow || state.lossScaleLog2 != before) {
    // The norm is inf or NaN (an inf times a zero); a NaN's sign says
    // nothing, so none is printed.
    log.line(overflow
                 ? fmt::format("| step {:>8d} | gradient overflow (norm {}): "
                               "update skipped | loss scale 2^{} -> 2^{}",
                               state.step, std::fabs(gradNorm), before,
                               state.lossScaleLog2)
                 : fmt::format("| step {:>8d} | loss scale 2^{} -> 2^{} "
                               "after {} updates without overflow",
                               state.step, before, state.lossScaleLog2,
                               settings.lossScaleWindow));
    log.record({{"kind", "loss_scale"},
                {"step", state.step},
                {"overflow", overflow},
                {"loss_scale", std::ldexp(1.0, state.lossScaleLog2)}});
  }
  return gradNorm;
}

void RankRun::logInterval(double lastLoss, float gradNorm) {
  double seconds = secondsSince(intervalStart);
  double ms = seconds * 1000.0 / static_cast<double>(stepsThisInterval);
  double meanLoss = state.intervalLoss / double(state.intervalSteps);
  std::string line =
      formatTrainLine(state.epoch, state.step, state.batchInEpoch, state.lr, ms,
                      meanLoss, settings.characterLevel);
  if (alrfou)
    line += fmt::format(" | main loss {:5.2f} | layers {}/{}",
                        (*state.intervalParts)[0] / double(state.intervalSteps),
                        weights.contributingLayers, info.n_layer);
  log.line(line);
  if (!state.firstLoggedLoss)
    state.firstLoggedLoss = meanLoss;
  bool overFirst = meanLoss > kDivergenceFactor * *state.firstLoggedLoss;
  bool pplOverflow = std::isinf(std::exp(meanLoss));
  bool diverging = overFirst || pplOverflow;
  if (diverging && !warnedDivergence) {
    std::string why =
        overFirst ? fmt::format("more than {}x the first logged loss {}",
                                kDivergenceFactor, *state.firstLoggedLoss)
                  : "";
    if (pplOverflow)
      why +=
          std::string(overFirst ? ", and " : "") + "its perplexity overflows";
    log.line(fmt::format("| step {:>8d} | warning: training diverges: loss {} "
                         "is {}",
                         state.step, meanLoss, why));
    log.record({{"kind", "warning"},
                {"step", state.step},
                {"warning", "divergence"},
                {"loss", meanLoss},
                {"first_logged_loss", *state.firstLoggedLoss}});
  }
  warnedDivergence = diverging;
  nlohmann::json train = {
      {"kind", "train"},
      {"step", state.step},
      {"epoch", state.epoch},
      {"batches", state.batchInEpoch},
      {"lr", state.lr},
      {"loss", meanLoss},
      {"last_loss", lastLoss},
      {"grad_norm", gradNorm},
      {"ms_per_batch", ms},
      {"tokens_per_s",
       double(stepsThisInterval * info.batch_size * info.tgt_len) / seconds}};
  if (settings.lossScaling) {
    train["loss_scale"] = std::ldexp(1.0, state.lossScaleLog2);
    train["skipped_steps"] = state.skippedSteps;
  }
  if (alrfou) {
    // The interval means of the loss's parts (they sum to "loss"): the last
    // layer's next-character NLL, the intermediate layers' and the
    // two-ahead heads', each weighted as in the loss.
    double steps = double(state.intervalSteps);
    train["loss_main"] = (*state.intervalParts)[0] / steps;
    train["loss_intermediate_layers"] = (*state.intervalParts)[1] / steps;
    train["loss_multiple_targets"] = (*state.intervalParts)[2] / steps;
    train["contributing_layers"] = weights.contributingLayers;
    state.intervalParts->fill(0);
  }
  log.record(train);
  state.intervalLoss = 0;
  state.intervalSteps = 0;
  stepsThisInterval = 0;
  intervalStart = Clock::now();
}

void RankRun::validate() {
  // Validation replaces the session's memory; keep the training one.
  MemorySnapshot memory =
      MemorySnapshot::take(info, session, data.chunkBatch());
  double valLoss = evaluateSplit(info, session, corpus, Split::Valid, settings,
                                 options.progress, comm);
  memory.restore(session);
  ++state.evalCount;
  log.line(std::string(100, '-'));
  log.line(formatValidLine(state.evalCount, state.step, secondsSince(evalStart),
                           valLoss, settings.characterLevel));
  log.line(std::string(100, '-'));
  log.record({{"kind", "valid"},
              {"step", state.step},
              {"loss", valLoss},
              {"ppl", std::exp(valLoss)},
              {"bpc", valLoss / std::log(2.0)}});
  if (!state.bestValLoss || valLoss < *state.bestValLoss) {
    state.bestValLoss = valLoss;
    if (comm.rank() == 0) {
      TensorMap best;
      addModelTensors(info, session, best);
      writeSafeTensors(paths.best, best,
                       {{"step", std::to_string(state.step)},
                        {"valid_loss", exactDouble(valLoss)}});
    }
  }
  if (std::string_view(info.scheduler) == "dev_perf")
    state.lr = plateauStep(info, state, valLoss);
  evalStart = Clock::now();
}

void RankRun::saveCheckpoint() {
  // A checkpoint is only ever replaced by one that can be resumed (its
  // reader refuses non-finite parameters).
  for (int32_t i = 0; i < info.n_params; ++i) {
    float *parameter = nullptr;
    checkStatus(txl_session_parameter(session, i, &parameter));
    const float *values = parameter;
    const float *end = values + parameterElements(info.params[i]);
    const float *bad =
        std::find_if(values, end, [](float v) { return !std::isfinite(v); });
    if (bad != end)
      fail(TXL_DATA_ERROR,
           "update {} made parameter '{}' non-finite (element {} is {}): "
           "its checkpoint is not written; {}",
           state.step, info.params[i].name, bad - values, *bad,
           lastCheckpoint());
  }
  if (comm.size() > 1) {
    // The ranks update identical replicas from identical gradients; a
    // checkpoint is written only of replicas still identical.
    uint64_t hash = parameterHash(info, session), root0 = hash;
    comm.broadcast(&root0, sizeof root0, 0);
    double differing = hash != root0 ? 1 : 0;
    comm.allreduceSum(&differing, 1);
    if (differing > 0)
      fail(TXL_DATA_ERROR,
           "after update {} the parameters of {} rank(s) differ from rank "
           "0's (this rank's {}): the replicas diverged; {}",
           state.step, differing, hash == root0 ? "agree" : "differ",
           lastCheckpoint());
  }
  saveTrainingCheckpoint(paths.last, info, session, optimizer, state, settings,
                         data, comm);
  savedStep = state.step;
}

bool RankRun::run() {
  LMSegment segment;
  while (state.step < settings.maxStep) {
    nextSegment(segment);
    backward(segment);
    float gradNorm = optimizerStep();
    ++state.batchInEpoch;
    state.iteratorRow = data.position();
    state.lr = scheduledLr(session, state.step, state.lr, settings.maxStep);
    ++state.intervalSteps;
    ++stepsThisInterval;
    tokensDone += segment.seqLen * info.batch_size;
    log.bar.update(tokensDone);

    const bool stopNow = options.stopAfter && state.step == *options.stopAfter;
    bool saveLast = state.step % settings.checkpointInterval == 0 ||
                    state.step == settings.maxStep || stopNow;
    const bool logNow = state.step % settings.logInterval == 0;
    const bool evalNow = state.step % settings.evalInterval == 0;
    // The losses are read where something needs them (the log line, the
    // checkpoint's interval sums) and at least every kMaxPendingUpdates
    // updates, so that a non-finite loss ends the run soon.
    if (logNow || evalNow || saveLast ||
        int64_t(pending.size()) >= kMaxPendingUpdates)
      settleLosses();
    if (logNow)
      logInterval(lastLoss, gradNorm);
    if (evalNow) {
      validate();
      saveLast = true;
    }
    if (saveLast)
      saveCheckpoint();
    if (stopNow && state.step < settings.maxStep) {
      log.bar.finish();
      log.line(fmt::format("| stopped after update {} of {} (--stop-after); "
                           "--resume continues from {}",
                           state.step, settings.maxStep, paths.last));
      return false;
    }
  }
  log.bar.finish();
  return true;
}

/// One rank's run (of comm.size(); 1 without a launcher): the work
/// directory, the corpus, the session and its parameters (initialized, or
/// restored with --resume), the updates (RankRun), then train.py's test
/// evaluation with the best model. `out` is where this rank's log lines go.
void trainRank(const txl_model_info_t &info, const TrainOptions &options,
               std::FILE *out, Communicator &comm) {
  const bool root = comm.rank() == 0;
  Settings settings = resolveSettings(info, options);
  const IndexRange columns = rankColumns(info.batch_size, comm.rank(),
                                         comm.size(), "[train] batch_size");
  if (!txl_segment_grad)
    fail(TXL_INVALID_ARGUMENT,
         "this executable has no backward segment (txl_segment_grad); "
         "compile the model with --backward (the default)");
  WorkPaths paths(settings.workDir);
  std::optional<WorkDirLock> lock; // rank 0's, for the whole run
  prepareWorkDir(settings, options, paths, root, lock, out);

  Corpus corpus = loadCorpus(settings.dataset, settings.dataDir);
  if (static_cast<int64_t>(corpus.vocab.size()) != info.n_token)
    fail(TXL_DATA_ERROR,
         "the '{}' vocabulary built from {} has {} symbols but the model "
         "has n_token = {}",
         settings.dataset, settings.dataDir, corpus.vocab.size(), info.n_token);
  checkEvaluatedSplits(corpus, settings);

  txl_session_t *raw = nullptr;
  checkStatus(txl_session_create(&info, nullptr, &raw));
  SessionPtr session(raw);
  OptimizerStates optimizer(info);
  // A resumed run restores the numpy generator's state from the checkpoint.
  TrainingData data(info, corpus, settings.seed, columns);
  checkDeviceMemory(info, session.get(), data, settings, comm);
  LoopState state;
  std::optional<int64_t> savedStep;
  if (options.resume) {
    checkStatus(txl_session_reset_memory(session.get(), data.chunkBatch()));
    state = loadTrainingCheckpoint(paths.last, info, session.get(), optimizer,
                                   settings, options, data, comm);
    savedStep = state.step;
    if (root)
      truncateMetrics(paths.metrics, state.step);
  } else {
    checkStatus(txl_session_init_parameters(session.get(), settings.seed));
    data.startEpoch(session.get());
    state.lr = scheduledLr(session.get(), 0, info.lr, settings.maxStep);
    state.lossScaleLog2 = settings.lossScaleInitLog2;
    if (root)
      std::remove(paths.metrics.c_str());
  }
  if (options.stopAfter && (*options.stopAfter <= state.step ||
                            *options.stopAfter > settings.maxStep))
    fail(TXL_INVALID_ARGUMENT,
         "--stop-after {} must be after the {} updates done and at most "
         "max_step {}",
         *options.stopAfter, state.step, settings.maxStep);
  checkStatus(txl_session_set_threads(
      session.get(), clampThreads(settings.threads, data.chunkBatch(), out)));
  settings.threads = txl_session_threads(session.get());

  RunLog log(paths, out, root,
             (settings.maxStep - state.step) * info.batch_size * info.tgt_len,
             options.progress);
  logHeader(log, info, settings, state, paths, options.resume, comm, columns);
  RankRun updates(info, options, comm, settings, paths, corpus, columns,
                  session.get(), optimizer, data, state, savedStep, log);
  if (!updates.run())
    return;
  checkStatus(txl_session_report_device_memory(session.get()));
  log.line(std::string(100, '-'));
  log.line("End of training");

  // train.py evaluates the test split with the best saved model.
  struct stat st;
  if (::stat(paths.best.c_str(), &st) == 0)
    checkStatus(txl_session_load_checkpoint(session.get(), paths.best.c_str()));
  double testLoss = evaluateSplit(info, session.get(), corpus, Split::Test,
                                  settings, options.progress, comm);
  log.line(std::string(100, '='));
  log.line(settings.characterLevel
               ? fmt::format("| End of training | test loss {:5.2f} | test "
                             "bpc {:9.5f}",
                             testLoss, testLoss / std::log(2.0))
               : fmt::format("| End of training | test loss {:5.2f} | test "
                             "ppl {:9.3f}",
                             testLoss, std::exp(testLoss)));
  log.line(std::string(100, '='));
  log.record({{"kind", "test"},
              {"step", state.step},
              {"loss", testLoss},
              {"ppl", std::exp(testLoss)},
              {"bpc", testLoss / std::log(2.0)}});
}

} // namespace

void runTrainCommand(const txl_model_info_t &info, const TrainOptions &options,
                     std::FILE *out) {
  std::unique_ptr<Communicator> comm = Communicator::forThisProcess();
  // The CUDA target averages its gradients on the GPUs (NCCL).
  if (comm->size() > 1 && info.backend == TXL_BACKEND_CUDA)
    comm = withNccl(std::move(comm));
  if (comm->size() == 1) {
    trainRank(info, options, out, *comm);
    return;
  }
  // Ranks other than 0 log nowhere; a failing rank ends them all (a rank
  // left waiting in a collective would wait for ever).
  std::unique_ptr<std::FILE, int (*)(std::FILE *)> sink(
      comm->rank() == 0 ? nullptr : std::fopen("/dev/null", "w"), &std::fclose);
  try {
    trainRank(info, options, sink ? sink.get() : out, *comm);
  } catch (const Error &error) {
    std::fprintf(stderr, "error: rank %d of %d: %s\n", comm->rank(),
                 comm->size(), error.what());
    std::fflush(stderr);
    comm->abortAll(1);
    throw;
  }
}

} // namespace txl::rt

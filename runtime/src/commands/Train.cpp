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

/// The loop of one rank (of comm.size(); 1 without a launcher). Rank 0
/// writes the log, metrics.jsonl, curves.png and the checkpoints; `out` is
/// where this rank's log lines go.
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
  const int64_t batch = info.batch_size;
  // The splits the run evaluates (valid every eval_interval updates when
  // max_step reaches one, test at the end) must fill a segment, which is
  // known now, before update 1, not at the first evaluation (issue 48,
  // item 11).
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

  txl_session_t *raw = nullptr;
  checkStatus(txl_session_create(&info, nullptr, &raw));
  SessionPtr session(raw);
  OptimizerStates optimizer(info);
  // A resumed run restores the numpy generator's state from the checkpoint.
  TrainingData data(info, corpus, settings.seed, columns);
  // GPU targets: the run must fit before anything is allocated: the
  // training state, the memory of every chunk (all the rank's columns), the
  // longest segment's backward and the validation between updates.
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
  checkStatus(txl_session_check_device_memory(session.get(), &plan));
  LoopState state;
  // The update count of the last complete checkpoint, for the messages of a
  // run that stops on non-finite numbers.
  std::optional<int64_t> savedStep;
  // Whether the last log line warned of divergence (a warning is logged
  // when the loss starts diverging, not at every line while it does).
  bool warnedDivergence = false;
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

  std::ofstream logFile, metrics;
  if (root) {
    logFile.open(paths.log, std::ios::app);
    metrics.open(paths.metrics, std::ios::app);
  }
  ProgressBar bar("train",
                  (settings.maxStep - state.step) * batch * info.tgt_len,
                  stderr, root && options.progress && isatty(fileno(stderr)));
  auto log = [&](const std::string &line) {
    bar.finish();
    fmt::print(out, "{}\n", line);
    std::fflush(out);
    logFile << line << '\n' << std::flush;
  };
  auto record = [&](nlohmann::json json) {
    if (root)
      metrics << json.dump() << '\n' << std::flush;
  };

  int64_t nAll = 0, nNonEmb = 0;
  for (int32_t i = 0; i < info.n_params; ++i) {
    if (!info.params[i].trainable)
      continue;
    nAll += parameterElements(info.params[i]);
    if (std::string_view(info.params[i].name).substr(0, 7) == "layers.")
      nNonEmb += parameterElements(info.params[i]);
  }
  if (options.resume)
    log(fmt::format("| resumed from {} at step {} (epoch {})", paths.last,
                    state.step, state.epoch));
  else
    log(fmt::format("#params = {}\n#non emb params = {}", nAll, nNonEmb));
  log(fmt::format("| optim {} | lr {} | scheduler {} | warmup_step {} | "
                  "max_step {} | batch_size {} | tgt_len {} | mem_len {} | "
                  "seed {} | threads {}",
                  info.optim, info.lr, info.scheduler, info.warmup_step,
                  settings.maxStep, batch, info.tgt_len, info.mem_len,
                  settings.seed, settings.threads));
  if (comm.size() > 1)
    log(fmt::format("| data parallel | {} ranks ({}) | {} batch columns and "
                    "threads {} each",
                    comm.size(), comm.description(), columns.count,
                    settings.threads));
  if (settings.lossScaling)
    log(fmt::format("| precision fp16 | dynamic loss scale 2^{} (x2 after {} "
                    "updates without overflow, /2 and the update skipped on "
                    "an overflow)",
                    state.lossScaleLog2, settings.lossScaleWindow));

  const int64_t chunks = data.chunks();
  txl_run_options_t runOptions{};
  runOptions.mem_len = info.mem_len;
  runOptions.clamp_len = info.clamp_len;
  runOptions.same_length = info.same_length;
  // Train mode: dropout masks keyed by the seed, the update as the counter
  // offset, so a resumed run draws the same masks, and each chunk's first
  // global column, so that chunks, threads and ranks draw the masks of the
  // whole batch (runtime.h: dropout_column).
  runOptions.training = 1;
  runOptions.dropout_seed = static_cast<int64_t>(settings.seed);
  // The gradient norm's partial sums (txl_session_optimizer_step): a rank
  // adds them as one process of N·T threads does, the global slices, so
  // that the ranks clip exactly as that process.
  int32_t normParts = settings.threads;
  if (comm.size() > 1) {
    const bool onDevice = info.backend != TXL_BACKEND_CPU;
    const int32_t slices =
        onDevice ? 1
                 : int32_t(std::min<int64_t>(std::max(settings.threads, 1),
                                             data.chunkBatch()));
    normParts = comm.size() * slices;
  }
  GradientReducer reducer(comm, info);

  // Objective "alrfou": windows at random positions, the loss weighted
  // per update (AlRfou.h), and its three parts logged.
  const bool alrfou = isAlRfouObjective(info);
  if (alrfou)
    log(fmt::format("| objective alrfou | multiple positions {} | "
                    "intermediate layers {} | multiple targets {}",
                    info.multiple_positions ? "on" : "off",
                    info.intermediate_layers ? "on" : "off",
                    info.multiple_targets ? "on" : "off"));
  AlRfouWeights weights;
  std::vector<float> lossParts;
  if (alrfou && !state.intervalParts)
    state.intervalParts.emplace(std::array<double, 3>{0, 0, 0});

  std::vector<float> nll;
  auto intervalStart = Clock::now();
  auto evalStart = Clock::now();
  int64_t stepsThisInterval = 0, tokensDone = 0;
  LMSegment segment;
  while (state.step < settings.maxStep) {
    if (alrfou) {
      sampleAlRfouWindows(corpus.train, info.tgt_len, batch, data.rng(),
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
      data.startEpoch(session.get());
      if (!data.next(segment))
        fail(TXL_DATA_ERROR,
             "the train split gives no segment of {} columns of {} tokens",
             batch, info.tgt_len);
    }
    // train.py: per chunk, loss.float().mean() / batch_chunk, backward
    // (gradients accumulate) and train_loss += its float value.
    double loss = 0;
    double stepParts[3] = {0, 0, 0};
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
      data.enterChunk(session.get(), c);
      nll.resize(static_cast<size_t>(segment.seqLen * data.chunkBatch()));
      checkStatus(txl_session_train_segment(
          session.get(), whole ? segment.data.data() : chunkData.data(),
          whole ? segment.target.data() : chunkTarget.data(), segment.seqLen,
          data.chunkBatch(), &runOptions, c, chunks, nll.data()));
      double sum = 0;
      for (float value : nll)
        sum += value;
      float mean = static_cast<float>(sum / static_cast<double>(nll.size()));
      loss += static_cast<float>(mean / static_cast<float>(chunks));
      for (size_t part = 0; alrfou && part < 3; ++part) {
        double partSum = 0;
        for (size_t i = 0; i < nll.size(); ++i)
          partSum += lossParts[part * nll.size() + i];
        stepParts[part] += partSum / double(nll.size()) / double(chunks);
      }
    }
    if (comm.size() > 1) {
      // The global batch's loss (every rank's the mean of as many tokens)
      // and gradient: each rank's share, summed over the ranks.
      double sums[4] = {loss, stepParts[0], stepParts[1], stepParts[2]};
      comm.allreduceSum(sums, 4);
      loss = sums[0] / comm.size();
      for (int part = 0; part < 3; ++part)
        stepParts[part] = sums[part + 1] / comm.size();
      reducer.reduce(session.get());
    }
    // The optimizer's step counts the updates made (torch.optim's state
    // 'step'); train_step below counts skipped ones too.
    float gradNorm = 0;
    checkStatus(txl_session_optimizer_step(
        session.get(), state.lr, state.step + 1 - state.skippedSteps,
        state.lossScaleLog2, normParts, &gradNorm));
    auto lastCheckpoint = [&] {
      return savedStep ? fmt::format("{} holds the last checkpoint (step {})",
                                     paths.last, *savedStep)
                       : std::string("no checkpoint was written yet");
    };
    bool overflow = !std::isfinite(gradNorm);
    if (overflow && !settings.lossScaling)
      fail(TXL_DATA_ERROR,
           "the gradients' norm is {} at step {}: no update was made; {}",
           gradNorm, state.step + 1, lastCheckpoint());
    ++state.step;
    if (settings.lossScaling) {
      // apex's DynamicLossScaler: on an overflow skip the update and halve
      // the scale (not below 1); double it after `window` clean updates.
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
        log(overflow
                ? fmt::format("| step {:>8d} | gradient overflow (norm {}): "
                              "update skipped | loss scale 2^{} -> 2^{}",
                              state.step, std::fabs(gradNorm), before,
                              state.lossScaleLog2)
                : fmt::format("| step {:>8d} | loss scale 2^{} -> 2^{} after "
                              "{} updates without overflow",
                              state.step, before, state.lossScaleLog2,
                              settings.lossScaleWindow));
        record({{"kind", "loss_scale"},
                {"step", state.step},
                {"overflow", overflow},
                {"loss_scale", std::ldexp(1.0, state.lossScaleLog2)}});
      }
    }
    ++state.batchInEpoch;
    state.iteratorRow = data.position();
    state.lr =
        scheduledLr(session.get(), state.step, state.lr, settings.maxStep);
    state.intervalLoss += loss;
    for (int part = 0; alrfou && part < 3; ++part)
      (*state.intervalParts)[part] += stepParts[part];
    ++state.intervalSteps;
    ++stepsThisInterval;
    tokensDone += segment.seqLen * batch;
    bar.update(tokensDone);
    if (!std::isfinite(loss))
      fail(TXL_DATA_ERROR, "the training loss is {} at step {}; {}", loss,
           state.step, lastCheckpoint());

    const bool stopNow = options.stopAfter && state.step == *options.stopAfter;
    bool saveLast = state.step % settings.checkpointInterval == 0 ||
                    state.step == settings.maxStep || stopNow;
    if (state.step % settings.logInterval == 0) {
      double seconds = secondsSince(intervalStart);
      double ms = seconds * 1000.0 / static_cast<double>(stepsThisInterval);
      double meanLoss = state.intervalLoss / double(state.intervalSteps);
      std::string line =
          formatTrainLine(state.epoch, state.step, state.batchInEpoch, state.lr,
                          ms, meanLoss, settings.characterLevel);
      if (alrfou)
        line +=
            fmt::format(" | main loss {:5.2f} | layers {}/{}",
                        (*state.intervalParts)[0] / double(state.intervalSteps),
                        weights.contributingLayers, info.n_layer);
      log(line);
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
          why += std::string(overFirst ? ", and " : "") +
                 "its perplexity overflows";
        log(fmt::format("| step {:>8d} | warning: training diverges: loss {} "
                        "is {}",
                        state.step, meanLoss, why));
        record({{"kind", "warning"},
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
          {"last_loss", loss},
          {"grad_norm", gradNorm},
          {"ms_per_batch", ms},
          {"tokens_per_s",
           double(stepsThisInterval * batch * info.tgt_len) / seconds}};
      if (settings.lossScaling) {
        train["loss_scale"] = std::ldexp(1.0, state.lossScaleLog2);
        train["skipped_steps"] = state.skippedSteps;
      }
      if (alrfou) {
        // The interval means of the loss's parts (they sum to "loss"): the
        // last layer's next-character NLL, the intermediate layers' and the
        // two-ahead heads', each weighted as in the loss.
        double steps = double(state.intervalSteps);
        train["loss_main"] = (*state.intervalParts)[0] / steps;
        train["loss_intermediate_layers"] = (*state.intervalParts)[1] / steps;
        train["loss_multiple_targets"] = (*state.intervalParts)[2] / steps;
        train["contributing_layers"] = weights.contributingLayers;
        state.intervalParts->fill(0);
      }
      record(train);
      state.intervalLoss = 0;
      state.intervalSteps = 0;
      stepsThisInterval = 0;
      intervalStart = Clock::now();
    }
    if (state.step % settings.evalInterval == 0) {
      // Validation replaces the session's memory; keep the training one.
      MemorySnapshot memory =
          MemorySnapshot::take(info, session.get(), data.chunkBatch());
      double valLoss = evaluateSplit(info, session.get(), corpus, Split::Valid,
                                     settings, options.progress, comm);
      memory.restore(session.get());
      ++state.evalCount;
      log(std::string(100, '-'));
      log(formatValidLine(state.evalCount, state.step, secondsSince(evalStart),
                          valLoss, settings.characterLevel));
      log(std::string(100, '-'));
      record({{"kind", "valid"},
              {"step", state.step},
              {"loss", valLoss},
              {"ppl", std::exp(valLoss)},
              {"bpc", valLoss / std::log(2.0)}});
      if (!state.bestValLoss || valLoss < *state.bestValLoss) {
        state.bestValLoss = valLoss;
        if (root) {
          TensorMap best;
          addModelTensors(info, session.get(), best);
          writeSafeTensors(paths.best, best,
                           {{"step", std::to_string(state.step)},
                            {"valid_loss", exactDouble(valLoss)}});
        }
      }
      if (std::string_view(info.scheduler) == "dev_perf")
        state.lr = plateauStep(info, state, valLoss);
      saveLast = true;
      evalStart = Clock::now();
    }
    if (saveLast) {
      // A checkpoint is only ever replaced by one that can be resumed (its
      // reader refuses non-finite parameters).
      for (int32_t i = 0; i < info.n_params; ++i) {
        float *data = nullptr;
        checkStatus(txl_session_parameter(session.get(), i, &data));
        const float *values = data;
        const float *end = values + parameterElements(info.params[i]);
        const float *bad = std::find_if(
            values, end, [](float v) { return !std::isfinite(v); });
        if (bad != end)
          fail(TXL_DATA_ERROR,
               "update {} made parameter '{}' non-finite (element {} is {}): "
               "its checkpoint is not written; {}",
               state.step, info.params[i].name, bad - values, *bad,
               lastCheckpoint());
      }
      if (comm.size() > 1) {
        // The ranks update identical replicas from identical gradients;
        // a checkpoint is written only of replicas still identical.
        uint64_t hash = parameterHash(info, session.get()), root0 = hash;
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
      saveTrainingCheckpoint(paths.last, info, session.get(), optimizer, state,
                             settings, data, comm);
      savedStep = state.step;
    }
    if (stopNow && state.step < settings.maxStep) {
      bar.finish();
      log(fmt::format("| stopped after update {} of {} (--stop-after); "
                      "--resume continues from {}",
                      state.step, settings.maxStep, paths.last));
      return;
    }
  }
  bar.finish();
  checkStatus(txl_session_report_device_memory(session.get()));
  log(std::string(100, '-'));
  log("End of training");

  // train.py evaluates the test split with the best saved model.
  struct stat st;
  if (::stat(paths.best.c_str(), &st) == 0)
    checkStatus(txl_session_load_checkpoint(session.get(), paths.best.c_str()));
  double testLoss = evaluateSplit(info, session.get(), corpus, Split::Test,
                                  settings, options.progress, comm);
  log(std::string(100, '='));
  log(settings.characterLevel
          ? fmt::format("| End of training | test loss {:5.2f} | test bpc "
                        "{:9.5f}",
                        testLoss, testLoss / std::log(2.0))
          : fmt::format("| End of training | test loss {:5.2f} | test ppl "
                        "{:9.3f}",
                        testLoss, std::exp(testLoss)));
  log(std::string(100, '='));
  record({{"kind", "test"},
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

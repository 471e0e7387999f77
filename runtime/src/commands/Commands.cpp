//===- Commands.cpp - eval and run-segments over a session ------*- C++ -*-===//
//
// The session-driving halves of the subcommands; they follow the official
// eval.py: memory reset once, then carried across every segment of the
// split, mean NLL over all predicted tokens.
//
//===----------------------------------------------------------------------===//

#include "txl/rt/commands/Commands.h"

#include "txl/rt/commands/Progress.h"
#include "txl/rt/data/LMIterator.h"
#include "txl/rt/data/Npy.h"
#include "txl/rt/data/SafeTensors.h"
#include "txl/rt/session/ModelInfo.h"
#include "txl/rt/session/ParamInit.h"
#include "txl/rt/support/Status.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <vector>

namespace txl::rt {

void SessionDeleter::operator()(txl_session_t *session) const {
  txl_session_release(session);
}

static bool extraTensorsAllowed = false;

void setAllowExtraTensors(bool allow) { extraTensorsAllowed = allow; }
bool allowExtraTensors() { return extraTensorsAllowed; }

SessionPtr openSession(const txl_model_info_t &info, txl_segment_fn segmentFn,
                       const std::string &checkpoint, int threads,
                       txl_run_kind_t kind, int64_t qlen, int64_t memLen,
                       int64_t batch, bool kvCache) {
  txl_session_t *raw = nullptr;
  checkStatus(txl_session_create(&info, segmentFn, &raw));
  SessionPtr session(raw);
  checkStatus(txl_session_set_threads(session.get(),
                                      clampThreads(threads, batch, stderr)));
  checkStatus(txl_session_set_kv_cache(session.get(), kvCache ? 1 : 0));
  if (txl_session_kv_cache_active(session.get()) && memLen > 0) {
    int64_t floats = 0;
    checkStatus(txl_kv_cache_floats(&info, memLen, batch, &floats));
    std::fprintf(stderr,
                 "key/value cache: 2*%lld layers*2*%lld rows (the memory "
                 "and room to append)*%lld columns*%lld heads*%lld = %lld "
                 "floats (%.1f MiB; --no-kv-cache: none)\n",
                 (long long)info.n_layer, (long long)memLen, (long long)batch,
                 (long long)info.n_head, (long long)info.d_head,
                 (long long)floats, double(floats) * 4.0 / (1 << 20));
  }
  txl_device_memory_plan_t plan{};
  plan.kind = kind;
  plan.qlen = qlen;
  plan.mem_len = memLen;
  plan.batch = batch;
  plan.chunks = 1;
  checkStatus(txl_session_check_device_memory(session.get(), &plan));
  checkStatus(
      txl_session_allow_extra_tensors(session.get(), allowExtraTensors()));
  checkStatus(txl_session_load_checkpoint(session.get(), checkpoint.c_str()));
  return session;
}

namespace {

/// Reads an int64 [S, tgt_len, batch] token file with ids in [0, nToken).
NpyArray readTokenFile(const std::string &path, int64_t nToken) {
  NpyArray array = readNpy(path);
  if (array.dtype != DType::I64)
    fail(TXL_DATA_ERROR, "{}: expected int64 token ids ('<i8'), got float32",
         path);
  if (array.shape.size() != 3)
    fail(TXL_DATA_ERROR,
         "{}: expected shape [segments, tgt_len, batch], got {}", path,
         formatShape(array.shape));
  for (size_t i = 0; i < array.i64.size(); ++i) {
    int64_t id = array.i64[i];
    if (id < 0 || id >= nToken) {
      int64_t rows = array.shape[1], cols = array.shape[2];
      int64_t flat = static_cast<int64_t>(i);
      fail(TXL_DATA_ERROR,
           "{}: token id {} at [{}, {}, {}] is outside the vocabulary "
           "[0, {})",
           path, id, flat / (rows * cols), flat / cols % rows, flat % cols,
           nToken);
    }
  }
  return array;
}

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

/// The corpus of `settings` with only its split encoded; its vocabulary
/// must have info.n_token symbols.
Corpus loadEvalCorpus(const txl_model_info_t &info,
                      const EvalSettings &settings) {
  Corpus corpus =
      loadCorpus(settings.dataset, settings.dataDir, {settings.split});
  if (corpus.vocab.size() != info.n_token)
    fail(TXL_DATA_ERROR,
         "the '{}' vocabulary built from {} has {} symbols but the model "
         "has n_token = {}",
         settings.dataset, settings.dataDir, corpus.vocab.size(), info.n_token);
  return corpus;
}

/// `totalNll` (accumulated in double) over result.tokens as the result's
/// loss; a non-finite mean is an error. Writes `nll`, every predicted
/// token's NLL, when settings.dumpNll asks.
void finishResult(EvalResult &result, double totalNll,
                  const std::vector<float> &nll, const EvalSettings &settings) {
  result.loss = totalNll / static_cast<double>(result.tokens);
  if (!std::isfinite(result.loss))
    fail(TXL_DATA_ERROR, "the {} loss is {}: some token's NLL is not finite",
         splitName(settings.split), result.loss);
  if (!settings.dumpNll.empty())
    writeNpy(settings.dumpNll, {static_cast<int64_t>(nll.size())}, nll.data());
}

/// EvalSettings::slidingWindow: runEval's sliding-window evaluation.
EvalResult runSlidingWindow(const txl_model_info_t &info,
                            const EvalSettings &settings,
                            txl_segment_fn segmentFn, bool progress) {
  const int64_t window = settings.tgtLen;
  SessionPtr session =
      openSession(info, segmentFn, settings.checkpoint, settings.threads,
                  TXL_RUN_EVAL, window, /*memLen=*/0, settings.batchSize);
  Corpus corpus = loadEvalCorpus(info, settings);
  const std::vector<int64_t> &stream = corpus.stream(settings.split);
  int64_t predictions = static_cast<int64_t>(stream.size()) - 1;
  if (settings.maxTokens > 0)
    predictions = std::min(predictions, settings.maxTokens);
  if (predictions <= 0)
    fail(TXL_DATA_ERROR,
         "the {} split has {} tokens: nothing to predict (it needs at least "
         "2)",
         splitName(settings.split), stream.size());

  txl_run_options_t options{}; // eval mode, no memory
  options.clamp_len = settings.clampLen;
  EvalResult result;
  result.settings = settings;
  result.tokens = predictions;
  ProgressBar bar(std::string(splitName(settings.split)), predictions, stderr);
  std::vector<float> nll(static_cast<size_t>(predictions));
  std::vector<int64_t> data, target;
  EnqueuedOutputs outputs(session.get());
  // Runs `batch` windows of `len` tokens, window c ending before token
  // first + c, and keeps the NLL of each window's last position (once the
  // window's outputs arrive: EnqueuedOutputs).
  auto runWindows = [&](int64_t first, int64_t batch, int64_t len) {
    data.resize(static_cast<size_t>(len * batch));
    target.resize(data.size());
    for (int64_t i = 0; i < len; ++i)
      for (int64_t c = 0; c < batch; ++c) {
        int64_t at = first + c - len + i; // data[i][c] = x_{t - len + i}
        data[static_cast<size_t>(i * batch + c)] = stream[at];
        target[static_cast<size_t>(i * batch + c)] = stream[at + 1];
      }
    float *out = outputs.add(
        data.size(), [&nll, first, batch, len](const std::vector<float> &o) {
          for (int64_t c = 0; c < batch; ++c)
            nll[static_cast<size_t>(first + c - 1)] =
                o[static_cast<size_t>((len - 1) * batch + c)];
        });
    checkStatus(txl_session_reset_memory(session.get(), batch));
    checkStatus(txl_session_enqueue_segment(
        session.get(), data.data(), target.data(), len, batch, &options, out));
    outputs.enqueued();
  };
  auto start = std::chrono::steady_clock::now();
  // The start of the split: token t < window sees the t tokens before it.
  int64_t t = 1;
  for (; t <= predictions && t < window; ++t) {
    runWindows(t, 1, t);
    if (progress)
      bar.update(t);
  }
  for (; t <= predictions; t += settings.batchSize) {
    int64_t batch = std::min(settings.batchSize, predictions - t + 1);
    runWindows(t, batch, window);
    if (progress)
      bar.update(t + batch - 1);
  }
  outputs.flush();
  result.seconds = secondsSince(start);
  bar.finish();
  checkStatus(txl_session_report_device_memory(session.get()));
  double total = 0;
  for (float value : nll)
    total += value;
  finishResult(result, total, nll, settings);
  return result;
}

} // namespace

EvalResult runEval(const txl_model_info_t &info, const EvalSettings &settings,
                   txl_segment_fn segmentFn, bool progress) {
  if (settings.slidingWindow)
    return runSlidingWindow(info, settings, segmentFn, progress);
  // The checkpoint first: it is cheap to check and the likelier mistake.
  SessionPtr session = openSession(
      info, segmentFn, settings.checkpoint, settings.threads, TXL_RUN_EVAL,
      settings.tgtLen, settings.memLen, settings.batchSize, settings.kvCache);
  Corpus corpus = loadEvalCorpus(info, settings);

  // Ordered data sets stream the split through LMOrderedIterator; lm1b is
  // read sentence by sentence through LMShuffledIterator without shuffling,
  // as the official get_iterator gives eval.py.
  SplitIterator segments(corpus, settings.split, settings.batchSize,
                         settings.tgtLen);
  const int64_t expectedTokens = segments.expectedTokens();

  txl_run_options_t options{}; // eval mode: no dropout
  options.mem_len = settings.memLen;
  options.clamp_len = settings.clampLen;
  options.same_length = settings.sameLength ? 1 : 0;
  EvalResult result;
  result.settings = settings;
  ProgressBar bar(std::string(splitName(settings.split)), expectedTokens,
                  stderr);
  // Every token's NLL is kept only for --dump-nll.
  std::vector<float> all;
  double totalNll = 0;
  // Summed in segment order, as each segment's NLL arrives.
  EnqueuedOutputs outputs(session.get());
  auto consume = [&](const std::vector<float> &nll) {
    for (float value : nll)
      totalNll += value;
    if (!settings.dumpNll.empty())
      all.insert(all.end(), nll.begin(), nll.end());
  };
  auto start = std::chrono::steady_clock::now();
  checkStatus(txl_session_reset_memory(session.get(), settings.batchSize));
  LMSegment segment;
  while (segments.next(segment)) {
    float *nll = outputs.add(
        static_cast<size_t>(segment.seqLen * segment.batch), consume);
    ++result.segments;
    result.kvCacheSegments += txl_session_kv_cache_ready(session.get());
    checkStatus(txl_session_enqueue_segment(
        session.get(), segment.data.data(), segment.target.data(),
        segment.seqLen, segment.batch, &options, nll));
    outputs.enqueued();
    result.tokens += segment.seqLen * segment.batch;
    if (progress)
      bar.update(result.tokens);
  }
  outputs.flush();
  result.seconds = secondsSince(start);
  bar.finish();
  checkStatus(txl_session_report_device_memory(session.get()));
  if (result.tokens == 0)
    fail(TXL_DATA_ERROR, "the {} split yielded no segment at batch size {}",
         splitName(settings.split), settings.batchSize);
  finishResult(result, totalNll, all, settings);
  return result;
}

void runEvalCommand(const txl_model_info_t &info, const EvalOptions &options,
                    std::FILE *out, txl_segment_fn segmentFn) {
  EvalSettings settings = resolveEvalSettings(info, options);
  EvalResult result = runEval(info, settings, segmentFn, options.progress);
  std::string text = formatEvalLine(splitName(settings.split), result.loss,
                                    isCharacterDataset(settings.dataset)) +
                     "\n" + formatEvalStats(result) + "\n";
  if (options.json)
    text += formatEvalJson(result) + "\n";
  std::fputs(text.c_str(), out);
  std::fflush(out);
}

void runSegmentsCommand(const txl_model_info_t &info,
                        const RunSegmentsOptions &options, std::FILE *out,
                        txl_segment_fn segmentFn) {
  int64_t memLen = options.memLen.value_or(info.mem_len);
  int64_t clampLen = options.clampLen.value_or(info.clamp_len);
  bool sameLength = options.sameLength.value_or(info.same_length != 0);
  checkRunSettings(memLen, sameLength, options.threads);

  NpyArray inputs = readTokenFile(options.inputs, info.n_token);
  NpyArray targets = readTokenFile(options.targets, info.n_token);
  if (inputs.shape != targets.shape)
    fail(TXL_DATA_ERROR, "{}: shape {} differs from {} in {}", options.targets,
         formatShape(targets.shape), formatShape(inputs.shape), options.inputs);
  int64_t numSegments = inputs.shape[0], tgtLen = inputs.shape[1],
          batch = inputs.shape[2];
  if (tgtLen <= 0 || batch <= 0)
    fail(TXL_DATA_ERROR, "{}: tgt_len and batch must be positive, got {}",
         options.inputs, formatShape(inputs.shape));
  if (numSegments == 0)
    fail(TXL_DATA_ERROR, "{}: no segment to run (shape {})", options.inputs,
         formatShape(inputs.shape));
  if (!options.dumpGrads.empty() && options.gradSegment < 0)
    fail(TXL_INVALID_ARGUMENT,
         "--dump-grads needs --grad-segment (the segment whose gradients to "
         "write)");

  SessionPtr session =
      openSession(info, segmentFn, options.checkpoint, options.threads,
                  options.gradSegment >= 0 ? TXL_RUN_GRADIENTS : TXL_RUN_EVAL,
                  tgtLen, memLen, batch, options.kvCache);
  checkStatus(txl_session_reset_memory(session.get(), batch));
  txl_run_options_t runOptions{}; // eval mode: no dropout
  runOptions.mem_len = memLen;
  runOptions.clamp_len = clampLen;
  runOptions.same_length = sameLength ? 1 : 0;

  size_t block = static_cast<size_t>(tgtLen * batch);
  std::vector<float> nll(static_cast<size_t>(numSegments) * block);
  TensorMap mems;
  double totalNll = 0;
  if (options.gradSegment >= numSegments)
    fail(TXL_INVALID_ARGUMENT, "--grad-segment {} is past the last segment {}",
         options.gradSegment, numSegments - 1);
  if (options.gradSegment >= 0 && options.dumpGrads.empty())
    fail(TXL_INVALID_ARGUMENT, "--grad-segment needs --dump-grads");
  if (options.gradSegment >= 0 && isAlRfouObjective(info))
    fail(TXL_INVALID_ARGUMENT,
         "--grad-segment: objective 'alrfou' differentiates the loss of "
         "train's windows (tgt_len + 1 targets, an update's loss weights); "
         "train --stop-after N with SGD at momentum 0 keeps update N's "
         "gradients as the checkpoint's momentum buffers (docs/alrfou.md)");
  // One buffer per parameter (trainable ones are written).
  std::vector<std::vector<float>> grads(info.n_params);
  std::vector<float *> gradPtrs(info.n_params, nullptr);
  for (int32_t i = 0; i < info.n_params; ++i) {
    if (!info.params[i].trainable)
      continue;
    grads[i].resize(size_t(parameterElements(info.params[i])));
    gradPtrs[i] = grads[i].data();
  }
  int64_t kvCacheSegments = 0;
  for (int64_t s = 0; s < numSegments; ++s) {
    size_t offset = static_cast<size_t>(s) * block;
    if (s != options.gradSegment)
      kvCacheSegments += txl_session_kv_cache_ready(session.get());
    if (s == options.gradSegment)
      checkStatus(txl_session_run_segment_grad(
          session.get(), inputs.i64.data() + offset,
          targets.i64.data() + offset, tgtLen, batch, &runOptions,
          nll.data() + offset, gradPtrs.data()));
    else
      checkStatus(
          txl_session_run_segment(session.get(), inputs.i64.data() + offset,
                                  targets.i64.data() + offset, tgtLen, batch,
                                  &runOptions, nll.data() + offset));
    double segmentNll = 0;
    for (size_t i = 0; i < block; ++i)
      segmentNll += nll[offset + i];
    totalNll += segmentNll;
    int64_t mlen = 0;
    if (!options.dumpMems.empty() && memLen > 0) {
      for (int64_t l = 0; l <= info.n_layer; ++l) {
        const float *data = nullptr;
        checkStatus(txl_session_memory(session.get(), l, &data, &mlen));
        mems[fmt::format("seg{}.layer{}", s, l)] =
            TensorBlob::f32({mlen, batch, info.d_model}, data);
      }
    }
    fmt::print(out, "| segment {} | loss {:.6f} | tokens {} |\n", s,
               segmentNll / static_cast<double>(block), block);
  }
  int64_t tokens = numSegments * static_cast<int64_t>(block);
  fmt::print(out, "| segments {} | loss {:.6f} | tokens {} |\n", numSegments,
             tokens ? totalNll / static_cast<double>(tokens) : 0.0, tokens);
  std::fflush(out);
  if (txl_session_kv_cache_active(session.get()))
    fmt::print(stderr, "key/value cache: used by {} of {} segments\n",
               kvCacheSegments, numSegments);
  checkStatus(txl_session_report_device_memory(session.get()));

  if (!options.dumpNll.empty())
    writeNpy(options.dumpNll, {numSegments, tgtLen, batch}, nll.data());
  if (!options.dumpMems.empty())
    writeSafeTensors(options.dumpMems, mems);
  if (options.gradSegment >= 0) {
    TensorMap out;
    for (int32_t i = 0; i < info.n_params; ++i) {
      const txl_param_info_t &p = info.params[i];
      if (p.trainable)
        out[p.name] =
            TensorBlob::f32(Shape(p.shape, p.shape + p.rank), grads[i].data());
    }
    writeSafeTensors(options.dumpGrads, out);
  }
  // After the dumps, which show where it went wrong.
  if (!std::isfinite(totalNll)) {
    auto bad = std::find_if(nll.begin(), nll.end(),
                            [](float v) { return !std::isfinite(v); });
    size_t at = static_cast<size_t>(bad - nll.begin());
    fail(TXL_DATA_ERROR,
         "the loss is not finite: token {} of segment {} (column {}) has NLL "
         "{}",
         at % block / static_cast<size_t>(batch), at / block,
         at % static_cast<size_t>(batch), bad == nll.end() ? totalNll : *bad);
  }
}

void runInitCommand(const txl_model_info_t &info, int64_t seed,
                    const std::string &path, std::FILE *out) {
  if (seed < 0)
    fail(TXL_INVALID_ARGUMENT, "--seed must not be negative, got {}", seed);
  TensorMap tensors;
  int64_t total = 0;
  std::vector<float> values;
  for (int32_t i = 0; i < info.n_params; ++i) {
    const txl_param_info_t &p = info.params[i];
    Shape shape(p.shape, p.shape + p.rank);
    int64_t count = 0;
    if (!checkedNumElements(shape, sizeof(float), count))
      fail(TXL_INVALID_ARGUMENT, "parameter '{}' of shape {} is too large",
           p.name, formatShape(shape));
    values.assign(static_cast<size_t>(count), 0.0f);
    initParameter(info, i, static_cast<uint64_t>(seed), values.data());
    tensors[p.name] = TensorBlob::f32(shape, values.data());
    total += static_cast<int64_t>(values.size());
  }
  writeSafeTensors(path, tensors);
  fmt::print(out,
             "| wrote {} tensors ({} values) initialised from seed {} "
             "to {} |\n",
             tensors.size(), total, seed, path);
  std::fflush(out);
}

} // namespace txl::rt

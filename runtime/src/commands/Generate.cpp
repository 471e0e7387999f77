//===- Generate.cpp - Text generation and scoring ----------------===//

#include "txl/rt/commands/Generate.h"

#include "txl/rt/commands/Commands.h"
#include "txl/rt/data/Corpus.h"
#include "txl/rt/data/Text.h"
#include "txl/rt/support/File.h"
#include "txl/rt/support/Status.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

namespace txl::rt {

int64_t sampleToken(const std::vector<float> &logProbs, double temperature,
                    int64_t topK, double topP, double uniform) {
  const int64_t n = static_cast<int64_t>(logProbs.size());
  if (n == 0)
    fail(TXL_INVALID_ARGUMENT, "an empty distribution");
  if (temperature == 0.0)
    return std::max_element(logProbs.begin(), logProbs.end()) -
           logProbs.begin();
  // Token ids by decreasing probability (ties: lower id first).
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    float pa = logProbs[size_t(a)], pb = logProbs[size_t(b)];
    return pa > pb || (pa == pb && a < b);
  });
  int64_t keep = topK > 0 ? std::min(topK, n) : n;
  // softmax(logProbs / T) over the kept tokens, in double.
  const double top = logProbs[size_t(order[0])] / temperature;
  std::vector<double> p(static_cast<size_t>(keep));
  double total = 0;
  for (int64_t i = 0; i < keep; ++i)
    total += p[size_t(i)] =
        std::exp(logProbs[size_t(order[size_t(i)])] / temperature - top);
  if (topP < 1.0) {
    double mass = 0;
    for (int64_t i = 0; i < keep; ++i) {
      mass += p[size_t(i)] / total;
      if (mass >= topP) {
        keep = i + 1;
        break;
      }
    }
    total = std::accumulate(p.begin(), p.begin() + keep, 0.0);
  }
  double target = uniform * total, cumulative = 0;
  for (int64_t i = 0; i < keep; ++i) {
    cumulative += p[size_t(i)];
    if (target < cumulative)
      return order[size_t(i)];
  }
  return order[size_t(keep - 1)];
}

namespace {

/// The vocabulary of the model's dataset (the reader's, built from the
/// data directory), checked against n_token.
Vocab loadVocabulary(const txl_model_info_t &info, std::string dataDir,
                     std::string dataset) {
  if (dataset.empty())
    dataset = info.dataset ? info.dataset : "";
  if (dataDir.empty())
    dataDir = info.data_path ? info.data_path : "";
  if (dataset.empty())
    fail(TXL_INVALID_ARGUMENT,
         "no dataset: the vocabulary comes from the model's dataset; pass "
         "--dataset (the model file has no [data] dataset)");
  if (dataDir.empty())
    fail(TXL_INVALID_ARGUMENT,
         "no data directory: the vocabulary is built from the dataset's "
         "files; pass --data");
  Corpus corpus = loadCorpus(dataset, dataDir, {});
  if (corpus.vocab.size() != info.n_token)
    fail(TXL_DATA_ERROR,
         "the '{}' vocabulary built from {} has {} symbols but the model has "
         "n_token = {}",
         dataset, dataDir, corpus.vocab.size(), info.n_token);
  return std::move(corpus.vocab);
}

/// Fails unless the executable has txl_segment_log_probs (Generate.h).
void requireDistribution() {
  if (!txl_segment_log_probs)
    fail(TXL_INVALID_ARGUMENT,
         "this executable has no distribution entry (txl_segment_log_probs):"
         " compile the model again with this txlc");
}

std::string datasetOf(const txl_model_info_t &info, const std::string &given) {
  return given.empty() ? std::string(info.dataset ? info.dataset : "") : given;
}

/// The evaluation settings (eval.py's) every call of generate/score uses.
txl_run_options_t evalRunOptions(const txl_model_info_t &info) {
  txl_run_options_t options{};
  options.mem_len = info.eval_mem_len;
  options.clamp_len = info.eval_clamp_len;
  options.same_length = info.eval_same_length;
  return options;
}

/// Runs `ids` [count] through the session in segments of at most `tgtLen`
/// (batch 1, memory carried), writing each position's log-probabilities
/// [count, n_token] into `out` when not null, else only the last one's into
/// `last`.
void runTokens(const txl_model_info_t &info, txl_session_t *session,
               const int64_t *ids, int64_t count, int64_t tgtLen,
               const txl_run_options_t &options, std::vector<float> *out,
               std::vector<float> &last) {
  const size_t vocab = static_cast<size_t>(info.n_token);
  std::vector<float> block;
  if (out)
    out->resize(size_t(count) * vocab);
  for (int64_t start = 0; start < count; start += tgtLen) {
    int64_t qlen = std::min(tgtLen, count - start);
    block.resize(size_t(qlen) * vocab);
    checkStatus(txl_session_run_segment_log_probs(session, ids + start, qlen, 1,
                                                  &options, block.data()));
    if (out)
      std::copy(block.begin(), block.end(),
                out->begin() + std::ptrdiff_t(size_t(start) * vocab));
    if (start + qlen == count)
      last.assign(block.end() - std::ptrdiff_t(vocab), block.end());
  }
}

} // namespace

void runGenerateCommand(const txl_model_info_t &info,
                        const GenerateOptions &options, std::FILE *out) {
  if (options.prompt.has_value() == options.promptFile.has_value())
    fail(TXL_INVALID_ARGUMENT, "give the prompt with --prompt or --prompt-file "
                               "(one of them)");
  if (options.maxNewTokens < 0)
    fail(TXL_INVALID_ARGUMENT, "--max-new-tokens must be >= 0, got {}",
         options.maxNewTokens);
  if (!(options.temperature >= 0.0) || !std::isfinite(options.temperature))
    fail(TXL_INVALID_ARGUMENT, "--temperature must be >= 0, got {}",
         options.temperature);
  if (options.topK < 0)
    fail(TXL_INVALID_ARGUMENT, "--top-k must be >= 0, got {}", options.topK);
  if (!(options.topP > 0.0 && options.topP <= 1.0))
    fail(TXL_INVALID_ARGUMENT, "--top-p must be in (0, 1], got {}",
         options.topP);
  requireDistribution();
  const std::string dataset = datasetOf(info, options.dataset);
  Vocab vocab = loadVocabulary(info, options.dataDir, options.dataset);
  std::string text =
      options.prompt ? *options.prompt : readFile(*options.promptFile);
  std::vector<int64_t> ids = encodeUserText(
      dataset, vocab, text, options.prompt ? "--prompt" : *options.promptFile);
  if (ids.empty())
    fail(TXL_INVALID_ARGUMENT, "the prompt has no tokens");
  const size_t promptTokens = ids.size();

  const int64_t tgtLen = info.eval_tgt_len;
  const txl_run_options_t runOptions = evalRunOptions(info);
  const bool memory = runOptions.mem_len > 0;
  SessionPtr session = openSession(
      info, nullptr, options.checkpoint, options.threads, TXL_RUN_LOG_PROBS,
      info.eval_tgt_len, runOptions.mem_len, 1, options.kvCache);
  checkStatus(txl_session_reset_memory(session.get(), 1));

  std::vector<float> last;
  auto window = [&] {
    // No memory: the last tgt_len tokens from scratch.
    int64_t count = std::min<int64_t>(tgtLen, int64_t(ids.size()));
    checkStatus(txl_session_reset_memory(session.get(), 1));
    runTokens(info, session.get(), ids.data() + ids.size() - size_t(count),
              count, tgtLen, runOptions, nullptr, last);
  };
  if (memory)
    runTokens(info, session.get(), ids.data(), int64_t(ids.size()), tgtLen,
              runOptions, nullptr, last);
  else
    window();

  std::mt19937_64 rng(options.seed);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  Detokenizer detokenizer(dataset, vocab);
  std::vector<double> chosenLogProbs;
  std::string generated;
  for (int64_t i = 0; i < options.maxNewTokens; ++i) {
    int64_t next = sampleToken(last, options.temperature, options.topK,
                               options.topP, uniform(rng));
    chosenLogProbs.push_back(last[size_t(next)]);
    ids.push_back(next);
    std::string piece = detokenizer.next(next);
    generated += piece;
    if (!options.json) {
      std::fputs(piece.c_str(), out);
      std::fflush(out);
    }
    if (i + 1 == options.maxNewTokens)
      break;
    if (memory)
      runTokens(info, session.get(), &ids.back(), 1, tgtLen, runOptions,
                nullptr, last);
    else
      window();
  }
  if (options.json) {
    nlohmann::json result = {
        {"prompt_tokens", promptTokens},
        {"prompt",
         std::vector<int64_t>(ids.begin(),
                              ids.begin() + std::ptrdiff_t(promptTokens))},
        {"tokens", std::vector<int64_t>(
                       ids.begin() + std::ptrdiff_t(promptTokens), ids.end())},
        {"log_probs", chosenLogProbs},
        {"text", generated}};
    fmt::print(out, "{}\n", result.dump());
  } else {
    fmt::print(out, "\n");
  }
}

void runScoreCommand(const txl_model_info_t &info, const ScoreOptions &options,
                     std::FILE *out) {
  if (options.topK < 0)
    fail(TXL_INVALID_ARGUMENT, "--top-k must be >= 0, got {}", options.topK);
  requireDistribution();
  const std::string dataset = datasetOf(info, options.dataset);
  Vocab vocab = loadVocabulary(info, options.dataDir, options.dataset);
  std::vector<int64_t> ids = encodeUserText(
      dataset, vocab, readFile(options.textFile), options.textFile);
  if (ids.size() < 2)
    fail(TXL_INVALID_ARGUMENT, "{}: fewer than 2 tokens: nothing to score",
         options.textFile);
  const txl_run_options_t runOptions = evalRunOptions(info);
  SessionPtr session = openSession(
      info, nullptr, options.checkpoint, options.threads, TXL_RUN_LOG_PROBS,
      info.eval_tgt_len, runOptions.mem_len, 1, options.kvCache);
  checkStatus(txl_session_reset_memory(session.get(), 1));
  std::vector<float> logProbs, last;
  // Every position but the last predicts the token after it.
  const int64_t count = int64_t(ids.size()) - 1;
  runTokens(info, session.get(), ids.data(), count, info.eval_tgt_len,
            runOptions, &logProbs, last);
  const size_t vocabSize = size_t(info.n_token);
  for (int64_t i = 0; i < count; ++i) {
    const float *row = logProbs.data() + size_t(i) * vocabSize;
    int64_t target = ids[size_t(i) + 1];
    float lp = row[target];
    int64_t rank = 1;
    for (size_t k = 0; k < vocabSize; ++k)
      if (row[k] > lp || (row[k] == lp && int64_t(k) < target))
        ++rank;
    std::vector<int64_t> order(vocabSize);
    std::iota(order.begin(), order.end(), 0);
    size_t top = std::min(size_t(options.topK), vocabSize);
    std::partial_sort(order.begin(), order.begin() + std::ptrdiff_t(top),
                      order.end(), [&](int64_t a, int64_t b) {
                        return row[a] > row[b] || (row[a] == row[b] && a < b);
                      });
    nlohmann::json alternatives = nlohmann::json::array();
    for (size_t k = 0; k < top; ++k)
      alternatives.push_back({vocab.symbol(order[k]), row[order[k]]});
    nlohmann::json line = {{"position", i + 1}, {"token", vocab.symbol(target)},
                           {"id", target},      {"log_prob", lp},
                           {"rank", rank},      {"top", alternatives}};
    fmt::print(out, "{}\n", line.dump());
  }
}

} // namespace txl::rt

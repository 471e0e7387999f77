//===- CommandSupport.cpp - Defaults, validation and reports ----*- C++ -*-===//
//
// The parts of the subcommands that need no session (and so no generated
// model): option defaults from `txl_model_info_t`, validation and the
// official eval.py output format.
//
//===----------------------------------------------------------------------===//

#include "txl/rt/commands/Commands.h"

#include "txl/rt/support/Status.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <thread>

namespace txl::rt {

namespace {

/// `value` unless NULL.
std::string orEmpty(const char *value) { return value ? value : ""; }

} // namespace

void checkRunSettings(int64_t memLen, bool sameLength, int threads) {
  if (memLen < 0)
    fail(TXL_INVALID_ARGUMENT, "mem_len must not be negative, got {}", memLen);
  if (memLen > kMaxMemLen)
    fail(TXL_INVALID_ARGUMENT,
         "mem_len {} is more than the {} rows a run may keep", memLen,
         kMaxMemLen);
  if (sameLength && memLen == 0)
    fail(TXL_INVALID_ARGUMENT,
         "same_length requires mem_len > 0 (the official same_length mask is "
         "defined over memory)");
  if (threads < 0)
    fail(TXL_INVALID_ARGUMENT, "threads must not be negative, got {}", threads);
}

int clampThreads(int threads, int64_t batch, std::FILE *log) {
  int64_t cores = std::max(1u, std::thread::hardware_concurrency());
  int64_t bound = std::max(batch, cores);
  if (threads <= bound)
    return threads;
  fmt::print(log,
             "note: --threads {} is more than the {} batch columns and the {} "
             "cores: using {}\n",
             threads, batch, cores, bound);
  std::fflush(log);
  return static_cast<int>(bound);
}

EvalSettings resolveEvalSettings(const txl_model_info_t &info,
                                 const EvalOptions &options) {
  EvalSettings settings;
  std::optional<Split> split = parseSplit(options.split);
  if (!split)
    fail(TXL_INVALID_ARGUMENT,
         "unknown split '{}' (expected train, valid or test)", options.split);
  settings.split = *split;

  settings.dataset =
      options.dataset.empty() ? orEmpty(info.dataset) : options.dataset;
  if (settings.dataset.empty())
    fail(TXL_INVALID_ARGUMENT,
         "no dataset: the model file sets no [data] dataset; pass --dataset");
  datasetSpec(settings.dataset); // rejects unsupported datasets early
  settings.dataDir =
      options.dataDir.empty() ? orEmpty(info.data_path) : options.dataDir;
  if (settings.dataDir.empty())
    fail(TXL_INVALID_ARGUMENT,
         "no data directory: the model file sets no [data] data_path; pass "
         "--data");
  if (options.checkpoint.empty())
    fail(TXL_INVALID_ARGUMENT, "no checkpoint: pass --checkpoint");
  settings.checkpoint = options.checkpoint;

  settings.tgtLen = options.tgtLen.value_or(info.eval_tgt_len);
  settings.memLen = options.memLen.value_or(info.eval_mem_len);
  settings.clampLen = options.clampLen.value_or(info.eval_clamp_len);
  settings.batchSize = options.batchSize.value_or(info.eval_batch_size);
  settings.sameLength = options.sameLength.value_or(info.eval_same_length != 0);
  settings.threads = options.threads;
  settings.kvCache = options.kvCache;
  if (settings.tgtLen <= 0)
    fail(TXL_INVALID_ARGUMENT, "tgt_len must be positive, got {}",
         settings.tgtLen);
  if (settings.batchSize <= 0)
    fail(TXL_INVALID_ARGUMENT, "batch size must be positive, got {}",
         settings.batchSize);
  settings.slidingWindow = options.slidingWindow;
  settings.maxTokens = options.maxTokens;
  settings.dumpNll = options.dumpNll;
  if (options.maxTokens < 0)
    fail(TXL_INVALID_ARGUMENT, "--max-tokens must not be negative, got {}",
         options.maxTokens);
  if (options.maxTokens != 0 && !options.slidingWindow)
    fail(TXL_INVALID_ARGUMENT,
         "--max-tokens applies to --sliding-window only (the ordered "
         "evaluation runs the whole split)");
  if (options.slidingWindow) {
    // Every window runs from scratch: no memory, so no same_length mask.
    if (options.memLen.value_or(0) != 0)
      fail(TXL_INVALID_ARGUMENT,
           "--sliding-window runs every window from scratch: --mem-len must "
           "be 0, got {}",
           *options.memLen);
    if (options.sameLength.value_or(false))
      fail(TXL_INVALID_ARGUMENT,
           "--sliding-window runs every window without memory: same_length "
           "needs memory");
    if (datasetSpec(settings.dataset).sentenceLevel)
      fail(TXL_INVALID_ARGUMENT,
           "--sliding-window slides over one token stream; the '{}' dataset "
           "is read sentence by sentence",
           settings.dataset);
    settings.memLen = 0;
    settings.sameLength = false;
  }
  checkRunSettings(settings.memLen, settings.sameLength, settings.threads);
  return settings;
}

double EvalResult::ppl() const { return std::exp(loss); }

double EvalResult::bpc() const { return loss / std::log(2.0); }

double EvalResult::tokensPerSecond() const {
  return seconds > 0 ? static_cast<double>(tokens) / seconds : 0.0;
}

std::string formatEvalLine(std::string_view split, double loss,
                           bool characterLevel) {
  if (characterLevel)
    return fmt::format("| {0} loss {1:5.2f} | {0} bpc {2:9.5f}", split, loss,
                       loss / std::log(2.0));
  return fmt::format("| {0} loss {1:5.2f} | {0} ppl {2:9.3f}", split, loss,
                     std::exp(loss));
}

std::string formatEvalStats(const EvalResult &result) {
  return fmt::format("| {} tokens {} | time {:.2f}s | {:.1f} tokens/s",
                     splitName(result.settings.split), result.tokens,
                     result.seconds, result.tokensPerSecond());
}

std::string formatEvalJson(const EvalResult &result) {
  const EvalSettings &s = result.settings;
  nlohmann::ordered_json json = {
      {"split", std::string(splitName(s.split))},
      {"dataset", s.dataset},
      {"loss", result.loss},
      {"ppl", result.ppl()},
      {"bpc", result.bpc()},
      {"tokens", result.tokens},
      {"seconds", result.seconds},
      {"tokens_per_s", result.tokensPerSecond()},
      {"segments", result.segments},
      {"kv_cache_segments", result.kvCacheSegments},
      {"tgt_len", s.tgtLen},
      {"mem_len", s.memLen},
      {"clamp_len", s.clampLen},
      {"same_length", s.sameLength},
      {"batch_size", s.batchSize},
      {"sliding_window", s.slidingWindow},
  };
  return json.dump();
}

EnqueuedOutputs::~EnqueuedOutputs() {
  if (!pending_.empty())
    txl_status_free(txl_session_synchronize(session_));
}

float *EnqueuedOutputs::add(size_t size, Consume consume) {
  pending_.emplace_back(std::vector<float>(size), std::move(consume));
  return pending_.back().first.data();
}

void EnqueuedOutputs::enqueued() {
  if (pending_.size() >= segmentsPerSync_)
    flush();
}

void EnqueuedOutputs::flush() {
  checkStatus(txl_session_synchronize(session_));
  for (const auto &[values, consume] : pending_)
    consume(values);
  pending_.clear();
}

} // namespace txl::rt

//===- Generate.h - Text generation and scoring ------------------*- C++
//-*-===//
//
// `<model> generate` and `<model> score`: the model's distribution
// (txl_session_run_segment_log_probs) over text a user gives, with the
// memory carried as in evaluation. The text is read and written as the
// model's dataset reads and writes it (Text.h).
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_GENERATE_H
#define TXL_RT_GENERATE_H

#include "txl/runtime.h"

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace txl::rt {

/// What generation samples from: the log-probabilities `logProbs` [n] of one
/// position. `temperature` 0 is greedy (the most likely token, the lowest id
/// among equals); otherwise the distribution softmax(logProbs /
/// temperature) cut to its `topK` most likely tokens (0: all) and then to
/// the smallest set of most likely tokens whose probability reaches `topP`
/// (nucleus sampling; 1: all), renormalised, and sampled with `uniform` in
/// [0, 1).
int64_t sampleToken(const std::vector<float> &logProbs, double temperature,
                    int64_t topK, double topP, double uniform);

/// `generate` options (runtime/src/commands/main.cpp documents each).
struct GenerateOptions {
  std::string dataDir, dataset, checkpoint;
  std::optional<std::string> prompt, promptFile;
  int64_t maxNewTokens = 100;
  double temperature = 1.0;
  int64_t topK = 0;
  double topP = 1.0;
  uint64_t seed = 0;
  bool json = false;
  int threads = 0;
  bool kvCache = true; ///< --no-kv-cache clears it
};

/// Runs the prompt through the model in segments of the evaluation tgt_len
/// with the evaluation memory (eval_mem_len, eval_clamp_len,
/// eval_same_length), then predicts one token at a time (qlen 1) with the
/// memory carried, so nothing is recomputed per new token; a model without
/// memory (eval_mem_len 0) runs the window of the last tgt_len tokens from
/// scratch for each. Streams the new text to `out` as it is produced, or
/// with `json` prints one JSON object at the end: {"prompt_tokens",
/// "prompt" (its ids), "tokens" (the new ids), "log_probs" (of each chosen
/// token), "text"}. Errors:
/// invalid options, an empty prompt, a model without
/// txl_segment_log_probs, a vocabulary that is not n_token symbols.
void runGenerateCommand(const txl_model_info_t &info,
                        const GenerateOptions &options, std::FILE *out);

/// `score` options.
struct ScoreOptions {
  std::string dataDir, dataset, checkpoint, textFile;
  int64_t topK = 5;
  int threads = 0;
  bool kvCache = true; ///< --no-kv-cache clears it
};

/// Scores every token of `textFile` after its first, as `eval` runs a split
/// (segments of the evaluation tgt_len, memory carried, batch 1): one JSON
/// line per token, {"position", "token", "id", "log_prob", "rank" (1: the
/// most likely), "top": [[token, log_prob], ...] (the `topK` most likely)}.
void runScoreCommand(const txl_model_info_t &info, const ScoreOptions &options,
                     std::FILE *out);

} // namespace txl::rt

#endif // TXL_RT_GENERATE_H

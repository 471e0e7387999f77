//===- Commands.h - The generated executable's subcommands ------*- C++ -*-===//
//
// What `<model> eval` and `<model> run-segments` do, as functions over a
// `txl_model_info_t` and the session C API, so that the main stays a thin
// CLI11 layer. Pure parts (defaults, validation, report formatting) live in
// CommandSupport.cpp and can be used without linking a model; the runners in
// Commands.cpp drive a `txl_session_t`.
//
// Every failure throws `txl::rt::Error` with a complete message.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_COMMANDS_H
#define TXL_RT_COMMANDS_H

#include "txl/rt/data/Corpus.h"
#include "txl/rt/session/ModelInfo.h"
#include "txl/runtime.h"

#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace txl::rt {

//===----------------------------------------------------------------------===//
// eval
//===----------------------------------------------------------------------===//

/// `eval` options as given; unset ones take the model's defaults.
struct EvalOptions {
  std::string dataDir; ///< --data; default info.data_path
  std::string split = "valid";
  std::string checkpoint; ///< --checkpoint (required)
  std::string dataset;    ///< --dataset; default info.dataset
  std::optional<int64_t> tgtLen, memLen, clampLen, batchSize;
  std::optional<bool> sameLength;
  int threads = 0;     ///< txl_session_set_threads; 0 = all cores
  bool kvCache = true; ///< txl_session_set_kv_cache (--no-kv-cache)
  bool json = false;
  bool progress = true; ///< draw the bar (only ever on a terminal)
  /// --sliding-window: the evaluation of Al-Rfou et al. (2018) that the
  /// Transformer-XL paper compares with (§4.3, Table 9): every token is
  /// predicted from the tgt_len tokens before it (fewer at the start of the
  /// split), the model run on that window from scratch (no memory) and only
  /// its last position's prediction kept.
  bool slidingWindow = false;
  /// --max-tokens: with --sliding-window, predict only the split's first
  /// N tokens after its first (0 = all).
  int64_t maxTokens = 0;
  /// --dump-nll: float32 .npy [tokens] of every predicted token's NLL in
  /// evaluation order (the ordered iterator's [segment, position, column],
  /// or text order for --sliding-window).
  std::string dumpNll;
};

/// `eval` settings after defaults and validation.
struct EvalSettings {
  std::string dataDir, dataset, checkpoint;
  Split split = Split::Valid;
  int64_t tgtLen = 0, memLen = 0, clampLen = 0, batchSize = 0;
  bool sameLength = false;
  int threads = 0;
  bool kvCache = true;
  bool slidingWindow = false; ///< tgtLen is then the window length
  int64_t maxTokens = 0;      ///< sliding window only; 0 = all
  std::string dumpNll;
};

/// Fills `options`' gaps from `info` (eval_tgt_len, eval_mem_len,
/// eval_clamp_len, eval_same_length, eval_batch_size, dataset, data_path) and
/// validates. Errors (TXL_INVALID_ARGUMENT): unknown split; no dataset or no
/// data directory from either source; unsupported dataset; empty checkpoint;
/// tgt_len or batch size not positive; negative mem_len; same_length with
/// mem_len 0 (the official mask needs memory); negative threads. With
/// slidingWindow, mem_len is 0 and same_length false (an explicit non-zero
/// --mem-len or same_length true is an error), the dataset must be a token
/// stream (not lm1b's sentences), and maxTokens must not be negative;
/// maxTokens without slidingWindow is an error.
EvalSettings resolveEvalSettings(const txl_model_info_t &info,
                                 const EvalOptions &options);

/// The most memory rows a run may keep (--mem-len): far beyond any published
/// setting (the paper's longest evaluation memory is 3,800), and small
/// enough that a mistyped value is refused rather than allocated.
inline constexpr int64_t kMaxMemLen = 1 << 20;

/// Validates the run-time settings of segment calls (TXL_INVALID_ARGUMENT):
/// mem_len must not be negative or above kMaxMemLen; same_length needs
/// mem_len > 0; threads must not be negative.
void checkRunSettings(int64_t memLen, bool sameLength, int threads);

/// Owns a session and releases it.
struct SessionDeleter {
  void operator()(txl_session_t *session) const;
};
using SessionPtr = std::unique_ptr<txl_session_t, SessionDeleter>;

/// Creates a session over `info` (`segmentFn` NULL: the linked segment)
/// with `threads` (0 = the default) and loads `checkpoint` into it; on a GPU
/// target, first checks that a run of segments of `qlen` rows (`kind`:
/// TXL_RUN_EVAL, TXL_RUN_LOG_PROBS or TXL_RUN_GRADIENTS) over a memory of
/// `memLen` rows for `batch` columns fits on the device
/// (txl_session_check_device_memory).
/// With `kvCache` false the session keeps no key/value cache; when it keeps
/// one and `memLen` > 0, prints its size to stderr ("key/value cache:
/// ..."). Errors: those of the session calls.
SessionPtr openSession(const txl_model_info_t &info, txl_segment_fn segmentFn,
                       const std::string &checkpoint, int threads,
                       txl_run_kind_t kind, int64_t qlen, int64_t memLen,
                       int64_t batch, bool kvCache = true);

/// The outputs of segments enqueued with txl_session_enqueue_segment, read
/// in the order the segments were enqueued, every `segmentsPerSync`
/// segments and at the end (issue 51: on a GPU target no segment waits for
/// the device; on the CPU each output is there when its call returns, and
/// is read the same way).
class EnqueuedOutputs {
public:
  using Consume = std::function<void(const std::vector<float> &)>;
  explicit EnqueuedOutputs(txl_session_t *session, size_t segmentsPerSync = 16)
      : session_(session), segmentsPerSync_(segmentsPerSync) {}
  /// Waits for the device (ignoring its status: an error is being
  /// reported) before the arrays the device may still write go away.
  ~EnqueuedOutputs();
  EnqueuedOutputs(const EnqueuedOutputs &) = delete;
  EnqueuedOutputs &operator=(const EnqueuedOutputs &) = delete;

  /// An array of `size` floats for the next segment's output, which
  /// `consume` receives once the device has written it, after every
  /// earlier segment's.
  float *add(size_t size, Consume consume);
  /// After the segment was enqueued: reads every pending output once
  /// `segmentsPerSync` are.
  void enqueued();
  /// Synchronizes (txl_session_synchronize) and reads every pending output.
  void flush();

private:
  txl_session_t *session_;
  size_t segmentsPerSync_;
  std::deque<std::pair<std::vector<float>, Consume>> pending_;
};

/// The command line's --allow-extra-tensors: every session openSession and
/// train open loads checkpoints with txl_session_allow_extra_tensors(allow).
void setAllowExtraTensors(bool allow);
bool allowExtraTensors();

/// The thread count a run of `batch` columns uses for `threads` (0 = the
/// default): more threads than max(batch, the machine's cores) have nothing
/// to do (a call runs min(threads, batch) column slices, and one slice's
/// BLAS gains nothing past the cores), so such a count is lowered to that
/// bound with one note on `log` ("note: --threads 1000 is more than the 4
/// batch columns and the 2 cores: using 4").
int clampThreads(int threads, int64_t batch, std::FILE *log);

/// The outcome of one evaluation.
struct EvalResult {
  EvalSettings settings;
  double loss = 0;    ///< mean NLL (nats) over all predicted tokens
  int64_t tokens = 0; ///< predicted tokens: sum of seq_len * batch
  double seconds = 0; ///< wall time of the segment loop only (as eval.py)
  /// Segments run, and those of them that went through the key/value
  /// cache (txl_session_kv_cache_ready before the run).
  int64_t segments = 0, kvCacheSegments = 0;

  double ppl() const;             ///< exp(loss)
  double bpc() const;             ///< loss / ln 2
  double tokensPerSecond() const; ///< 0 when no time elapsed
};

/// The official eval.py result line (without its trailing space):
///   '| {0} loss {1:5.2f} | {0} ppl {2:9.3f}'  (ppl = exp(loss)), or for
///   character datasets '| {0} loss {1:5.2f} | {0} bpc {2:9.5f}'
///   (bpc = loss / ln 2), {0} being the split name.
std::string formatEvalLine(std::string_view split, double loss,
                           bool characterLevel);

/// "| valid tokens 73760 | time 12.34s | 5977.3 tokens/s".
std::string formatEvalStats(const EvalResult &result);

/// One line of JSON (no newline): split, dataset, loss, ppl, bpc, tokens,
/// seconds, tokens_per_s, tgt_len, mem_len, clamp_len, same_length,
/// batch_size; doubles at full round-trip precision (non-finite ones as null).
std::string formatEvalJson(const EvalResult &result);

/// With settings.slidingWindow, the evaluation of Al-Rfou et al. instead
/// (EvalOptions::slidingWindow): the split's stream x_0 ... x_{N-1} gives
/// the predictions t = 1 ... min(N - 1, maxTokens), each from the window
/// x_{max(0, t - L)} ... x_{t-1} (L = tgtLen) run with no memory, the NLL
/// of x_t at its last position; full windows run batchSize at a time,
/// the L - 1 shorter ones at the start one by one. tokens counts the
/// predictions and seconds times them.
///
/// Official eval.py `evaluate()`: loads the corpus (vocabulary over the files
/// the dataset counts, only `split` encoded), checks its size against
/// info.n_token, loads the checkpoint, resets the memory once and runs the
/// ordered iterator (ext_len 0) over the split with the memory carried across
/// all of it; the loss is accumulated in double. `segmentFn` NULL uses the
/// linked txl_segment_forward. Errors: corpus and checkpoint errors, a
/// vocabulary/n_token mismatch, a split too short for one segment, session
/// errors.
EvalResult runEval(const txl_model_info_t &info, const EvalSettings &settings,
                   txl_segment_fn segmentFn = nullptr, bool progress = true);

/// `eval`: resolve, run, then print to `out` the result line, the stats line
/// and, with `json`, the JSON line.
void runEvalCommand(const txl_model_info_t &info, const EvalOptions &options,
                    std::FILE *out, txl_segment_fn segmentFn = nullptr);

//===----------------------------------------------------------------------===//
// run-segments
//===----------------------------------------------------------------------===//

/// `run-segments` options as given; unset ones take the model's [segment] /
/// [model] values (info.mem_len, info.clamp_len, info.same_length).
struct RunSegmentsOptions {
  std::string checkpoint, inputs, targets;
  std::string dumpNll;  ///< --dump-nll: float32 [S, tgt_len, batch] .npy
  std::string dumpMems; ///< --dump-mems: safetensors seg{s}.layer{l}
  /// --grad-segment: run this segment (0-based) through the backward entry;
  /// -1 = none.
  int64_t gradSegment = -1;
  /// --dump-grads: safetensors, the gradient of the mean NLL of segment
  /// gradSegment per trainable parameter (official names; a tied parameter
  /// once, under its embedding name).
  std::string dumpGrads;
  std::optional<int64_t> memLen, clampLen;
  std::optional<bool> sameLength;
  int threads = 0;
  bool kvCache = true; ///< --no-kv-cache clears it
};

/// Runs the S segments of `inputs`/`targets` (int64 .npy [S, tgt_len, batch],
/// same shape, ids in [0, n_token)) with the memory carried from segment to
/// segment, starting empty, as the reference cases were made. Writes the
/// per-token NLL and the memory after each segment (`seg{s}.layer{l}`,
/// float32 [mlen, batch, d_model], l = 0..n_layer; none when mem_len = 0, the
/// file then holds no tensors) when asked, and prints one line per segment
/// and a total to `out`. Errors: file errors, shape/dtype/range errors naming
/// the file, invalid settings (as `resolveEvalSettings`), session errors.
void runSegmentsCommand(const txl_model_info_t &info,
                        const RunSegmentsOptions &options, std::FILE *out,
                        txl_segment_fn segmentFn = nullptr);

//===----------------------------------------------------------------------===//
// init
//===----------------------------------------------------------------------===//

/// `init`: writes to `path` a safetensors checkpoint of every parameter
/// (official names; buffers included) initialised from `seed` as the
/// official train.py `weights_init` does (txl/rt/session/ParamInit.h): the
/// parameters `train --seed <seed>` starts from. Prints one line to `out`.
/// Errors: seed negative, an unknown [train] init, write errors naming the
/// file.
void runInitCommand(const txl_model_info_t &info, int64_t seed,
                    const std::string &path, std::FILE *out);

} // namespace txl::rt

#endif // TXL_RT_COMMANDS_H

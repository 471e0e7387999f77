//===- main.cpp - Entry point of a txlc-generated executable ----*- C++ -*-===//
//
// The command line of a compiled model: `train` (official train.py), `eval`
// (official eval.py over a corpus split) and `run-segments` (reference-style
// segment runs with NLL and memory dumps). It only parses options with CLI11;
// the work is in txl/rt/commands/Train.h and txl/rt/commands/Commands.h. The
// model comes from the linked `txl_model_info` and `txl_segment_forward` of the
// txlc-generated object.
//
// Exit status: 0 on success (and for --help), 1 on any error, printed as
// "<prog>: error: <message>" on stderr.
//
//===----------------------------------------------------------------------===//

#include "txl/rt/collectives/DataParallel.h"
#include "txl/rt/commands/Commands.h"
#include "txl/rt/commands/Generate.h"
#include "txl/rt/commands/Train.h"
#include "txl/rt/device/Bf16Gemm.h"
#include "txl/rt/device/CpuBlas.h"
#include "txl/rt/device/Device.h"
#include "txl/rt/device/HostGemm.h"
#include "txl/rt/support/File.h"
#include "txl/rt/support/Status.h"
#include "txl/runtime.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <malloc.h>
#include <new>
#include <string>
#include <string_view>

namespace {

using txl::rt::EvalOptions;
using txl::rt::RunSegmentsOptions;
using txl::rt::TrainOptions;

constexpr const char *kThreadsHelp =
    "Threads, 0 = all cores: the batch columns run as min(threads, batch) "
    "parallel slices with single-threaded BLAS, or batch 1 as one call with "
    "multi-threaded BLAS";

/// `--no-kv-cache` on `cmd`: clears `kvCache` (txl_session_set_kv_cache).
/// --allow-extra-tensors on a command that loads a checkpoint.
void addAllowExtraTensorsFlag(CLI::App *cmd, bool &allow) {
  cmd->add_flag("--allow-extra-tensors", allow,
                "Load the model's tensors from a checkpoint that also holds "
                "others (load_state_dict(strict=False)); without it such a "
                "checkpoint is refused, naming the first");
}

void addKvCacheFlag(CLI::App *cmd, bool &kvCache) {
  cmd->add_flag_callback(
      "--no-kv-cache", [&kvCache] { kvCache = false; },
      "Project every memory row's keys and values again in every segment "
      "(the official computation) instead of keeping them from the segment "
      "before; same results, slower with long memories");
}

/// argv[0] without its directories.
std::string programName(const char *argv0) {
  std::string name = argv0 && *argv0 ? argv0 : "txl-model";
  size_t slash = name.rfind('/');
  return slash == std::string::npos ? name : name.substr(slash + 1);
}

std::string boolText(int32_t value) { return value ? "true" : "false"; }

/// Copies an option into `target` if it was given on the command line.
template <typename T>
void setIfGiven(const CLI::Option *option, const T &value,
                std::optional<T> &target) {
  if (option->count() > 0)
    target = value;
}

/// --data and --dataset of a subcommand, with the model file's defaults in
/// the help.
void addDataOptions(CLI::App *command, std::string &dataDir,
                    std::string &dataset, const std::string &defaultPath,
                    const std::string &defaultDataset) {
  command->add_option(
      "--data", dataDir,
      "Directory holding train.txt, valid.txt, test.txt" +
          (defaultPath.empty()
               ? std::string(" (no default: the model sets no data_path)")
               : " (default: " + defaultPath + ")"));
  command->add_option(
      "--dataset", dataset,
      "Dataset semantics: ptb, wt2, wt103, lm1b, enwik8, text8, ptb-char" +
          (defaultDataset.empty()
               ? std::string(" (no default: the model sets no dataset)")
               : " (default: " + defaultDataset + ")"));
}

} // namespace

/// Keeps the per-segment temporaries of the generated code (the logits alone
/// are qlen x batch x n_token floats, the attention scores of an
/// enwik8-base layer 64 MiB) on the heap instead of mmap/munmap round trips,
/// whose page faults otherwise cost as much system time as the compute.
/// - No allocation is served by mmap (glibc caps M_MMAP_THRESHOLD at 32 MiB).
/// - Freed memory is never returned to the system (M_TRIM_THRESHOLD −1,
///   mallopt(3)): the heap stays at the peak of one step. A threshold of
///   1 GiB was not enough. An enwik8-base train step frees more than that,
///   and whether it ended up at the top of the heap depended on how the
///   slices' threads interleaved their allocations; in the runs where it
///   did, every step faulted 1.3 GB in again (2.17 M page faults in 6 steps
///   instead of 0.82 M; 7.0–7.4 s per step instead of 5.6–5.8 s).
/// - The worker threads of batch-parallel slices share that one heap
///   (M_ARENA_MAX 1): a thread arena of its own grows in mmap'd heaps of at
///   most 64 MiB that glibc unmaps as soon as they empty, so every segment
///   call would fault its temporaries in again.
/// The peak resident size stays about the same (ptb_small eval: 36.7 MiB
/// before these settings, 37.0 after).
static void tuneAllocator() {
  mallopt(M_ARENA_MAX, 1);
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, -1);
}

/// A value as an error message quotes it: at most 40 characters.
static std::string shortened(const std::string &value) {
  if (value.size() <= 40)
    return value;
  return fmt::format("{}... ({} characters)", value.substr(0, 24),
                     value.size());
}

/// A validator of an integer option's string (issue 48, item 8): CLI11
/// saturates an int64 option given 2^63 or more at 2^63-1, and reads "-1"
/// into a uint64 option as 2^64-1. The string must be a whole number that
/// the option's type holds, and at least 0 when `nonNegative`; otherwise
/// the error names the value (shortened) and the range.
static CLI::Validator wholeNumber(bool isUnsigned, bool nonNegative) {
  return CLI::Validator(
      [isUnsigned, nonNegative](std::string &value) -> std::string {
        const char *begin = value.data(), *end = begin + value.size();
        std::from_chars_result parsed;
        bool negative = false;
        if (isUnsigned) {
          uint64_t v;
          parsed = std::from_chars(begin, end, v);
        } else {
          int64_t v = 0;
          parsed = std::from_chars(begin, end, v);
          negative = v < 0;
        }
        bool whole = parsed.ptr == end && parsed.ec == std::errc();
        if (whole && !(nonNegative && negative))
          return {};
        std::string range = isUnsigned ? fmt::format("0 to {}", UINT64_MAX)
                            : nonNegative
                                ? fmt::format("0 to {}", INT64_MAX)
                                : fmt::format("{} to {}", INT64_MIN, INT64_MAX);
        bool digits =
            !value.empty() &&
            value.find_first_not_of("-+0123456789") == std::string::npos &&
            value.find_first_of("0123456789") != std::string::npos;
        return fmt::format("{} is {} ({})", shortened(value),
                           digits ? "out of range" : "not a whole number",
                           range);
      },
      "", "whole number");
}

/// wholeNumber on every integer option of `app`'s subcommands that has no
/// check of its own yet.
static void checkIntegerRanges(CLI::App &app) {
  for (CLI::App *sub : app.get_subcommands({}))
    for (CLI::Option *opt : sub->get_options()) {
      std::string type = opt->get_type_name();
      if (type == "INT" || type == "UINT")
        opt->check(wholeNumber(type == "UINT", /*nonNegative=*/false));
    }
}

int main(int argc, char **argv) {
  tuneAllocator();
  // Line-buffered even into a pipe: a run-time check in generated code
  // prints its message with puts and aborts, which would lose a buffer.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const std::string prog = programName(argc > 0 ? argv[0] : nullptr);
  const txl_model_info_t &info = txl_model_info;
  auto reportError = [&](const std::string &message) {
    std::fprintf(stderr, "%s: error: %s\n", prog.c_str(), message.c_str());
    return 1;
  };
  if (info.abi_version != TXL_ABI_VERSION)
    return reportError(fmt::format(
        "the model was compiled for runtime ABI version {}, this runtime "
        "has version {}",
        info.abi_version, TXL_ABI_VERSION));

  // Before any product: a BLAS running generic kernels on a CPU with AVX2
  // restarts with the kernels that fit, or says so (CpuBlas.h).
  txl::rt::ensureBlasKernel(prog.c_str(), argv);
  const bool onCpu = info.backend == TXL_BACKEND_CPU;
  // The BLAS line; a CPU executable adds where its products run: f32 ones
  // (txl/rt/device/HostGemm.h), or, with --precision=bf16, bf16 ones
  // (txl/rt/device/Bf16Gemm.h).
  auto runHeader = [&] {
    std::string line = txl::rt::blasLine();
    if (onCpu && info.precision == TXL_PRECISION_BF16)
      line += " | bf16 products: " + txl::rt::bf16ProductLine();
    else if (onCpu)
      line += " | f32 products: " + txl::rt::f32ProductLine();
    return line;
  };

  const std::string modelName = info.model_name ? info.model_name : "";
  const std::string dataset = info.dataset ? info.dataset : "";
  const std::string dataPath = info.data_path ? info.data_path : "";
  CLI::App app(
      fmt::format("Transformer-XL model '{}' compiled by txlc ({} layers, "
                  "d_model {}, n_token {}).",
                  modelName, info.n_layer, info.d_model, info.n_token),
      prog);
  app.require_subcommand(1);
  app.set_version_flag(
      "--version",
      // Built when asked for: a bf16 executable's line loads oneMKL.
      std::function<std::string()>([&] {
        return fmt::format(
            "model '{}' compiled by txlc (runtime ABI {}, target {}; runtime "
            "backends: {})\n{}",
            modelName, TXL_ABI_VERSION, txl_backend_name(info.backend),
            txl::rt::builtBackends(), runHeader());
      }),
      "Print the model, the runtime ABI and the backends it was built with, "
      "the BLAS with its kernel and threads, the CPU, and (--precision=bf16) "
      "where the bf16 products "
      "run, then exit");

  bool allowExtraTensors = false; // --allow-extra-tensors of any command

  // eval
  EvalOptions evalOptions;
  int64_t evalTgtLen = 0, evalMemLen = 0, evalClampLen = 0, evalBatch = 0;
  bool evalSameLength = false;
  CLI::App *eval = app.add_subcommand(
      "eval", "Evaluate on a corpus split as the official eval.py does: "
              "memory carried across the whole split, mean NLL per token; "
              "prints '| <split> loss L | <split> ppl P' (bpc for "
              "character datasets)");
  addDataOptions(eval, evalOptions.dataDir, evalOptions.dataset, dataPath,
                 dataset);
  eval->add_option("--split", evalOptions.split, "Split to evaluate")
      ->check(CLI::IsMember({"valid", "test", "train"}))
      ->default_str("valid");
  eval->add_option("--checkpoint", evalOptions.checkpoint,
                   "safetensors checkpoint (official state_dict names)")
      ->required();
  CLI::Option *tgtLenOpt = eval->add_option(
      "--tgt-len", evalTgtLen,
      fmt::format("Segment length (default: {})", info.eval_tgt_len));
  CLI::Option *memLenOpt = eval->add_option(
      "--mem-len", evalMemLen,
      fmt::format("Memory length, 0 = none (default: {})", info.eval_mem_len));
  CLI::Option *clampLenOpt = eval->add_option(
      "--clamp-len", evalClampLen,
      fmt::format("Clamp relative distances when > 0 (default: {})",
                  info.eval_clamp_len));
  CLI::Option *sameLengthOpt = eval->add_option(
      "--same-length", evalSameLength,
      fmt::format("Official same_length attention mask, true|false; needs "
                  "mem-len > 0 (default: {})",
                  boolText(info.eval_same_length)));
  CLI::Option *batchOpt = eval->add_option(
      "--batch-size", evalBatch,
      fmt::format("Columns of the ordered iterator (default: {})",
                  info.eval_batch_size));
  eval->add_option("--threads", evalOptions.threads, kThreadsHelp)
      ->default_str("0");
  addKvCacheFlag(eval, evalOptions.kvCache);
  addAllowExtraTensorsFlag(eval, allowExtraTensors);
  eval->add_flag("--json", evalOptions.json,
                 "Also print the result as one line of JSON");
  eval->add_flag("--sliding-window", evalOptions.slidingWindow,
                 "The evaluation of Al-Rfou et al. (2018), as in the "
                 "Transformer-XL paper's Table 9: every token predicted from "
                 "the tgt-len tokens before it, the model run on that window "
                 "from scratch (no memory), only its last position kept");
  eval->add_option("--max-tokens", evalOptions.maxTokens,
                   "With --sliding-window: predict only the split's first N "
                   "tokens (0 = all)")
      ->default_str("0");
  eval->add_option("--dump-nll", evalOptions.dumpNll,
                   "Write every predicted token's NLL, float32 .npy [tokens], "
                   "in evaluation order");

  // run-segments
  RunSegmentsOptions segOptions;
  int64_t segMemLen = 0, segClampLen = 0;
  bool segSameLength = false;
  CLI::App *runSegments = app.add_subcommand(
      "run-segments",
      "Run S consecutive segments of int64 [S, tgt_len, batch] inputs with "
      "memory carried from an empty start, as the reference cases do");
  runSegments
      ->add_option("--checkpoint", segOptions.checkpoint,
                   "safetensors checkpoint (official state_dict names)")
      ->required();
  runSegments
      ->add_option("--inputs", segOptions.inputs,
                   "int64 .npy [S, tgt_len, batch] input tokens")
      ->required();
  runSegments
      ->add_option("--targets", segOptions.targets,
                   "int64 .npy [S, tgt_len, batch] target tokens")
      ->required();
  runSegments->add_option("--dump-nll", segOptions.dumpNll,
                          "Write the per-token NLL, float32 .npy "
                          "[S, tgt_len, batch]");
  runSegments->add_option(
      "--dump-mems", segOptions.dumpMems,
      "Write the memory after each segment, safetensors seg{s}.layer{l} "
      "[mlen, batch, d_model], l = 0..n_layer (none when mem-len = 0)");
  runSegments
      ->add_option("--grad-segment", segOptions.gradSegment,
                   "Run segment K (0-based) through the generated backward "
                   "segment (memory from segments 0..K-1, constant)")
      ->check(wholeNumber(/*isUnsigned=*/false, /*nonNegative=*/true));
  runSegments->add_option(
      "--dump-grads", segOptions.dumpGrads,
      "With --grad-segment: write the gradient of segment K's mean NLL for "
      "every trained parameter, safetensors with the checkpoint's names");
  CLI::Option *segMemLenOpt = runSegments->add_option(
      "--mem-len", segMemLen,
      fmt::format("Memory length, 0 = none (default: {})", info.mem_len));
  CLI::Option *segClampLenOpt = runSegments->add_option(
      "--clamp-len", segClampLen,
      fmt::format("Clamp relative distances when > 0 (default: {})",
                  info.clamp_len));
  CLI::Option *segSameLengthOpt = runSegments->add_option(
      "--same-length", segSameLength,
      fmt::format("Official same_length attention mask, true|false; needs "
                  "mem-len > 0 (default: {})",
                  boolText(info.same_length)));
  runSegments->add_option("--threads", segOptions.threads, kThreadsHelp)
      ->default_str("0");
  addKvCacheFlag(runSegments, segOptions.kvCache);
  addAllowExtraTensorsFlag(runSegments, allowExtraTensors);

  // train
  TrainOptions trainOptions;
  int64_t trainMaxStep = 0, trainLogInterval = 0, trainEvalInterval = 0,
          trainCheckpointInterval = 0, trainMaxEvalSteps = 0, trainSeed = 0;
  int trainThreads = 0;
  double trainLossScaleInit = 0;
  int64_t trainLossScaleWindow = 0;
  bool noProgress = false;
  CLI::App *train = app.add_subcommand(
      "train",
      "Train as the official train.py does, from the model file's [train] "
      "section: the generated backward segment, the compiled optimizer and "
      "schedule, train.py's log lines, a validation every eval-interval "
      "updates, last/best checkpoints and metrics.jsonl in the work "
      "directory (scripts/plot_curves.py draws its loss curves). Started by "
      "mpirun (Open MPI), runs as one rank of a "
      "data-parallel run: each rank trains batch_size / N columns and the "
      "ranks average their gradients (docs/usage.md, docs/data-parallel.md)");
  addDataOptions(train, trainOptions.dataDir, trainOptions.dataset, dataPath,
                 dataset);
  train
      ->add_option("--work-dir", trainOptions.workDir,
                   "Directory for log.txt, metrics.jsonl and the last/best "
                   "checkpoints (created)")
      ->required();
  CLI::Option *resumeOpt =
      train->add_flag("--resume", trainOptions.resume,
                      "Continue from <work-dir>/last.safetensors exactly "
                      "where it stopped");
  train
      ->add_flag("--overwrite", trainOptions.overwrite,
                 "Start a new run in a work directory that holds one (without "
                 "it or --resume, a work directory with a last.safetensors is "
                 "refused)")
      ->excludes(resumeOpt);
  CLI::Option *maxStepOpt = train->add_option(
      "--max-step", trainMaxStep,
      fmt::format("Train this many updates; the cosine lr's T_max and the "
                  "Al-Rfou loss schedule follow it (default: {}; on --resume "
                  "the checkpoint's)",
                  info.max_step));
  CLI::Option *logIntervalOpt = train->add_option(
      "--log-interval", trainLogInterval,
      fmt::format("Updates per log line (default: {})", info.log_interval));
  CLI::Option *evalIntervalOpt = train->add_option(
      "--eval-interval", trainEvalInterval,
      fmt::format("Updates per validation (default: {})", info.eval_interval));
  CLI::Option *checkpointIntervalOpt = train->add_option(
      "--checkpoint-interval", trainCheckpointInterval,
      "Updates per last.safetensors (default: the log interval; also written "
      "at each validation and at the end)");
  train->add_option("--stop-after", trainOptions.stopAfter,
                    "End this run after update N with a checkpoint, the lr "
                    "and loss schedules still those of --max-step: --resume "
                    "continues the same run (no test evaluation)");
  CLI::Option *maxEvalStepsOpt = train->add_option(
      "--max-eval-steps", trainMaxEvalSteps,
      fmt::format("Segments per validation, <= 0 = all (default: {})",
                  info.max_eval_steps));
  CLI::Option *seedOpt =
      train
          ->add_option(
              "--seed", trainSeed,
              fmt::format(
                  "Seed of the initialisation (default: {}; on --resume the "
                  "checkpoint's)",
                  info.seed))
          // "-1" would otherwise wrap to 2^64 - 1.
          ->check(CLI::Validator(
              [](std::string &text) {
                return text.rfind('-', 0) == 0
                           ? std::string("'" + text + "' is negative")
                           : std::string();
              },
              "NONNEGATIVE"));
  CLI::Option *trainThreadsOpt = train->add_option(
      "--threads", trainThreads,
      std::string(kThreadsHelp) +
          "; recorded in the checkpoint, equal threads give bit-equal runs "
          "(default: the checkpoint's on --resume, else all cores)");
  CLI::Option *lossScaleInitOpt = train->add_option(
      "--loss-scale-init", trainLossScaleInit,
      "--precision=fp16 executables: the first dynamic loss scale, a power "
      "of two (default 65536; on --resume the checkpoint's)");
  CLI::Option *lossScaleWindowOpt = train->add_option(
      "--loss-scale-window", trainLossScaleWindow,
      "--precision=fp16 executables: updates without overflow after which "
      "the loss scale doubles (default 1000)");
  train->add_flag("--no-progress", noProgress,
                  "Do not draw the progress bar on a terminal");

  // init
  int64_t initSeed = info.seed;
  std::string initOutput;
  CLI::App *init = app.add_subcommand(
      "init", "Write a checkpoint of the parameters initialised as the "
              "official train.py weights_init does (the parameters train "
              "--seed starts from), without training");
  init->add_option(
          "--seed", initSeed,
          fmt::format("Seed of the initialisation (default: {})", info.seed))
      ->check(wholeNumber(/*isUnsigned=*/false, /*nonNegative=*/true));
  init->add_option("-o,--output", initOutput, "safetensors file to write")
      ->required();

  // generate
  txl::rt::GenerateOptions genOptions;
  std::string genPrompt, genPromptFile;
  CLI::App *generate = app.add_subcommand(
      "generate", "Continue a prompt: the prompt runs once in segments of the "
                  "evaluation tgt_len to fill the memory, then one token at a "
                  "time with the memory carried; the new text streams out");
  addDataOptions(generate, genOptions.dataDir, genOptions.dataset, dataPath,
                 dataset);
  generate
      ->add_option("--checkpoint", genOptions.checkpoint,
                   "safetensors checkpoint (official state_dict names)")
      ->required();
  CLI::Option *promptOpt = generate->add_option(
      "--prompt", genPrompt, "The text to continue (as the dataset reads it)");
  CLI::Option *promptFileOpt = generate->add_option(
      "--prompt-file", genPromptFile, "A file holding the text to continue");
  promptOpt->excludes(promptFileOpt);
  generate->add_option("--max-new-tokens", genOptions.maxNewTokens,
                       "Tokens to generate (default: 100)");
  generate->add_option("--temperature", genOptions.temperature,
                       "Sampling temperature; 0 = greedy, the most likely "
                       "token (default: 1)");
  generate->add_option("--top-k", genOptions.topK,
                       "Sample among the K most likely tokens; 0 = all "
                       "(default: 0)");
  generate->add_option("--top-p", genOptions.topP,
                       "Sample among the most likely tokens whose "
                       "probability reaches P (nucleus); 1 = all (default: 1)");
  generate->add_option("--seed", genOptions.seed,
                       "Seed of the sampling: equal seeds give equal text "
                       "(default: 0)");
  generate->add_flag("--json", genOptions.json,
                     "Print one JSON object at the end (prompt_tokens, "
                     "tokens, log_probs, text) instead of streaming");
  generate->add_option("--threads", genOptions.threads, kThreadsHelp);
  addKvCacheFlag(generate, genOptions.kvCache);
  addAllowExtraTensorsFlag(generate, allowExtraTensors);

  // score
  txl::rt::ScoreOptions scoreOptions;
  CLI::App *score = app.add_subcommand(
      "score", "Score a text file as eval runs a split (memory carried): one "
               "JSON line per token with its log-probability, its rank and "
               "the most likely alternatives");
  addDataOptions(score, scoreOptions.dataDir, scoreOptions.dataset, dataPath,
                 dataset);
  score
      ->add_option("--checkpoint", scoreOptions.checkpoint,
                   "safetensors checkpoint (official state_dict names)")
      ->required();
  score->add_option("--text-file", scoreOptions.textFile, "The text to score")
      ->required();
  score->add_option("--top-k", scoreOptions.topK,
                    "Alternatives listed per token (default: 5)");
  score->add_option("--threads", scoreOptions.threads, kThreadsHelp);
  addKvCacheFlag(score, scoreOptions.kvCache);
  addAllowExtraTensorsFlag(score, allowExtraTensors);

  checkIntegerRanges(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp &help) {
    return app.exit(help);
  } catch (const CLI::CallForAllHelp &help) {
    return app.exit(help);
  } catch (const CLI::CallForVersion &version) {
    return app.exit(version);
  } catch (const CLI::ParseError &error) {
    // CLI11 reports a mistyped subcommand as a missing one.
    if (argc > 1 && argv[1][0] != '-' && !eval->parsed() &&
        !runSegments->parsed() && !train->parsed() && !init->parsed() &&
        !generate->parsed() && !score->parsed())
      return reportError(fmt::format(
          "unknown subcommand '{}' (expected train, eval, run-segments, init, "
          "generate or score)",
          argv[1]));
    return reportError(error.what());
  }

  try {
    txl::rt::setAllowExtraTensors(allowExtraTensors);
    if (!train->parsed() && txl::rt::launcherWorldSize() > 1)
      return reportError(fmt::format(
          "started as one of {} ranks by an MPI launcher: only `train` runs "
          "data-parallel; run this command without mpirun",
          txl::rt::launcherWorldSize()));
    // The run header names the BLAS and its kernel (the CPU target's
    // products run there).
    if (onCpu && (eval->parsed() || train->parsed()))
      std::fprintf(stderr, "%s\n", runHeader().c_str());
    if (eval->parsed()) {
      setIfGiven(tgtLenOpt, evalTgtLen, evalOptions.tgtLen);
      setIfGiven(memLenOpt, evalMemLen, evalOptions.memLen);
      setIfGiven(clampLenOpt, evalClampLen, evalOptions.clampLen);
      setIfGiven(sameLengthOpt, evalSameLength, evalOptions.sameLength);
      setIfGiven(batchOpt, evalBatch, evalOptions.batchSize);
      txl::rt::refuseOutputsOverInputs(
          {{"--dump-nll", evalOptions.dumpNll}},
          {{"--checkpoint", evalOptions.checkpoint}});
      txl::rt::runEvalCommand(info, evalOptions, stdout);
    } else if (runSegments->parsed()) {
      setIfGiven(segMemLenOpt, segMemLen, segOptions.memLen);
      setIfGiven(segClampLenOpt, segClampLen, segOptions.clampLen);
      setIfGiven(segSameLengthOpt, segSameLength, segOptions.sameLength);
      txl::rt::refuseOutputsOverInputs({{"--dump-nll", segOptions.dumpNll},
                                        {"--dump-mems", segOptions.dumpMems},
                                        {"--dump-grads", segOptions.dumpGrads}},
                                       {{"--checkpoint", segOptions.checkpoint},
                                        {"--inputs", segOptions.inputs},
                                        {"--targets", segOptions.targets}});
      txl::rt::runSegmentsCommand(info, segOptions, stdout);
    } else if (train->parsed()) {
      setIfGiven(maxStepOpt, trainMaxStep, trainOptions.maxStep);
      setIfGiven(logIntervalOpt, trainLogInterval, trainOptions.logInterval);
      setIfGiven(evalIntervalOpt, trainEvalInterval, trainOptions.evalInterval);
      setIfGiven(checkpointIntervalOpt, trainCheckpointInterval,
                 trainOptions.checkpointInterval);
      setIfGiven(maxEvalStepsOpt, trainMaxEvalSteps, trainOptions.maxEvalSteps);
      setIfGiven(seedOpt, trainSeed, trainOptions.seed);
      setIfGiven(trainThreadsOpt, trainThreads, trainOptions.threads);
      setIfGiven(lossScaleInitOpt, trainLossScaleInit,
                 trainOptions.lossScaleInit);
      setIfGiven(lossScaleWindowOpt, trainLossScaleWindow,
                 trainOptions.lossScaleWindow);
      trainOptions.progress = !noProgress;
      txl::rt::runTrainCommand(info, trainOptions, stdout);
    } else if (init->parsed()) {
      txl::rt::runInitCommand(info, initSeed, initOutput, stdout);
    } else if (generate->parsed()) {
      if (promptOpt->count())
        genOptions.prompt = genPrompt;
      if (promptFileOpt->count())
        genOptions.promptFile = genPromptFile;
      txl::rt::runGenerateCommand(info, genOptions, stdout);
    } else if (score->parsed()) {
      txl::rt::runScoreCommand(info, scoreOptions, stdout);
    }
  } catch (const txl::rt::Error &error) {
    reportError(error.what());
    // A missing device, driver or device library: status 2, as documented
    // for the GPU targets' executables.
    return error.code() == TXL_UNAVAILABLE ? 2 : 1;
  } catch (const std::bad_alloc &) {
    return reportError("out of memory");
  } catch (const std::exception &error) {
    return reportError(error.what());
  }
  return 0;
}

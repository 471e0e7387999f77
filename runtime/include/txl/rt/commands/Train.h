//===- Train.h - `<model> train`: the official train.py loop ----*- C++ -*-===//
//
// Trains a compiled model on an ordered corpus the way the official
// pytorch/train.py (kimiyoung/transformer-xl) does: segments of [train]
// batch_size columns and tgt_len rows from LMOrderedIterator, the memory
// carried within an epoch and dropped at its start, the gradient of the mean
// NLL from the generated backward segment (txl_segment_grad), the compiled
// optimizer update with global-norm clipping (txl_optimizer_update) and the
// compiled schedule (txl_learning_rate), a log line every log_interval
// updates and a validation every eval_interval with train.py's evaluation
// settings (tgt_len = eval tgt_len, mem_len = mem_len + tgt_len - eval
// tgt_len, eval batch size), then the test split with the best parameters.
//
// The work directory holds
//   log.txt            the log lines (as train.py's log.txt)
//   metrics.jsonl      one JSON object per log line / validation / test
//   last.safetensors   the whole training state, written atomically every
//                      checkpoint_interval updates, at each validation and
//                      at the end (see docs/design.md, "Checkpoints")
//   best.safetensors   the parameters with the best validation loss
// and `--resume` continues from last.safetensors bit for bit. The loop draws
// nothing: scripts/plot_curves.py draws the loss curves from metrics.jsonl.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_TRAIN_H
#define TXL_RT_TRAIN_H

#include "txl/runtime.h"

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

namespace txl::rt {

/// `train` options as given; unset ones take the model file's [train] /
/// [data] values (txl_model_info_t).
struct TrainOptions {
  std::string dataDir; ///< --data; default info.data_path
  std::string dataset; ///< --dataset; default info.dataset
  std::string workDir; ///< --work-dir (required)
  bool resume = false; ///< --resume: continue from workDir/last.safetensors
  /// --overwrite: start a new run in a work directory that holds one (its
  /// last.safetensors); without it or --resume, that is refused.
  bool overwrite = false;
  /// --max-step: the run's length, which its schedules follow (the cosine
  /// lr's T_max, the Al-Rfou layer drops; default the model file's; on
  /// --resume the checkpoint's, and another value is refused where a
  /// schedule follows it). --log-interval, --eval-interval and
  /// --max-eval-steps.
  std::optional<int64_t> maxStep, logInterval, evalInterval, maxEvalSteps;
  /// Updates between `last` checkpoints; default log_interval.
  std::optional<int64_t> checkpointInterval;
  /// --stop-after: end the run after this update with its checkpoint, the
  /// schedules still those of max_step (a later --resume continues the same
  /// run); no test evaluation then.
  std::optional<int64_t> stopAfter;
  std::optional<int64_t> seed;
  /// txl_session_set_threads; default: the checkpoint's on --resume, else
  /// all cores.
  std::optional<int> threads;
  bool progress = true; ///< draw the bar (only ever on a terminal)
  /// --precision=fp16 executables' dynamic loss scaling: the first scale
  /// (a power of two; default 2^16, official train.py's apex setting) and
  /// the updates without overflow after which it doubles (default 1000,
  /// apex's scale_window).
  std::optional<double> lossScaleInit;
  std::optional<int64_t> lossScaleWindow;
};

/// Runs `train` and prints the log to `out`. Errors (txl::rt::Error): invalid
/// settings, corpus / checkpoint errors, an executable without the training
/// functions, a resume whose checkpoint belongs to another model.
void runTrainCommand(const txl_model_info_t &info, const TrainOptions &options,
                     std::FILE *out);

/// Official train.py log line, e.g.
/// "| epoch   1 step      200 |    200 batches | lr 0.000998 | ms/batch 481.02
/// | loss  6.48 | ppl   655.201" (bpc {:9.5f} for character data).
std::string formatTrainLine(int64_t epoch, int64_t step, int64_t batches,
                            double lr, double msPerBatch, double loss,
                            bool characterLevel);

/// Official validation line "| Eval   1 at step     1000 | time: 467.49s |
/// valid loss  5.15 | valid ppl   172.059" (bpc for character data).
std::string formatValidLine(int64_t evalIndex, int64_t step, double seconds,
                            double loss, bool characterLevel);

} // namespace txl::rt

#endif // TXL_RT_TRAIN_H

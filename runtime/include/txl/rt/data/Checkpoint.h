//===- Checkpoint.h - The metadata of a training checkpoint -----*- C++ -*-===//
//
// A training checkpoint (`last.safetensors` of a `train` work directory) is
// a safetensors file: the parameters under their official names, the
// optimizer state and the memory as tensors, and everything else a resumed
// run needs (the loop's counters, the learning rate, the data iterator's
// position and random state, the run's settings) as `__metadata__` strings,
// written and read here. Doubles are written in hexadecimal ("0x1.8p-3") so
// that they read back exactly. docs/design.md, "Checkpoints", lists the keys.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_CHECKPOINT_H
#define TXL_RT_CHECKPOINT_H

#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace txl::rt {

/// Tag of a checkpoint written by this trainer (metadata "format").
inline constexpr std::string_view kCheckpointFormat = "txlc-train-1";

/// The training loop's counters: with the parameters, the optimizer state
/// and the memory, everything a resumed run needs.
struct LoopState {
  int64_t step = 0;         ///< updates done (train.py train_step)
  int64_t epoch = 1;        ///< current epoch, from 1
  int64_t batchInEpoch = 0; ///< segments consumed in this epoch
  int64_t iteratorRow = 0;  ///< the train iterator's position
  double lr = 0;            ///< the lr of the next update
  std::optional<double> bestValLoss;
  double intervalLoss = 0; ///< sum of step losses since the last log line
  /// Objective "alrfou": the sums of the loss's three parts since the last
  /// log line (metadata "interval_loss_parts", only for that objective).
  std::optional<std::array<double, 3>> intervalParts;
  int64_t intervalSteps = 0;
  int64_t evalCount = 0;
  // dev_perf: ReduceLROnPlateau's best and bad-epoch count.
  double plateauBest = std::numeric_limits<double>::infinity();
  int64_t plateauBad = 0;
  // Dynamic loss scaling (apex's DynamicLossScaler, which official train.py
  // runs with --fp16 --dynamic-loss-scale): the scale's log2, the updates
  // since the last overflow or growth, and the updates skipped so far
  // (train_step counts them; the optimizer's own step count does not).
  int32_t lossScaleLog2 = 0;
  int64_t cleanSteps = 0;
  int64_t skippedSteps = 0;
  /// The mean loss of the run's first log line: the yardstick of the
  /// divergence warning (kDivergenceFactor). Metadata "first_logged_loss";
  /// absent in checkpoints from before it was recorded.
  std::optional<double> firstLoggedLoss;
};

/// `train` warns that training diverges when a log line's mean loss is more
/// than this many times the first logged one (at initialisation the loss is
/// about ln(n_token), the most a sane run reaches), or when its perplexity
/// overflows a double.
inline constexpr double kDivergenceFactor = 2.0;

/// Everything a training checkpoint records outside its tensors.
struct CheckpointRecord {
  std::string model;   ///< txl_model_info_t::model_name
  std::string dataset; ///< the corpus the run trained on
  LoopState loop;
  /// Rows of memory saved per chunk and layer (tensors
  /// "train.mems.chunk<c>.layer<l>", [mem_rows, batch / chunks, d_model]:
  /// chunk c holds global batch columns [c·batch/chunks, (c+1)·batch/chunks)).
  int64_t memRows = 0;
  int64_t batchSize = 0;  ///< [train] batch_size
  int64_t batchChunk = 0; ///< chunks each batch is split into
  std::string numpyRng;   ///< NumpyRandomState::save
  /// lm1b's train iterator position (LMMultiFileIterator::saveState, read
  /// there); metadata "iterator_state", empty and absent for the ordered
  /// corpora, whose position is loop.iteratorRow.
  std::string iteratorState;
  uint64_t seed = 0;   ///< the run's --seed
  int64_t threads = 0; ///< the run's thread count (per rank)
  /// The run's data-parallel ranks (metadata "ranks"; 1 when absent). The
  /// memory tensors hold the global batch's columns whatever the count, as
  /// one process stores them: a checkpoint resumes on any rank count.
  int64_t ranks = 1;
  /// The run's max_step, which its schedules follow (the cosine lr's T_max,
  /// the Al-Rfou layer drops): metadata "max_step", absent in checkpoints
  /// from before it was recorded (issue 48, item 2).
  std::optional<int64_t> maxStep;
  /// Whether the loss-scaling counters (loop.lossScaleLog2, cleanSteps,
  /// skippedSteps) are recorded: runs of --precision=fp16 executables.
  bool lossScaling = false;
};

/// A double as hexadecimal text that strtod reads back exactly
/// ("0x1.47ae147ae147bp-7"; "inf", "nan").
std::string exactDouble(double value);

/// The `__metadata__` strings of `record`.
std::map<std::string, std::string>
checkpointMetadata(const CheckpointRecord &record);

/// Reads and validates what `checkpointMetadata` wrote; `path` names the
/// file in messages. Errors (TXL_DATA_ERROR, "<path>: ..."): a missing key
/// ("not a txlc training checkpoint (no 'step' in its metadata)"); another
/// format tag; a value that is not a number of its kind ("metadata 'step':
/// '12x' is not an integer"), out of range for it (integers beyond 64 bits
/// are refused, not wrapped) or impossible (negative counts, epoch < 1,
/// batch_chunk not dividing batch_size, threads < 1, a learning rate or loss
/// that is not finite, a loss scale outside float's range); a random state
/// NumpyRandomState cannot restore.
CheckpointRecord
parseCheckpointMetadata(const std::map<std::string, std::string> &metadata,
                        const std::string &path);

} // namespace txl::rt

#endif // TXL_RT_CHECKPOINT_H

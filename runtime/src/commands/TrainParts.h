//===- TrainParts.h - The parts of `train`, shared by its files -*- C++ -*-===//
//
// `train` (Train.h) is split by concern, one file each:
//
//   Train.cpp           one rank's run: its set-up (trainRank), the updates
//                       (RankRun: segments, the chunks' backward, the
//                       optimizer step, log lines, metrics, validation,
//                       checkpoints; RunLog: the log), the test at the end
//   TrainSchedule.cpp   the run's settings, the compiled learning-rate
//                       schedule and dev_perf's plateau rule
//   TrainingData.cpp    the train iterator, each chunk's memory, and the
//                       evaluation of a split
//   TrainCheckpoint.cpp the training checkpoint written and restored
//   WorkDir.cpp         the work directory: its files, its lock, what a
//                       killed run left there
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_COMMANDS_TRAINPARTS_H
#define TXL_RT_COMMANDS_TRAINPARTS_H

#include "txl/rt/collectives/DataParallel.h"
#include "txl/rt/commands/Train.h"
#include "txl/rt/data/Checkpoint.h"
#include "txl/rt/data/Corpus.h"
#include "txl/rt/data/LMIterator.h"
#include "txl/rt/data/SafeTensors.h"
#include "txl/rt/support/Status.h"
#include "txl/runtime.h"

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace txl::rt {

//===----------------------------------------------------------------------===//
// TrainSchedule.cpp
//===----------------------------------------------------------------------===//

/// The resolved settings of one run.
struct Settings {
  std::string dataDir, dataset, workDir;
  int64_t maxStep = 0, logInterval = 0, evalInterval = 0;
  int64_t checkpointInterval = 0, maxEvalSteps = -1;
  uint64_t seed = 0;
  int threads = 0;
  bool characterLevel = false;
  // Validation as train.py's evaluate(): eval tgt_len, the memory grown by
  // what the segment shrank.
  int64_t evalTgtLen = 0, evalMemLen = 0, evalBatch = 0;
  // Dynamic loss scaling (--precision=fp16 executables only): the first
  // scale's log2 (0, no scaling, for the others) and the updates without
  // overflow that double it.
  bool lossScaling = false;
  int32_t lossScaleInitLog2 = 0;
  int64_t lossScaleWindow = 1000;
};

/// The settings of a run from the model file and the command line.
/// Errors (TXL_INVALID_ARGUMENT, naming the option or key): no work
/// directory, dataset or data directory; a dataset the model's iterator or
/// objective cannot read; a non-positive interval or max_step; batch_chunk
/// not dividing batch_size; negative threads; loss-scaling options for an
/// executable that is not fp16, or out of range.
Settings resolveSettings(const txl_model_info_t &info,
                         const TrainOptions &options);

/// The compiled schedule: the lr train.py sets after `step` updates when
/// `lr` was in effect (step 0: the first update's lr), in a run of
/// `maxStep` updates.
double scheduledLr(txl_session_t *session, int64_t step, double lr,
                   int64_t maxStep);

/// What of a run follows its max_step, for messages: the cosine lr (T_max)
/// and objective "alrfou"'s intermediate-layer losses (each dropped at a
/// fraction of max_step); empty when nothing does, and a run can then be
/// lengthened on --resume.
std::string maxStepSchedules(const txl_model_info_t &info);

/// ReduceLROnPlateau(mode 'min', factor decay_rate, patience, min_lr lr_min,
/// threshold 1e-4 relative, eps 1e-8).step(val_loss), as train.py's
/// dev_perf scheduler: returns the new lr.
double plateauStep(const txl_model_info_t &info, LoopState &state,
                   double valLoss);

/// The optimizer state tensors the session keeps (txl_session_optimizer_state)
/// and their checkpoint names.
class OptimizerStates {
public:
  explicit OptimizerStates(const txl_model_info_t &info) : info_(info) {
    for (int32_t i = 0; i < info.n_params; ++i)
      if (info.params[i].trainable)
        trainable_.push_back(i);
  }

  int numStates() const { return info_.n_optim_states; }
  const std::vector<int32_t> &trainable() const { return trainable_; }

  /// The checkpoint name of state `s` of trainable parameter `t`: PyTorch's
  /// optimizer state keys (exp_avg, exp_avg_sq / momentum_buffer / sum).
  std::string stateName(int s, size_t t) const {
    std::string_view optim = info_.optim;
    std::string_view key = optim == "adam"
                               ? (s == 0 ? "exp_avg" : "exp_avg_sq")
                               : (optim == "sgd" ? "momentum_buffer" : "sum");
    return fmt::format("optim.{}.{}", key, info_.params[trainable_[t]].name);
  }

private:
  const txl_model_info_t &info_;
  std::vector<int32_t> trainable_;
};

//===----------------------------------------------------------------------===//
// TrainingData.cpp
//===----------------------------------------------------------------------===//

/// A copy of a session's memory.
struct MemorySnapshot {
  int64_t mlen = 0, batch = 0;
  std::vector<std::vector<float>> layers;

  /// A copy of the session's memory, of `batch` columns.
  static MemorySnapshot take(const txl_model_info_t &info,
                             txl_session_t *session, int64_t batch);
  /// Makes this the session's memory (txl_session_set_memory).
  void restore(txl_session_t *session) const;
};

/// The data side of train.py's loop: the train iterator (fixed-length, or
/// varlen drawing from the numpy generator train.py seeds with `seed`; for
/// lm1b the shuffling LMMultiFileIterator over the training shards, drawing
/// from that generator too) and the memory of each of the batch_chunk column
/// chunks (train.py keeps one `mems` per chunk): chunk c's is the session's
/// memory slot c (txl_session_select_memory), so that on the GPU targets every
/// chunk's memory stays on the device. A data-parallel rank iterates over
/// the whole global batch, as every rank does, and owns the columns
/// `columns` of it (DataParallel.h), split into its batch_chunk chunks.
class TrainingData {
public:
  /// Errors: TXL_DATA_ERROR when an ordered train split is too short for
  /// one segment (lm1b's shards are read lazily: `next` reports theirs);
  /// TXL_INVALID_ARGUMENT when the rank's columns do not split into
  /// batch_chunk chunks.
  TrainingData(const txl_model_info_t &info, const Corpus &corpus,
               uint64_t seed, IndexRange columns);

  int64_t chunks() const { return chunks_; }
  /// This rank's columns per chunk.
  int64_t chunkBatch() const { return chunkBatch_; }
  /// This rank's columns of the global batch.
  IndexRange columns() const { return columns_; }
  /// Whether chunk 0 is the whole global batch (one chunk, one rank): the
  /// segment is then passed as it is.
  bool wholeBatch() const {
    return chunks_ == 1 && columns_.count == info_.batch_size;
  }
  bool next(LMSegment &out) {
    if (multiFile_) {
      bool more = multiFile_->next(out);
      segmentsThisEpoch_ += more ? 1 : 0;
      return more;
    }
    return varlen_ ? varlen_->next(out) : fixed_->next(out);
  }
  /// The ordered iterators' next row; the stream iterator's segments taken
  /// this epoch (informational: its position is iteratorState()).
  int64_t position() const {
    if (multiFile_)
      return segmentsThisEpoch_;
    return varlen_ ? varlen_->position() : fixed_->position();
  }
  /// The stream iterator's position (LMMultiFileIterator::saveState); empty
  /// for the ordered iterators, whose position() says it all.
  std::string iteratorState() const {
    return multiFile_ ? multiFile_->saveState() : std::string();
  }
  /// Continues at a checkpoint's position: `row` for the ordered
  /// iterators, `state` (iteratorState) for lm1b's. Errors: TXL_DATA_ERROR,
  /// naming `source`, for an lm1b checkpoint without a state, and as
  /// LMMultiFileIterator::restoreState.
  void restorePosition(int64_t row, const std::string &state,
                       const std::string &source);
  /// train.py's global numpy generator.
  NumpyRandomState &rng() { return multiFile_ ? multiFile_->rng() : rng_; }

  /// A new epoch: the iterator from its start (lm1b: the shards in a new
  /// order), every chunk's memory empty.
  void startEpoch(txl_session_t *session);

  /// Makes chunk `c`'s memory the session's.
  void enterChunk(txl_session_t *session, int64_t c) {
    checkStatus(txl_session_select_memory(session, c));
    current_ = c;
  }
  /// A copy of chunk `c`'s memory.
  MemorySnapshot memory(txl_session_t *session, int64_t c);
  /// Replaces chunk `c`'s memory.
  void setMemory(txl_session_t *session, int64_t c,
                 const MemorySnapshot &memory);

  /// This rank's chunk `c` of a [rows, batch_size] block: columns
  /// first + [c * chunkBatch, (c + 1) * chunkBatch) of it
  /// (torch.chunk(data, batch_chunk, 1) of the rank's columns).
  std::vector<int64_t> chunkColumns(const std::vector<int64_t> &block,
                                    int64_t rows, int64_t c) const;

private:
  const txl_model_info_t &info_;
  int64_t chunks_;
  IndexRange columns_;
  int64_t chunkBatch_;
  NumpyRandomState rng_;
  std::optional<LMOrderedIterator> fixed_;
  std::optional<LMVarlenIterator> varlen_;
  std::optional<LMMultiFileIterator> multiFile_;
  int64_t segmentsThisEpoch_ = 0; ///< multiFile_'s position()
  int64_t current_ = 0;           ///< the chunk whose memory slot is selected

  void seek(int64_t row) {
    if (varlen_)
      varlen_->seek(row);
    else
      fixed_->seek(row);
  }
};

/// Mean NLL (nats) of a split as train.py's evaluate(): memory from empty,
/// carried over the split, at most `maxSteps` segments when > 0. The
/// segments are those of official get_iterator: LMOrderedIterator over an
/// ordered split, LMShuffledIterator without shuffling over lm1b's
/// sentences (every segment full: the mean over tokens is evaluate()'s
/// seq_len-weighted mean). A data-parallel rank evaluates its columns of
/// the evaluation batch (unevenColumns: the official eval batch of 10 need
/// not divide by the ranks; a rank may have none) and the sums are reduced
/// over the ranks: the mean is the single process's up to the order of the
/// sum.
double evaluateSplit(const txl_model_info_t &info, txl_session_t *session,
                     const Corpus &corpus, Split split,
                     const Settings &settings, bool progress,
                     Communicator &comm);

//===----------------------------------------------------------------------===//
// TrainCheckpoint.cpp
//===----------------------------------------------------------------------===//

/// The model tensors: every parameter under its name and its tied aliases
/// (so that the official load_state_dict finds every key).
void addModelTensors(const txl_model_info_t &info, txl_session_t *session,
                     TensorMap &tensors);

/// Writes the training checkpoint (rank 0; a collective, as
/// addMemoryTensors).
void saveTrainingCheckpoint(const std::string &path,
                            const txl_model_info_t &info,
                            txl_session_t *session, OptimizerStates &optimizer,
                            const LoopState &state, const Settings &settings,
                            TrainingData &data, Communicator &comm);

/// Restores parameters, optimizer state, memory and counters from a
/// checkpoint written by saveTrainingCheckpoint; returns its settings'
/// seed and threads through `settings` where the command line left them.
LoopState loadTrainingCheckpoint(const std::string &path,
                                 const txl_model_info_t &info,
                                 txl_session_t *session,
                                 OptimizerStates &optimizer, Settings &settings,
                                 const TrainOptions &options,
                                 TrainingData &data, Communicator &comm);

//===----------------------------------------------------------------------===//
// WorkDir.cpp
//===----------------------------------------------------------------------===//

/// Where the work directory's files go.
struct WorkPaths {
  std::string log, metrics, last, best;
  explicit WorkPaths(const std::string &dir)
      : log(dir + "/log.txt"), metrics(dir + "/metrics.jsonl"),
        last(dir + "/last.safetensors"), best(dir + "/best.safetensors") {}
};

/// An exclusive lock on a work directory for the life of one run (issue
/// 48, item 4): `flock` on `<dir>/.lock`, which holds the locking run's
/// pid. A second run into the same directory fails at once, naming that
/// pid, instead of interleaving log.txt and replacing the other's
/// checkpoints. The kernel drops the lock when the process ends, however
/// it ends.
class WorkDirLock {
public:
  /// Errors: TXL_INVALID_ARGUMENT naming the holder's pid when another run
  /// holds the lock; TXL_IO_ERROR when the lock file cannot be opened.
  explicit WorkDirLock(const std::string &dir);
  ~WorkDirLock();
  WorkDirLock(const WorkDirLock &) = delete;
  WorkDirLock &operator=(const WorkDirLock &) = delete;

private:
  std::string path_;
  int fd_ = -1;
};

/// Checks and prepares the work directory before anything is trained: a
/// resume needs its checkpoint (and creates nothing when it is missing);
/// on rank 0 (`root`) the directory is created, must be writable (which
/// would otherwise surface at the first checkpoint), is locked into `lock`
/// for the run, must not hold a previous run unless --resume or
/// --overwrite, and loses what a killed run left (one log line on `out`).
/// Errors: TXL_NOT_FOUND, TXL_IO_ERROR, TXL_INVALID_ARGUMENT naming the
/// path.
void prepareWorkDir(const Settings &settings, const TrainOptions &options,
                    const WorkPaths &paths, bool root,
                    std::optional<WorkDirLock> &lock, std::FILE *out);

/// Keeps the metrics lines of updates up to `step` (a resumed run
/// rewrites what came after its checkpoint).
void truncateMetrics(const std::string &path, int64_t step);

} // namespace txl::rt

#endif // TXL_RT_COMMANDS_TRAINPARTS_H

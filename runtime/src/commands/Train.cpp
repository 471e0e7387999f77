//===- Train.cpp - `<model> train`: the official train.py loop --*- C++ -*-===//
//
// The loop is train.py's `train()` over an LMOrderedIterator; the numerics
// are generated code (txl_segment_grad, the optimizer update,
// txl_learning_rate), which the session runs on the CPU or, for the GPU
// targets, on the device, where the parameters, gradients and optimizer
// states stay; this file only sequences them, logs, and saves / restores
// the state. Everything a later update depends on is in the checkpoint, and
// every quantity is computed in a fixed order, so a resumed run reproduces
// the uninterrupted one bit for bit (with the same OpenBLAS thread count).
//
//===----------------------------------------------------------------------===//

#include "txl/rt/commands/Train.h"

#include "txl/rt/collectives/DataParallel.h"
#include "txl/rt/commands/AlRfou.h"
#include "txl/rt/commands/Commands.h"
#include "txl/rt/commands/GradientReducer.h"
#include "txl/rt/commands/Progress.h"
#include "txl/rt/data/Checkpoint.h"
#include "txl/rt/data/Corpus.h"
#include "txl/rt/data/LMIterator.h"
#include "txl/rt/data/SafeTensors.h"
#include "txl/rt/support/Status.h"

#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
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

int64_t numElements(const txl_param_info_t &p) {
  int64_t count = 1;
  for (int32_t d = 0; d < p.rank; ++d)
    count *= p.shape[d];
  return count;
}

Shape shapeOf(const txl_param_info_t &p) {
  return Shape(p.shape, p.shape + p.rank);
}

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

/// The optimizer state tensors the session keeps (txl_session_optimizer_state)
/// and their checkpoint names.
class Optimizer {
public:
  explicit Optimizer(const txl_model_info_t &info) : info_(info) {
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

/// The compiled schedule: the lr train.py sets after `step` updates when
/// `lr` was in effect (step 0: the first update's lr), in a run of
/// `maxStep` updates.
double scheduledLr(txl_session_t *session, int64_t step, double lr,
                   int64_t maxStep) {
  double out = 0;
  checkStatus(txl_session_learning_rate(session, step, lr, maxStep, &out));
  return out;
}

/// What of a run follows its max_step, for messages: the cosine lr (T_max)
/// and objective "alrfou"'s intermediate-layer losses (each dropped at a
/// fraction of max_step); empty when nothing does, and a run can then be
/// lengthened on --resume.
std::string maxStepSchedules(const txl_model_info_t &info) {
  std::vector<std::string> what;
  if (std::string_view(info.scheduler) == "cosine")
    what.push_back("cosine learning rate (T_max)");
  if (isAlRfouObjective(info) && info.intermediate_layers && info.n_layer > 1)
    what.push_back("intermediate-layer losses (each dropped at a fraction)");
  return fmt::format("{}", fmt::join(what, " and "));
}

/// ReduceLROnPlateau(mode 'min', factor decay_rate, patience, min_lr lr_min,
/// threshold 1e-4 relative, eps 1e-8).step(val_loss), as train.py's
/// dev_perf scheduler: returns the new lr.
double plateauStep(const txl_model_info_t &info, LoopState &state,
                   double valLoss) {
  if (valLoss < state.plateauBest * (1.0 - 1e-4)) {
    state.plateauBest = valLoss;
    state.plateauBad = 0;
  } else {
    ++state.plateauBad;
  }
  if (state.plateauBad <= info.patience)
    return state.lr;
  state.plateauBad = 0;
  double reduced = std::max(state.lr * info.decay_rate, info.lr_min);
  return state.lr - reduced > 1e-8 ? reduced : state.lr;
}

/// A copy of a session's memory.
struct MemorySnapshot {
  int64_t mlen = 0, batch = 0;
  std::vector<std::vector<float>> layers;

  static MemorySnapshot take(const txl_model_info_t &info,
                             txl_session_t *session, int64_t batch) {
    MemorySnapshot snapshot;
    snapshot.batch = batch;
    for (int64_t l = 0; l <= info.n_layer; ++l) {
      const float *data = nullptr;
      checkStatus(txl_session_memory(session, l, &data, &snapshot.mlen));
      snapshot.layers.emplace_back(data,
                                   data + snapshot.mlen * batch * info.d_model);
    }
    return snapshot;
  }
  void restore(txl_session_t *session) const {
    std::vector<const float *> pointers;
    for (const auto &layer : layers)
      pointers.push_back(layer.data());
    checkStatus(txl_session_set_memory(session, mlen, batch, pointers.data()));
  }
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
               uint64_t seed, IndexRange columns)
      : info_(info), chunks_(info.batch_chunk), columns_(columns),
        chunkBatch_(columns.count / info.batch_chunk),
        rng_(static_cast<uint32_t>(seed)) {
    if (columns.count % chunks_ != 0)
      fail(TXL_INVALID_ARGUMENT,
           "[train] batch_size {} gives each rank {} columns, which do not "
           "split into batch_chunk {} chunks",
           info.batch_size, columns.count, chunks_);
    if (datasetSpec(corpus.dataset).sentenceLevel) {
      // Official get_iterator('train') for lm1b: shuffle=True, ext_len 0.
      multiFile_.emplace(corpus.trainPaths, corpus.vocab, info.batch_size,
                         info.tgt_len, /*extLen=*/0, /*shuffle=*/true,
                         static_cast<uint32_t>(seed));
      return;
    }
    if (info.varlen)
      varlen_.emplace(corpus.train, info.batch_size, info.tgt_len, rng_);
    else
      fixed_.emplace(corpus.train, info.batch_size, info.tgt_len);
    const LMOrderedIterator &rows = varlen_ ? varlen_->rows() : *fixed_;
    if (rows.numSegments() == 0)
      fail(TXL_DATA_ERROR, "the train split is too short for one segment");
  }

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
                       const std::string &source) {
    if (!multiFile_) {
      // A position past where this corpus's stream can end an update (the
      // last segment's start plus tgt_len) is not a checkpoint of training
      // on it (issue 48, item 15: it silently started epoch 2).
      const LMOrderedIterator &rows = varlen_ ? varlen_->rows() : *fixed_;
      const int64_t end = rows.numSteps() - 1 + rows.bptt();
      if (row < 0 || row > end)
        fail(TXL_DATA_ERROR,
             "{}: metadata 'iterator_row' {} is outside this corpus's stream "
             "(0 to {}: {} rows of {} columns); was it written for another "
             "corpus or batch size?",
             source, row, end, rows.numSteps(), rows.batch());
      seek(row);
      return;
    }
    if (state.empty())
      fail(TXL_DATA_ERROR,
           "{}: no 'iterator_state' in its metadata: not a checkpoint of "
           "training on sentence shards",
           source);
    multiFile_->restoreState(state, source);
    segmentsThisEpoch_ = row;
  }
  /// train.py's global numpy generator.
  NumpyRandomState &rng() { return multiFile_ ? multiFile_->rng() : rng_; }

  /// A new epoch: the iterator from its start (lm1b: the shards in a new
  /// order), every chunk's memory empty.
  void startEpoch(txl_session_t *session) {
    if (multiFile_) {
      multiFile_->reset();
      segmentsThisEpoch_ = 0;
    } else {
      seek(0);
    }
    for (int64_t c = chunks_ - 1; c >= 0; --c) {
      enterChunk(session, c);
      checkStatus(txl_session_reset_memory(session, chunkBatch_));
    }
  }

  /// Makes chunk `c`'s memory the session's.
  void enterChunk(txl_session_t *session, int64_t c) {
    checkStatus(txl_session_select_memory(session, c));
    current_ = c;
  }
  /// A copy of chunk `c`'s memory.
  MemorySnapshot memory(txl_session_t *session, int64_t c) {
    int64_t current = current_;
    enterChunk(session, c);
    MemorySnapshot snapshot = MemorySnapshot::take(info_, session, chunkBatch_);
    enterChunk(session, current);
    return snapshot;
  }
  /// Replaces chunk `c`'s memory.
  void setMemory(txl_session_t *session, int64_t c,
                 const MemorySnapshot &memory) {
    int64_t current = current_;
    enterChunk(session, c);
    memory.restore(session);
    enterChunk(session, current);
  }

  /// This rank's chunk `c` of a [rows, batch_size] block: columns
  /// first + [c * chunkBatch, (c + 1) * chunkBatch) of it
  /// (torch.chunk(data, batch_chunk, 1) of the rank's columns).
  std::vector<int64_t> chunkColumns(const std::vector<int64_t> &block,
                                    int64_t rows, int64_t c) const {
    std::vector<int64_t> out(static_cast<size_t>(rows * chunkBatch_));
    for (int64_t r = 0; r < rows; ++r)
      std::copy_n(block.begin() + r * info_.batch_size + columns_.first +
                      c * chunkBatch_,
                  chunkBatch_, out.begin() + r * chunkBatch_);
    return out;
  }

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
                     Communicator &comm) {
  std::string_view label = splitName(split);
  SplitIterator iterator(corpus, split, settings.evalBatch,
                         settings.evalTgtLen);
  const IndexRange columns =
      unevenColumns(settings.evalBatch, comm.rank(), comm.size());
  txl_run_options_t options{};
  options.mem_len = settings.evalMemLen;
  options.clamp_len = info.clamp_len;
  options.same_length = info.same_length;
  if (columns.count > 0)
    checkStatus(txl_session_reset_memory(session, columns.count));
  ProgressBar bar(std::string(label), iterator.expectedTokens(), stderr,
                  progress && comm.rank() == 0 && isatty(fileno(stderr)));
  std::vector<float> nll;
  std::vector<int64_t> data, target;
  double sums[2] = {0, 0}; // NLL, tokens (over every rank's columns)
  int64_t segments = 0;
  LMSegment segment;
  while (iterator.next(segment)) {
    if (settings.maxEvalSteps > 0 && segments >= settings.maxEvalSteps)
      break;
    const int64_t rows = segment.seqLen;
    const bool whole = columns.count == segment.batch;
    sums[1] += double(rows * segment.batch);
    ++segments;
    bar.update(int64_t(sums[1]));
    if (columns.count == 0)
      continue;
    if (!whole) {
      data.resize(size_t(rows * columns.count));
      target.resize(data.size());
      for (int64_t r = 0; r < rows; ++r)
        for (const auto &[from, into] :
             {std::pair{&segment.data, &data}, {&segment.target, &target}})
          std::copy_n(from->begin() + r * segment.batch + columns.first,
                      columns.count, into->begin() + r * columns.count);
    }
    nll.resize(static_cast<size_t>(rows * columns.count));
    checkStatus(txl_session_run_segment(
        session, whole ? segment.data.data() : data.data(),
        whole ? segment.target.data() : target.data(), rows, columns.count,
        &options, nll.data()));
    for (float value : nll)
      sums[0] += value;
  }
  comm.allreduceSum(&sums[0], 1);
  const double total = sums[0];
  const int64_t tokens = int64_t(sums[1]);
  if (tokens == 0)
    fail(TXL_DATA_ERROR,
         "the {} split's sentences fill no segment of {} columns of {} "
         "tokens",
         label, settings.evalBatch, settings.evalTgtLen);
  return total / static_cast<double>(tokens);
}

Settings resolveSettings(const txl_model_info_t &info,
                         const TrainOptions &options) {
  Settings s;
  s.dataDir = options.dataDir.empty() ? info.data_path : options.dataDir;
  s.dataset = options.dataset.empty() ? info.dataset : options.dataset;
  s.workDir = options.workDir;
  if (s.workDir.empty())
    fail(TXL_INVALID_ARGUMENT, "train needs --work-dir");
  if (s.dataset.empty())
    fail(TXL_INVALID_ARGUMENT,
         "no dataset: the model file sets no [data] dataset; pass --dataset");
  if (s.dataDir.empty())
    fail(TXL_INVALID_ARGUMENT,
         "no data directory: the model file sets no [data] path; pass --data");
  // lm1b's official train iterator (LMMultiFileIterator) has no
  // get_varlen_iter, and the alrfou objective samples windows of one stream.
  if (datasetSpec(s.dataset).sentenceLevel && info.varlen)
    fail(TXL_INVALID_ARGUMENT,
         "[train] varlen: '{}' is read as sentence shards, whose official "
         "iterator has fixed-length segments only",
         s.dataset);
  if (datasetSpec(s.dataset).sentenceLevel && isAlRfouObjective(info))
    fail(TXL_INVALID_ARGUMENT,
         "[train] objective = \"alrfou\" samples windows of one text "
         "stream; '{}' is sentence shards",
         s.dataset);
  s.characterLevel = isCharacterDataset(s.dataset);
  s.maxStep = options.maxStep.value_or(info.max_step);
  s.logInterval = options.logInterval.value_or(info.log_interval);
  s.evalInterval = options.evalInterval.value_or(info.eval_interval);
  s.checkpointInterval = options.checkpointInterval.value_or(s.logInterval);
  s.maxEvalSteps = options.maxEvalSteps.value_or(info.max_eval_steps);
  s.seed = static_cast<uint64_t>(options.seed.value_or(info.seed));
  s.threads = options.threads.value_or(0);
  for (auto [name, value] :
       {std::pair<const char *, int64_t>{"max-step", s.maxStep},
        {"log-interval", s.logInterval},
        {"eval-interval", s.evalInterval},
        {"checkpoint-interval", s.checkpointInterval}})
    if (value <= 0)
      fail(TXL_INVALID_ARGUMENT, "--{} must be positive, got {}", name, value);
  if (info.batch_chunk <= 0 || info.batch_size % info.batch_chunk != 0)
    fail(TXL_INVALID_ARGUMENT,
         "[train] batch_chunk {} must divide batch_size {}", info.batch_chunk,
         info.batch_size);
  if (options.threads && *options.threads < 0)
    fail(TXL_INVALID_ARGUMENT, "--threads must not be negative, got {}",
         *options.threads);
  s.evalTgtLen = info.eval_tgt_len;
  s.evalMemLen = info.mem_len + info.tgt_len - info.eval_tgt_len;
  if (info.mem_len == 0 || s.evalMemLen < 0)
    s.evalMemLen = 0; // train.py grows ext_len instead; ext_len is 0 here
  s.evalBatch = info.eval_batch_size;
  s.lossScaling = info.precision && std::string_view(info.precision) == "f16";
  if (s.lossScaling)
    s.lossScaleInitLog2 = 16; // official train.py: apex's init_scale 2^16
  if (!s.lossScaling && (options.lossScaleInit || options.lossScaleWindow))
    fail(TXL_INVALID_ARGUMENT,
         "--loss-scale-init and --loss-scale-window apply to executables "
         "compiled with --precision=fp16; this one is {}",
         info.precision ? info.precision : "f32");
  if (options.lossScaleInit) {
    int exponent = 0;
    double mantissa = std::frexp(*options.lossScaleInit, &exponent);
    if (mantissa != 0.5 || exponent - 1 < 0 || exponent - 1 > 120)
      fail(TXL_INVALID_ARGUMENT,
           "--loss-scale-init must be a power of two from 1 to 2^120, got {}",
           *options.lossScaleInit);
    s.lossScaleInitLog2 = exponent - 1;
  }
  s.lossScaleWindow = options.lossScaleWindow.value_or(s.lossScaleWindow);
  if (s.lossScaleWindow <= 0)
    fail(TXL_INVALID_ARGUMENT, "--loss-scale-window must be positive, got {}",
         s.lossScaleWindow);
  return s;
}

/// Where the work directory's files go.
struct WorkPaths {
  std::string log, metrics, last, best, plot;
  explicit WorkPaths(const std::string &dir)
      : log(dir + "/log.txt"), metrics(dir + "/metrics.jsonl"),
        last(dir + "/last.safetensors"), best(dir + "/best.safetensors"),
        plot(dir + "/curves.png") {}
};

/// An exclusive lock on a work directory for the life of one run (issue
/// 48, item 4): `flock` on `<dir>/.lock`, which holds the locking run's
/// pid. A second run into the same directory fails at once, naming that
/// pid, instead of interleaving log.txt and replacing the other's
/// checkpoints. The kernel drops the lock when the process ends, however
/// it ends.
class WorkDirLock {
public:
  explicit WorkDirLock(const std::string &dir) : path_(dir + "/.lock") {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd_ < 0)
      fail(TXL_IO_ERROR, "{}: cannot open the work directory's lock: {}", path_,
           std::strerror(errno));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      int err = errno;
      char pid[32] = {};
      ssize_t n = ::pread(fd_, pid, sizeof pid - 1, 0);
      ::close(fd_);
      fd_ = -1;
      std::string holder = n > 0 ? std::string(pid, size_t(n)) : "";
      while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' '))
        holder.pop_back();
      if (err == EWOULDBLOCK)
        fail(TXL_INVALID_ARGUMENT,
             "--work-dir {} is in use by another train run{}: one run per "
             "work directory",
             dir, holder.empty() ? "" : " (pid " + holder + ")");
      fail(TXL_IO_ERROR, "{}: cannot lock: {}", path_, std::strerror(err));
    }
    std::string pid = std::to_string(::getpid()) + "\n";
    if (::ftruncate(fd_, 0) == 0)
      (void)!::pwrite(fd_, pid.data(), pid.size(), 0);
  }
  ~WorkDirLock() {
    if (fd_ >= 0)
      ::close(fd_); // releases the lock
  }
  WorkDirLock(const WorkDirLock &) = delete;
  WorkDirLock &operator=(const WorkDirLock &) = delete;

private:
  std::string path_;
  int fd_ = -1;
};

/// Removes what an earlier run killed mid-write left in `dir`: the
/// temporaries of AtomicFileWriter (`.<name>.tmp.XXXXXX`) of the files a
/// run writes there (issue 48, item 7). Called under the WorkDirLock, when
/// no other run can be writing them. Returns how many it removed.
int removeStaleTemporaries(const std::string &dir, const WorkPaths &paths) {
  int removed = 0;
  DIR *entries = ::opendir(dir.c_str());
  if (!entries)
    return 0;
  std::vector<std::string> prefixes;
  for (const std::string *path :
       {&paths.log, &paths.metrics, &paths.last, &paths.best, &paths.plot})
    prefixes.push_back("." + path->substr(path->rfind('/') + 1) + ".tmp.");
  while (dirent *entry = ::readdir(entries)) {
    std::string name = entry->d_name;
    for (const std::string &prefix : prefixes)
      if (name.size() == prefix.size() + 6 && name.rfind(prefix, 0) == 0 &&
          ::unlink((dir + "/" + name).c_str()) == 0) {
        ++removed;
        break;
      }
  }
  ::closedir(entries);
  return removed;
}

void makeDirectory(const std::string &dir) {
  std::string partial;
  for (size_t i = 0; i <= dir.size(); ++i) {
    if (i == dir.size() || dir[i] == '/') {
      if (!partial.empty() && ::mkdir(partial.c_str(), 0777) != 0 &&
          errno != EEXIST)
        fail(TXL_IO_ERROR, "{}: cannot create directory: {}", partial,
             std::strerror(errno));
    }
    if (i < dir.size())
      partial += dir[i];
  }
}

/// The model tensors: every parameter under its name and its tied aliases
/// (so that the official load_state_dict finds every key).
void addModelTensors(const txl_model_info_t &info, txl_session_t *session,
                     TensorMap &tensors) {
  for (int32_t i = 0; i < info.n_params; ++i) {
    const txl_param_info_t &p = info.params[i];
    float *data = nullptr;
    checkStatus(txl_session_parameter(session, i, &data));
    tensors[p.name] = TensorBlob::f32(shapeOf(p), data);
    for (const char *const *alias = p.aliases; *alias; ++alias)
      tensors[*alias] = tensors[p.name];
  }
}

/// Where global batch column `g` lives: in checkpoint chunk `chunk` (of the
/// single-process layout, global columns [c·B/C, (c+1)·B/C)) at column
/// `column`, and on rank `rank` in its chunk `localChunk` at column
/// `localColumn`.
struct ColumnHome {
  int64_t chunk, column, rank, localChunk, localColumn;
};
ColumnHome columnHome(const txl_model_info_t &info, const TrainingData &data,
                      int64_t g) {
  const int64_t perChunk = info.batch_size / data.chunks();
  const int64_t perRank = data.columns().count;
  const int64_t local = g % perRank;
  return {g / perChunk, g % perChunk, g / perRank, local / data.chunkBatch(),
          local % data.chunkBatch()};
}

/// Every rank's memory, gathered on rank 0 into the checkpoint's tensors
/// "train.mems.chunk<c>.layer<l>" [mlen, batch_size / batch_chunk, d_model]
/// in the single-process layout (one rank: its chunks as they are). Returns
/// mlen. A collective: every rank calls it, only rank 0's `tensors` grow.
int64_t addMemoryTensors(const txl_model_info_t &info, txl_session_t *session,
                         TrainingData &data, Communicator &comm,
                         TensorMap &tensors) {
  const int64_t chunks = data.chunks(), cb = data.chunkBatch();
  const int64_t d = info.d_model;
  std::vector<MemorySnapshot> local;
  for (int64_t c = 0; c < chunks; ++c)
    local.push_back(data.memory(session, c));
  const int64_t mlen = local[0].mlen;
  if (mlen == 0)
    return 0;
  const int64_t perChunk = info.batch_size / chunks;
  const int64_t block = chunks * mlen * cb * d; // [chunk, mlen, cb, d]
  std::vector<float> mine(static_cast<size_t>(block)), all;
  if (comm.rank() == 0)
    all.resize(size_t(block * comm.size()));
  for (int64_t l = 0; l <= info.n_layer; ++l) {
    for (int64_t c = 0; c < chunks; ++c)
      std::copy(local[c].layers[l].begin(), local[c].layers[l].end(),
                mine.begin() + c * mlen * cb * d);
    comm.gatherToRoot(mine.data(), block, all.data());
    if (comm.rank() != 0)
      continue;
    std::vector<std::vector<float>> out(
        size_t(chunks), std::vector<float>(size_t(mlen * perChunk * d)));
    for (int64_t g = 0; g < info.batch_size; ++g) {
      ColumnHome home = columnHome(info, data, g);
      for (int64_t t = 0; t < mlen; ++t)
        std::copy_n(
            all.begin() + home.rank * block +
                ((home.localChunk * mlen + t) * cb + home.localColumn) * d,
            d, out[home.chunk].begin() + (t * perChunk + home.column) * d);
    }
    for (int64_t c = 0; c < chunks; ++c)
      tensors[fmt::format("train.mems.chunk{}.layer{}", c, l)] =
          TensorBlob::f32({mlen, perChunk, d}, out[c].data());
  }
  return mlen;
}

/// Writes the training checkpoint (rank 0; a collective, as
/// addMemoryTensors).
void saveTrainingCheckpoint(const std::string &path,
                            const txl_model_info_t &info,
                            txl_session_t *session, Optimizer &optimizer,
                            const LoopState &state, const Settings &settings,
                            TrainingData &data, Communicator &comm) {
  TensorMap tensors;
  const int64_t mlen = addMemoryTensors(info, session, data, comm, tensors);
  if (comm.rank() != 0)
    return;
  addModelTensors(info, session, tensors);
  for (int s = 0; s < optimizer.numStates(); ++s)
    for (size_t t = 0; t < optimizer.trainable().size(); ++t) {
      const float *state = nullptr;
      checkStatus(txl_session_optimizer_state(
          session, s, optimizer.trainable()[t], &state));
      tensors[optimizer.stateName(s, t)] = TensorBlob::f32(
          shapeOf(info.params[optimizer.trainable()[t]]), state);
    }
  CheckpointRecord record;
  record.model = info.model_name;
  record.dataset = settings.dataset;
  record.loop = state;
  record.memRows = mlen;
  record.batchSize = info.batch_size;
  record.batchChunk = data.chunks();
  record.numpyRng = data.rng().save();
  record.iteratorState = data.iteratorState();
  record.seed = settings.seed;
  record.threads = settings.threads;
  record.ranks = comm.size();
  record.maxStep = settings.maxStep;
  record.lossScaling = settings.lossScaling;
  writeSafeTensors(path, tensors, checkpointMetadata(record));
}

/// Restores parameters, optimizer state, memory and counters from a
/// checkpoint written by saveTrainingCheckpoint; returns its settings'
/// seed and threads through `settings` where the command line left them.
LoopState loadTrainingCheckpoint(const std::string &path,
                                 const txl_model_info_t &info,
                                 txl_session_t *session, Optimizer &optimizer,
                                 Settings &settings,
                                 const TrainOptions &options,
                                 TrainingData &data, Communicator &comm) {
  SafeTensorsFile file = SafeTensorsFile::open(path);
  // Everything is validated before the session or the data see any of it.
  CheckpointRecord record = parseCheckpointMetadata(file.metadata(), path);
  if (record.model != info.model_name)
    fail(TXL_DATA_ERROR, "{}: checkpoint of model '{}', this is '{}'", path,
         record.model, info.model_name);
  if (record.dataset != settings.dataset)
    fail(TXL_DATA_ERROR,
         "{}: checkpoint of training on '{}', this run reads '{}' (its "
         "iterator position means nothing there)",
         path, record.dataset, settings.dataset);
  if (record.batchSize != info.batch_size || record.batchChunk != data.chunks())
    fail(TXL_DATA_ERROR,
         "{}: checkpoint trained with batch_size {} in {} chunks, the model "
         "file now says {} in {}",
         path, record.batchSize, record.batchChunk, info.batch_size,
         data.chunks());
  int64_t mlen = record.memRows;
  if (mlen > info.mem_len)
    fail(TXL_DATA_ERROR, "{}: metadata 'mem_rows' is {}, more than mem_len {}",
         path, mlen, info.mem_len);
  for (int s = 0; s < optimizer.numStates(); ++s)
    for (size_t t = 0; t < optimizer.trainable().size(); ++t)
      file.check(file.get(optimizer.stateName(s, t)), DType::F32,
                 shapeOf(info.params[optimizer.trainable()[t]]));
  const int64_t perChunk = info.batch_size / data.chunks();
  for (int64_t c = 0; c < data.chunks() && mlen > 0; ++c)
    for (int64_t l = 0; l <= info.n_layer; ++l)
      file.check(file.get(fmt::format("train.mems.chunk{}.layer{}", c, l)),
                 DType::F32, {mlen, perChunk, info.d_model});

  checkStatus(txl_session_load_checkpoint(session, path.c_str()));
  for (int s = 0; s < optimizer.numStates(); ++s)
    for (size_t t = 0; t < optimizer.trainable().size(); ++t) {
      const txl_param_info_t &p = info.params[optimizer.trainable()[t]];
      std::vector<float> state(static_cast<size_t>(numElements(p)));
      file.readF32(optimizer.stateName(s, t), shapeOf(p), state.data());
      checkStatus(txl_session_set_optimizer_state(
          session, s, optimizer.trainable()[t], state.data()));
    }
  // The global memory, in the checkpoint's chunks; this rank's columns of
  // it into its own chunks (columnHome).
  const int64_t d = info.d_model, cb = data.chunkBatch();
  std::vector<MemorySnapshot> local(size_t(data.chunks()));
  for (MemorySnapshot &memory : local) {
    memory.mlen = mlen;
    memory.batch = cb;
    memory.layers.assign(size_t(info.n_layer + 1),
                         std::vector<float>(size_t(mlen * cb * d)));
  }
  std::vector<float> saved(size_t(mlen * perChunk * d));
  for (int64_t l = 0; l <= info.n_layer && mlen > 0; ++l)
    for (int64_t c = 0; c < data.chunks(); ++c) {
      file.readF32(fmt::format("train.mems.chunk{}.layer{}", c, l),
                   {mlen, perChunk, d}, saved.data());
      for (int64_t k = 0; k < perChunk; ++k) {
        ColumnHome home = columnHome(info, data, c * perChunk + k);
        if (home.rank != comm.rank())
          continue;
        for (int64_t t = 0; t < mlen; ++t)
          std::copy_n(saved.begin() + (t * perChunk + k) * d, d,
                      local[home.localChunk].layers[l].begin() +
                          (t * cb + home.localColumn) * d);
      }
    }
  for (int64_t c = 0; c < data.chunks(); ++c)
    data.setMemory(session, c, local[c]);
  data.rng().restore(record.numpyRng);
  data.restorePosition(record.loop.iteratorRow, record.iteratorState, path);

  // A resumed run keeps the max_step it started with (metadata "max_step";
  // absent in checkpoints from before it was recorded): its schedules were
  // drawn for it. --max-step may change it only where nothing follows it.
  std::string schedules = maxStepSchedules(info);
  if (record.maxStep && *record.maxStep != settings.maxStep) {
    if (!options.maxStep)
      settings.maxStep = *record.maxStep;
    else if (!schedules.empty())
      fail(TXL_INVALID_ARGUMENT,
           "{}: this run's max_step {} shapes its {}; --max-step {} would "
           "change that mid-run (leave --max-step out, or give {}, to "
           "continue it)",
           path, *record.maxStep, schedules, *options.maxStep, *record.maxStep);
  }
  LoopState state = record.loop;
  if (state.step > settings.maxStep && schedules.empty())
    fail(TXL_INVALID_ARGUMENT,
         "{} is at update {}, past the run's max_step {}: nothing to train "
         "(give --max-step {} or more to continue it)",
         path, state.step, settings.maxStep, state.step + 1);
  if (state.step > settings.maxStep)
    fail(TXL_INVALID_ARGUMENT,
         "{} is at update {}, past the run's max_step {}, which shapes its "
         "{}: nothing to train",
         path, state.step, settings.maxStep, schedules);
  // A checkpoint of another precision starts the loss scaling afresh.
  if (!settings.lossScaling || !record.lossScaling) {
    state.lossScaleLog2 = settings.lossScaleInitLog2;
    state.cleanSteps = 0;
    state.skippedSteps = 0;
  }
  if (!options.seed)
    settings.seed = record.seed;
  // The run's column slices (threads per rank times ranks) decide its
  // dropout masks: on another rank count, keep their total when it divides.
  if (!options.threads)
    settings.threads =
        static_cast<int>((record.threads * record.ranks) % comm.size() == 0
                             ? record.threads * record.ranks / comm.size()
                             : record.threads);
  return state;
}

/// Keeps the metrics lines of updates up to `step` (a resumed run
/// rewrites what came after its checkpoint).
void truncateMetrics(const std::string &path, int64_t step) {
  std::ifstream in(path);
  if (!in)
    return;
  std::string kept, line;
  while (std::getline(in, line)) {
    nlohmann::json record = nlohmann::json::parse(line, nullptr, false);
    if (record.is_object() && record.value("step", int64_t(0)) <= step &&
        record.value("kind", "") != "test")
      kept += line + "\n";
  }
  writeFileAtomic(path, kept);
}

/// curves.png from metrics.jsonl with gnuplot; a warning when it fails.
void plotCurves(const WorkPaths &paths, std::FILE *out) {
  std::ifstream in(paths.metrics);
  std::string train, valid, line;
  while (std::getline(in, line)) {
    nlohmann::json r = nlohmann::json::parse(line, nullptr, false);
    if (!r.is_object() || !r.contains("loss"))
      continue;
    std::string row = fmt::format("{} {}\n", r.value("step", int64_t(0)),
                                  r.value("loss", 0.0));
    if (r.value("kind", "") == "train")
      train += row;
    else if (r.value("kind", "") == "valid")
      valid += row;
  }
  std::string dir = paths.plot.substr(0, paths.plot.rfind('/'));
  std::string trainData = dir + "/.curves_train.dat";
  std::string validData = dir + "/.curves_valid.dat";
  writeFileAtomic(trainData, train);
  writeFileAtomic(validData, valid);
  std::string script =
      fmt::format("set terminal pngcairo size 960,540\n"
                  "set output '{}'\n"
                  "set xlabel 'step'\nset ylabel 'loss (nats per token)'\n"
                  "set grid\nset key top right\n"
                  "plot '{}' using 1:2 with lines title 'train', "
                  "'{}' using 1:2 with linespoints title 'valid'\n",
                  paths.plot, trainData, validData);
  std::FILE *gnuplot = ::popen("gnuplot 2>&1", "w");
  int status = -1;
  if (gnuplot) {
    std::fputs(script.c_str(), gnuplot);
    status = ::pclose(gnuplot);
  }
  std::remove(trainData.c_str());
  std::remove(validData.c_str());
  if (status != 0)
    fmt::print(out, "warning: gnuplot failed; no {}\n", paths.plot);
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
    for (int64_t k = 0; k < numElements(info.params[i]); ++k) {
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
  // The work directory is checked before anything is trained: a resume
  // needs its checkpoint (and creates nothing when it is missing), and
  // every run must be able to write there, which would otherwise surface at
  // the first checkpoint, checkpoint_interval updates in.
  if (options.resume) {
    struct stat st;
    if (::stat(paths.last.c_str(), &st) != 0)
      fail(TXL_NOT_FOUND, "{}: nothing to resume (no checkpoint)", paths.last);
  }
  std::optional<WorkDirLock> lock; // rank 0's, for the whole run
  if (root) {
    makeDirectory(settings.workDir);
    struct stat dirStat;
    if (::stat(settings.workDir.c_str(), &dirStat) != 0 ||
        !S_ISDIR(dirStat.st_mode))
      fail(TXL_IO_ERROR, "{}: --work-dir is not a directory", settings.workDir);
    try {
      std::string probe = settings.workDir + "/.txl-write-check";
      writeFileAtomic(probe, "");
      std::remove(probe.c_str());
    } catch (const Error &error) {
      fail(TXL_IO_ERROR, "--work-dir {} is not writable: {}", settings.workDir,
           error.what());
    }
    lock.emplace(settings.workDir);
    // A fresh run would replace a previous run's checkpoints and log (issue
    // 48, item 4): only when asked to.
    struct stat previous;
    if (!options.resume && !options.overwrite &&
        ::stat(paths.last.c_str(), &previous) == 0)
      fail(TXL_INVALID_ARGUMENT,
           "{} holds a previous run ({}): give --resume to continue it, or "
           "--overwrite to start a new run there",
           settings.workDir, paths.last);
    if (int removed = removeStaleTemporaries(settings.workDir, paths))
      std::fprintf(out,
                   "| removed %d temporary file(s) a killed run left in %s |\n",
                   removed, settings.workDir.c_str());
  }

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
  Optimizer optimizer(info);
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
    nAll += numElements(info.params[i]);
    if (std::string_view(info.params[i].name).substr(0, 7) == "layers.")
      nNonEmb += numElements(info.params[i]);
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
    const bool onDevice = info.device_backend && *info.device_backend;
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
        const float *end = values + numElements(info.params[i]);
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
  metrics.close();
  if (root && options.plot)
    plotCurves(paths, out);
}

} // namespace

void runTrainCommand(const txl_model_info_t &info, const TrainOptions &options,
                     std::FILE *out) {
  std::unique_ptr<Communicator> comm = Communicator::forThisProcess();
  // The CUDA target averages its gradients on the GPUs (NCCL).
  if (comm->size() > 1 && info.device_backend &&
      std::string_view(info.device_backend) == "cuda")
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

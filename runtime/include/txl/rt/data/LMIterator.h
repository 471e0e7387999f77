//===- LMIterator.h - LM segment iterators (official) -----------*- C++ -*-===//
//
// The segment iterators of the official pytorch/data_utils.py
// (kimiyoung/transformer-xl); docs/datasets.md says which dataset uses which.
//
// `LMOrderedIterator(data, bsz, bptt, ext_len)`: the stream is cut to
// n_step = len // bsz rows and laid out as `data[:n_step*bsz].view(bsz,
// -1).t()`, i.e. a [n_step, bsz] matrix whose column b holds tokens
// [b*n_step, (b+1)*n_step). Segments start at i = 0, bptt, 2*bptt, ... while
// i < n_step - 1, with
//   seq_len = min(bptt, n_step - 1 - i)
//   data    = rows [max(0, i - ext_len), i + seq_len)
//   target  = rows [i + 1, i + 1 + seq_len)
// so the last segment may be shorter and every token but the first row is
// predicted exactly once.
//
// `LMShuffledIterator` / `LMMultiFileIterator` (lm1b): sentences, each framed
// by "<S>" ... "<S>", are poured into bsz independent column streams by
// `stream_iterator` (see LMStreamBatcher); every segment is exactly bptt rows
// and, within a column, target[t] = data[n_retain + t + 1] and the last
// target row opens the next segment's new data (the "<S>" closing one
// sentence and the "<S>" opening the next share an id).
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_LMITERATOR_H
#define TXL_RT_LMITERATOR_H

#include "txl/rt/data/Corpus.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace txl::rt {

/// One segment: row-major int64 blocks, `data` [dataRows, batch] (dataRows =
/// seqLen + the extended context, i.e. seqLen when ext_len = 0) and `target`
/// [seqLen, batch].
struct LMSegment {
  /// LMOrderedIterator: row i, the first target row is start + 1; the stream
  /// iterators: how many segments this epoch yielded before this one.
  int64_t start = 0;
  int64_t seqLen = 0;   ///< rows of target (official seq_len)
  int64_t dataRows = 0; ///< rows of data
  int64_t batch = 0;
  std::vector<int64_t> data;
  std::vector<int64_t> target;
};

/// Official `LMOrderedIterator.get_fixlen_iter()`.
class LMOrderedIterator {
public:
  /// Lays out `stream` (copied). Errors: TXL_INVALID_ARGUMENT when `batch` or
  /// `bptt` is not positive or `extLen` is negative.
  LMOrderedIterator(const std::vector<int64_t> &stream, int64_t batch,
                    int64_t bptt, int64_t extLen = 0);

  int64_t batch() const { return batch_; }
  int64_t bptt() const { return bptt_; }
  /// Official n_step = len(stream) // batch.
  int64_t numSteps() const { return nStep_; }
  /// Segments the iteration yields: ceil((n_step - 1) / bptt), 0 when
  /// n_step < 2. (The official `n_batch` = ceil(n_step / bptt) can be one
  /// more; it is only used for logging there.)
  int64_t numSegments() const;
  /// Tokens predicted over the whole iteration: (n_step - 1) * batch.
  int64_t numPredictedTokens() const;

  /// Official `get_batch(i, bptt)`: the segment of at most `bptt` (default:
  /// the iterator's) rows starting at row `start`, which must be in
  /// [0, n_step - 1) (TXL_INVALID_ARGUMENT otherwise).
  LMSegment segmentAt(int64_t start, int64_t bptt = 0) const;

  /// Fills `out` with the next segment and returns true, or returns false at
  /// the end.
  bool next(LMSegment &out);

  /// Restarts the iteration at row 0.
  void reset() { next_ = 0; }

  /// The row the next segment starts at (a training checkpoint saves it).
  int64_t position() const { return next_; }
  /// Continues the iteration at row `row` (>= 0; past the end, `next`
  /// returns false). Errors: TXL_INVALID_ARGUMENT for a negative row.
  void seek(int64_t row);

private:
  int64_t batch_, bptt_, extLen_;
  int64_t nStep_ = 0;
  int64_t next_ = 0;
  std::vector<int64_t> matrix_; ///< [n_step, batch], row-major
};

/// numpy's legacy global RNG as the official code draws from it:
/// `np.random.seed(seed)` is MT19937 initialised by init_genrand(seed)
/// (std::mt19937(seed)), and `np.random.shuffle(x)` / `permutation(n)` run
/// `for i in n-1 .. 1: swap(x[i], x[random_interval(i)])`, random_interval
/// drawing 32-bit outputs under the smallest covering bit mask and rejecting
/// those above the bound. The same seed therefore gives numpy's order bit
/// for bit (pinned by the tests against numpy's own output).
class NumpyRandomState {
public:
  explicit NumpyRandomState(uint32_t seed) : engine_(seed) {}

  /// numpy `random_interval(max)`: uniform in [0, max].
  uint64_t interval(uint64_t max);

  /// `np.random.shuffle(items)` in place.
  template <typename T> void shuffle(std::vector<T> &items) {
    for (size_t i = items.size(); i-- > 1;)
      std::swap(items[i], items[static_cast<size_t>(interval(i))]);
  }

  /// `np.random.permutation(n)`: a shuffled 0, 1, ..., n - 1.
  std::vector<int64_t> permutation(int64_t n);

  /// `np.random.random()`: 53 random bits, (a >> 5) * 2^26 + (b >> 6)
  /// over 2^53, in [0, 1).
  double randomSample();

  /// `np.random.normal(loc, scale)`: loc + scale * gauss, gauss from the
  /// legacy polar method, which draws pairs and caches the second value.
  double normal(double loc, double scale);

  /// The whole state (engine and cached gauss) as text, and back; a resumed
  /// run continues the same sequence. Errors (restore): TXL_DATA_ERROR for
  /// text `save` did not write.
  std::string save() const;
  void restore(const std::string &text);

private:
  std::mt19937 engine_;
  bool hasGauss_ = false;
  double gauss_ = 0;
};

/// Official `LMOrderedIterator.get_varlen_iter(start, std=5, min_len=5,
/// max_deviation=3)` (train.py `--varlen`): before each segment it draws
/// bptt = tgt_len with probability 0.95, else tgt_len / 2, then the length
/// int(normal(bptt, 5)) clipped to [5, tgt_len + 15] (two draws from the
/// global numpy generator); it yields while its start row is 0 or below
/// n_step - 2.
class LMVarlenIterator {
public:
  /// Errors: as LMOrderedIterator.
  LMVarlenIterator(const std::vector<int64_t> &stream, int64_t batch,
                   int64_t bptt, NumpyRandomState &rng);

  bool next(LMSegment &out);
  void reset() { next_ = 0; }
  int64_t position() const { return next_; }
  void seek(int64_t row) { next_ = row; }
  const LMOrderedIterator &rows() const { return rows_; }

  /// The longest segment it yields for `tgtLen`: tgt_len + 3 * 5 rows.
  static int64_t maxLength(int64_t tgtLen) { return tgtLen + 15; }

private:
  LMOrderedIterator rows_;
  NumpyRandomState &rng_;
  int64_t next_ = 0;
};

/// The official `LMShuffledIterator.stream_iterator(sent_stream)` loop: `bsz`
/// column streams, each holding what is left of its current sentence. A
/// segment fills column 0, then 1, ..., each with bptt tokens: while a column
/// is short it takes n_new = min(len(stream) - 1, bptt - n_filled) tokens as
/// data and the n_new following ones as target, keeps the rest of the
/// sentence from its last target token on (so that token opens the column's
/// next data), and when one token or none is left takes the next sentence. When
/// the sentences run out mid-segment that segment is dropped and the loop ends
/// (the tails still in the columns are never yielded). data is [n_retain +
/// bptt, bsz], whose first n_retain = min(rows of the previous data, ext_len)
/// rows repeat the end of the previous data (none before the first segment;
/// copied as if the official in-place `data[:n_retain] = data[-n_retain:]` did
/// not overlap, which the official scripts never exercise: they use ext_len =
/// 0); target is [bptt, bsz].
class LMStreamBatcher {
public:
  /// Sets `ids`/`length` to the next sentence and returns true, or returns
  /// false when there is none (Python's StopIteration).
  using SentenceSource =
      std::function<bool(const int64_t *&ids, int64_t &length)>;

  /// Errors: TXL_INVALID_ARGUMENT when `batch` or `bptt` is not positive or
  /// `extLen` is negative.
  LMStreamBatcher(int64_t batch, int64_t bptt, int64_t extLen = 0);

  /// A fresh `stream_iterator`: empty columns, nothing retained.
  void restart();

  /// The next segment from `source` (`out.start` is left as it is), or false
  /// once the sentences ran out (then always false until `restart`).
  /// Sentences shorter than 2 ids are skipped (the official code skips
  /// length-1 ones and misbehaves on empty ones; "<S>" framing makes every
  /// lm1b sentence at least 2 long).
  bool next(const SentenceSource &source, LMSegment &out);

private:
  struct Stream {
    const int64_t *ids = nullptr;
    int64_t length = 0;
  };

  int64_t batch_, bptt_, extLen_;
  std::vector<Stream> streams_;
  std::vector<int64_t> retained_; ///< [nRetain_, batch], row-major
  int64_t nRetain_ = 0;
  bool done_ = false;
};

/// Official `LMShuffledIterator(data, bsz, bptt, ext_len, shuffle)`, lm1b's
/// valid/test iterator (shuffle=False there): each epoch streams every
/// sentence in order, or in `np.random.permutation` order when `shuffle`
/// (drawn from a NumpyRandomState seeded with `seed` when the epoch's first
/// segment is asked for), through an LMStreamBatcher.
class LMShuffledIterator {
public:
  /// Errors: as LMStreamBatcher.
  LMShuffledIterator(Sentences sentences, int64_t batch, int64_t bptt,
                     int64_t extLen = 0, bool shuffle = false,
                     uint32_t seed = 0);

  int64_t batch() const { return batch_; }
  int64_t bptt() const { return bptt_; }
  const Sentences &sentences() const { return sentences_; }
  /// The sentence order of the current epoch (empty before its first
  /// segment).
  const std::vector<int64_t> &order() const { return order_; }

  /// Fills `out` with the next segment of the epoch and returns true, or
  /// returns false at its end.
  bool next(LMSegment &out);

  /// Ends the epoch: the next `next` starts another (a new permutation when
  /// shuffling; the RNG is not reseeded).
  void reset() { started_ = false; }

private:
  Sentences sentences_;
  int64_t batch_, bptt_;
  bool shuffle_;
  NumpyRandomState rng_;
  LMStreamBatcher batcher_;
  bool started_ = false;
  std::vector<int64_t> order_;
  size_t cursor_ = 0;
  int64_t segments_ = 0;
};

/// Official `LMMultiFileIterator(paths, vocab, bsz, bptt, ext_len, shuffle)`,
/// lm1b's train iterator (get_iterator forces shuffle=True): each epoch,
/// when `shuffle`, first shuffles the path list in place
/// (`np.random.shuffle(self.paths)`, so orders compound over epochs); then
/// for every path it encodes the file (one sentence per line, "<S>" at both
/// ends: `encode_file(path, add_double_eos=True)`), shuffles its sentences
/// when `shuffle`, and runs a fresh LMStreamBatcher over them: each file
/// ends with its own partial segment and column tails dropped, and nothing
/// is retained across files. Files are read lazily, one at a time. Draws
/// come from a NumpyRandomState seeded with `seed`, in the official order
/// (paths at the epoch's first segment, a file's sentences when it is
/// opened), so with the official path order they match a run that seeded
/// numpy with `seed` and drew nothing else from it.
class LMMultiFileIterator {
public:
  /// `vocab` must outlive the iterator. Errors: as LMStreamBatcher; reading
  /// or encoding a file fails later, in `next`, as Vocab::encodeSentencesFile.
  LMMultiFileIterator(std::vector<std::string> paths, const Vocab &vocab,
                      int64_t batch, int64_t bptt, int64_t extLen = 0,
                      bool shuffle = false, uint32_t seed = 0);

  int64_t batch() const { return batch_; }
  int64_t bptt() const { return bptt_; }
  /// The path order (of the current epoch once it has started).
  const std::vector<std::string> &paths() const { return paths_; }
  /// The file the last segment came from ("" before the first).
  const std::string &currentPath() const { return currentPath_; }
  /// The current file's sentences and their order this epoch.
  const Sentences &sentences() const { return sentences_; }
  const std::vector<int64_t> &order() const { return order_; }

  /// Fills `out` with the next segment of the epoch and returns true, or
  /// returns false at its end.
  bool next(LMSegment &out);

  /// Ends the epoch: the next `next` starts another.
  void reset() { started_ = false; }

  /// The generator the path and sentence orders are drawn from (train.py's
  /// global numpy generator; a training checkpoint saves its state).
  NumpyRandomState &rng() { return rng_; }

  /// The iteration's position as text (a training checkpoint's metadata
  /// "iterator_state"): the path order, whether an epoch is running, the
  /// file being read, the generator's state before that file's sentences
  /// were shuffled, the segments taken from the file so far, and the
  /// generator's state now. Only the paths' file names are kept, so a run
  /// may resume with the data directory at another path.
  std::string saveState() const;
  /// Continues where saveState left off: reopens the file being read,
  /// draws its sentence order again from the saved generator state and
  /// skips the segments already taken, so the next segment and every later
  /// draw equal the saved run's. Errors (`source` names the state's file in
  /// messages): TXL_DATA_ERROR for text saveState did not write, for a path
  /// list that is not this iterator's files (by name), and for a file that
  /// no longer gives the saved segments or draws (it changed since).
  void restoreState(const std::string &text, const std::string &source);

private:
  /// Opens paths_[index]: encodes it, draws its sentence order, restarts
  /// the batcher (a fresh stream_iterator per file).
  void openFile(size_t index);

  std::vector<std::string> paths_;
  const Vocab &vocab_;
  int64_t batch_, bptt_;
  bool shuffle_;
  NumpyRandomState rng_;
  LMStreamBatcher batcher_;
  bool started_ = false;
  bool fileOpen_ = false;
  size_t nextFile_ = 0;
  std::string currentPath_;
  Sentences sentences_;
  std::vector<int64_t> order_;
  size_t cursor_ = 0;
  int64_t segments_ = 0;
  std::string fileRng_;        ///< rng_ before the open file's order was drawn
  int64_t segmentsInFile_ = 0; ///< segments taken from the open file
};

/// The segments official `get_iterator(split, bsz, bptt)` gives evaluation
/// (eval.py, train.py's evaluate()): LMOrderedIterator over an ordered
/// split, LMShuffledIterator without shuffling over lm1b's sentences.
class SplitIterator {
public:
  /// `corpus` must outlive the iterator. Errors: TXL_DATA_ERROR when an
  /// ordered split is too short for one segment; as the iterators.
  SplitIterator(const Corpus &corpus, Split split, int64_t batch, int64_t bptt);
  bool next(LMSegment &out) {
    return ordered_ ? ordered_->next(out) : sentences_->next(out);
  }
  /// Tokens the whole iteration predicts at most (a progress bar's total).
  int64_t expectedTokens() const { return expectedTokens_; }

private:
  std::optional<LMOrderedIterator> ordered_;
  std::optional<LMShuffledIterator> sentences_;
  int64_t expectedTokens_ = 0;
};

} // namespace txl::rt

#endif // TXL_RT_LMITERATOR_H

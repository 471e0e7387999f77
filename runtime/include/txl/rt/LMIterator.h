//===- LMIterator.h - Ordered LM segment iterator ---------------*- C++ -*-===//
//
// The official `LMOrderedIterator(data, bsz, bptt, ext_len)` of
// pytorch/data_utils.py: the stream is cut to n_step = len // bsz rows and
// laid out as `data[:n_step*bsz].view(bsz, -1).t()`, i.e. a [n_step, bsz]
// matrix whose column b holds tokens [b*n_step, (b+1)*n_step). Segments start
// at i = 0, bptt, 2*bptt, ... while i < n_step - 1, with
//   seq_len = min(bptt, n_step - 1 - i)
//   data    = rows [max(0, i - ext_len), i + seq_len)
//   target  = rows [i + 1, i + 1 + seq_len)
// so the last segment may be shorter and every token but the first row is
// predicted exactly once.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_LMITERATOR_H
#define TXL_RT_LMITERATOR_H

#include <cstdint>
#include <vector>

namespace txl::rt {

/// One segment: row-major int64 blocks, `data` [dataRows, batch] (dataRows =
/// seqLen + the extended context, i.e. seqLen when ext_len = 0) and `target`
/// [seqLen, batch].
struct LMSegment {
  int64_t start = 0;    ///< i: the first target row is start + 1
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

  /// Official `get_batch(i)`: the segment starting at row `start`, which must
  /// be in [0, n_step - 1) (TXL_INVALID_ARGUMENT otherwise).
  LMSegment segmentAt(int64_t start) const;

  /// Fills `out` with the next segment and returns true, or returns false at
  /// the end.
  bool next(LMSegment &out);

  /// Restarts the iteration at row 0.
  void reset() { next_ = 0; }

private:
  int64_t batch_, bptt_, extLen_;
  int64_t nStep_ = 0;
  int64_t next_ = 0;
  std::vector<int64_t> matrix_; ///< [n_step, batch], row-major
};

} // namespace txl::rt

#endif // TXL_RT_LMITERATOR_H

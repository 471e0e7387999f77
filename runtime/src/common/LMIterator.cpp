//===- LMIterator.cpp - Ordered LM segment iterator -------------*- C++ -*-===//

#include "txl/rt/LMIterator.h"

#include "txl/rt/Status.h"

#include <algorithm>

namespace txl::rt {

LMOrderedIterator::LMOrderedIterator(const std::vector<int64_t> &stream,
                                     int64_t batch, int64_t bptt,
                                     int64_t extLen)
    : batch_(batch), bptt_(bptt), extLen_(extLen) {
  if (batch <= 0)
    fail(TXL_INVALID_ARGUMENT, "batch size must be positive, got {}", batch);
  if (bptt <= 0)
    fail(TXL_INVALID_ARGUMENT, "tgt_len must be positive, got {}", bptt);
  if (extLen < 0)
    fail(TXL_INVALID_ARGUMENT, "ext_len must not be negative, got {}", extLen);
  nStep_ = static_cast<int64_t>(stream.size()) / batch;
  // view(bsz, -1).t(): matrix[t][b] = stream[b * n_step + t].
  matrix_.resize(static_cast<size_t>(nStep_ * batch));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < nStep_; ++t)
      matrix_[static_cast<size_t>(t * batch + b)] =
          stream[static_cast<size_t>(b * nStep_ + t)];
}

int64_t LMOrderedIterator::numSegments() const {
  if (nStep_ < 2)
    return 0;
  return (nStep_ - 1 + bptt_ - 1) / bptt_;
}

int64_t LMOrderedIterator::numPredictedTokens() const {
  return nStep_ < 2 ? 0 : (nStep_ - 1) * batch_;
}

LMSegment LMOrderedIterator::segmentAt(int64_t start) const {
  if (start < 0 || start >= nStep_ - 1)
    fail(TXL_INVALID_ARGUMENT,
         "segment start {} out of range: the stream has {} rows of {}", start,
         nStep_, batch_);
  LMSegment segment;
  segment.start = start;
  segment.batch = batch_;
  segment.seqLen = std::min(bptt_, nStep_ - 1 - start);
  int64_t begin = std::max<int64_t>(0, start - extLen_);
  int64_t end = start + segment.seqLen;
  segment.dataRows = end - begin;
  auto row = [&](int64_t r) { return matrix_.begin() + r * batch_; };
  segment.data.assign(row(begin), row(end));
  segment.target.assign(row(start + 1), row(end + 1));
  return segment;
}

bool LMOrderedIterator::next(LMSegment &out) {
  if (next_ >= nStep_ - 1)
    return false;
  out = segmentAt(next_);
  next_ += bptt_;
  return true;
}

} // namespace txl::rt

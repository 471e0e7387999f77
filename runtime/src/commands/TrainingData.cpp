//===- TrainingData.cpp - The data side of the training loop --------------===//
//
// TrainingData (the train iterator and each batch chunk's memory),
// MemorySnapshot and evaluateSplit (TrainParts.h).
//
//===----------------------------------------------------------------------===//

#include "TrainParts.h"

#include "txl/rt/commands/Commands.h"
#include "txl/rt/commands/Progress.h"

#include <unistd.h>

#include <algorithm>
#include <string_view>
#include <utility>
#include <vector>

namespace txl::rt {

MemorySnapshot MemorySnapshot::take(const txl_model_info_t &info,
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

void MemorySnapshot::restore(txl_session_t *session) const {
  std::vector<const float *> pointers;
  for (const auto &layer : layers)
    pointers.push_back(layer.data());
  checkStatus(txl_session_set_memory(session, mlen, batch, pointers.data()));
}

TrainingData::TrainingData(const txl_model_info_t &info, const Corpus &corpus,
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

void TrainingData::restorePosition(int64_t row, const std::string &state,
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

void TrainingData::startEpoch(txl_session_t *session) {
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

MemorySnapshot TrainingData::memory(txl_session_t *session, int64_t c) {
  int64_t current = current_;
  enterChunk(session, c);
  MemorySnapshot snapshot = MemorySnapshot::take(info_, session, chunkBatch_);
  enterChunk(session, current);
  return snapshot;
}

void TrainingData::setMemory(txl_session_t *session, int64_t c,
                             const MemorySnapshot &memory) {
  int64_t current = current_;
  enterChunk(session, c);
  memory.restore(session);
  enterChunk(session, current);
}

std::vector<int64_t>
TrainingData::chunkColumns(const std::vector<int64_t> &block, int64_t rows,
                           int64_t c) const {
  std::vector<int64_t> out(static_cast<size_t>(rows * chunkBatch_));
  for (int64_t r = 0; r < rows; ++r)
    std::copy_n(block.begin() + r * info_.batch_size + columns_.first +
                    c * chunkBatch_,
                chunkBatch_, out.begin() + r * chunkBatch_);
  return out;
}

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
  std::vector<int64_t> data, target;
  double sums[2] = {0, 0}; // NLL, tokens (over every rank's columns)
  // Each segment's NLL summed in segment order as it arrives.
  EnqueuedOutputs outputs(session);
  auto consume = [&sums](const std::vector<float> &nll) {
    for (float value : nll)
      sums[0] += value;
  };
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
    float *nll =
        outputs.add(static_cast<size_t>(rows * columns.count), consume);
    checkStatus(txl_session_enqueue_segment(
        session, whole ? segment.data.data() : data.data(),
        whole ? segment.target.data() : target.data(), rows, columns.count,
        &options, nll));
    outputs.enqueued();
  }
  outputs.flush();
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

} // namespace txl::rt

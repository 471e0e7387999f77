//===- CheckpointFuzzer.cpp - libFuzzer target of the resume-state reader -===//
//
// Input: the bytes of a training checkpoint (a safetensors file). Checks
// that SafeTensorsFile::open + parseCheckpointMetadata, what `train
// --resume` runs before it touches the session, either refuse it with
// txl::rt::Error or give a record that writes back to metadata that reads
// as the same record, with a random state that saves and restores to the
// same text.
//
//===----------------------------------------------------------------------===//

#include "FuzzUtil.h"

#include "txl/rt/data/Checkpoint.h"
#include "txl/rt/data/LMIterator.h"
#include "txl/rt/data/SafeTensors.h"
#include "txl/rt/support/Status.h"

#include <cstdint>
#include <cstring>

using namespace txl::rt;

namespace {

/// Bitwise equality of doubles (NaN never appears; -0.0 must stay -0.0).
bool same(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

bool same(const LoopState &a, const LoopState &b) {
  return a.step == b.step && a.epoch == b.epoch &&
         a.batchInEpoch == b.batchInEpoch && a.iteratorRow == b.iteratorRow &&
         same(a.lr, b.lr) &&
         a.bestValLoss.has_value() == b.bestValLoss.has_value() &&
         (!a.bestValLoss || same(*a.bestValLoss, *b.bestValLoss)) &&
         same(a.intervalLoss, b.intervalLoss) &&
         a.intervalSteps == b.intervalSteps && a.evalCount == b.evalCount &&
         same(a.plateauBest, b.plateauBest) && a.plateauBad == b.plateauBad &&
         a.lossScaleLog2 == b.lossScaleLog2 && a.cleanSteps == b.cleanSteps &&
         a.skippedSteps == b.skippedSteps;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string path = txl::fuzz::writeScratch(
      "last.safetensors", {reinterpret_cast<const char *>(data), size});
  CheckpointRecord record;
  try {
    record =
        parseCheckpointMetadata(SafeTensorsFile::open(path).metadata(), path);
  } catch (const Error &) {
    return 0;
  }
  FUZZ_CHECK(record.loop.step >= 0 && record.loop.epoch >= 1 &&
             record.memRows >= 0 && record.batchChunk >= 1 &&
             record.batchSize % record.batchChunk == 0 && record.threads >= 1);
  CheckpointRecord again =
      parseCheckpointMetadata(checkpointMetadata(record), path);
  FUZZ_CHECK(again.model == record.model && again.dataset == record.dataset);
  FUZZ_CHECK(same(again.loop, record.loop));
  FUZZ_CHECK(again.memRows == record.memRows &&
             again.batchSize == record.batchSize &&
             again.batchChunk == record.batchChunk &&
             again.numpyRng == record.numpyRng && again.seed == record.seed &&
             again.threads == record.threads &&
             again.lossScaling == record.lossScaling);
  NumpyRandomState rng(0), copy(0);
  rng.restore(record.numpyRng);
  copy.restore(rng.save());
  FUZZ_CHECK(copy.save() == rng.save());
  FUZZ_CHECK(copy.interval(1000) == rng.interval(1000));
  return 0;
}

//===- Checkpoint.cpp - The metadata of a training checkpoint ---*- C++ -*-===//

#include "txl/rt/data/Checkpoint.h"

#include "txl/rt/data/LMIterator.h"
#include "txl/rt/support/Status.h"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace txl::rt {

namespace {

/// Reads the metadata of one checkpoint, each value checked as it is taken.
class MetadataReader {
public:
  MetadataReader(const std::map<std::string, std::string> &metadata,
                 const std::string &path)
      : metadata_(metadata), path_(path) {}

  bool has(const std::string &key) const { return metadata_.count(key) != 0; }

  const std::string &text(const std::string &key) const {
    auto it = metadata_.find(key);
    if (it == metadata_.end())
      fail(TXL_DATA_ERROR,
           "{}: not a txlc training checkpoint (no '{}' in its metadata)",
           path_, key);
    return it->second;
  }

  /// A decimal integer in [min, max].
  int64_t integer(const std::string &key, int64_t min,
                  int64_t max = std::numeric_limits<int64_t>::max()) const {
    const std::string &value = text(key);
    char *end = nullptr;
    errno = 0;
    long long parsed = std::strtoll(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0')
      invalid(key, value, "is not an integer");
    if (errno == ERANGE || parsed < min || parsed > max)
      invalid(key, value, fmt::format("is outside [{}, {}]", min, max));
    return parsed;
  }

  /// A decimal integer in [0, 2^64).
  uint64_t unsignedInteger(const std::string &key) const {
    const std::string &value = text(key);
    char *end = nullptr;
    errno = 0;
    unsigned long long parsed = std::strtoull(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0' || value[0] == '-' || value[0] == '+')
      invalid(key, value, "is not an unsigned integer");
    if (errno == ERANGE)
      invalid(key, value, "does not fit in 64 bits");
    return parsed;
  }

  /// A number; finite unless `allowInfinity` (+inf then), never NaN.
  double real(const std::string &key, bool allowInfinity = false) const {
    const std::string &value = text(key);
    char *end = nullptr;
    double parsed = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0')
      invalid(key, value, "is not a number");
    if (std::isnan(parsed) ||
        (std::isinf(parsed) && !(allowInfinity && parsed > 0)))
      invalid(key, value, "is not a finite number");
    return parsed;
  }

  [[noreturn]] void invalid(const std::string &key, const std::string &value,
                            std::string_view why) const {
    fail(TXL_DATA_ERROR, "{}: metadata '{}': '{}' {}", path_, key, value, why);
  }

private:
  const std::map<std::string, std::string> &metadata_;
  const std::string &path_;
};

} // namespace

std::string exactDouble(double value) { return fmt::format("{:a}", value); }

std::map<std::string, std::string>
checkpointMetadata(const CheckpointRecord &record) {
  const LoopState &loop = record.loop;
  std::map<std::string, std::string> meta = {
      {"format", std::string(kCheckpointFormat)},
      {"model", record.model},
      {"dataset", record.dataset},
      {"step", std::to_string(loop.step)},
      {"epoch", std::to_string(loop.epoch)},
      {"batch_in_epoch", std::to_string(loop.batchInEpoch)},
      {"iterator_row", std::to_string(loop.iteratorRow)},
      {"lr", exactDouble(loop.lr)},
      {"best_val_loss",
       loop.bestValLoss ? exactDouble(*loop.bestValLoss) : "none"},
      {"interval_loss", exactDouble(loop.intervalLoss)},
      {"interval_steps", std::to_string(loop.intervalSteps)},
      {"eval_count", std::to_string(loop.evalCount)},
      {"plateau_best", exactDouble(loop.plateauBest)},
      {"plateau_bad", std::to_string(loop.plateauBad)},
      {"mem_rows", std::to_string(record.memRows)},
      {"batch_size", std::to_string(record.batchSize)},
      {"batch_chunk", std::to_string(record.batchChunk)},
      {"numpy_rng", record.numpyRng},
      {"seed", std::to_string(record.seed)},
      {"threads", std::to_string(record.threads)},
      {"ranks", std::to_string(record.ranks)}};
  if (!record.iteratorState.empty())
    meta["iterator_state"] = record.iteratorState;
  if (record.maxStep)
    meta["max_step"] = std::to_string(*record.maxStep);
  if (loop.firstLoggedLoss)
    meta["first_logged_loss"] = exactDouble(*loop.firstLoggedLoss);
  if (loop.intervalParts)
    meta["interval_loss_parts"] =
        fmt::format("{} {} {}", exactDouble((*loop.intervalParts)[0]),
                    exactDouble((*loop.intervalParts)[1]),
                    exactDouble((*loop.intervalParts)[2]));
  if (record.lossScaling) {
    meta["loss_scale_log2"] = std::to_string(loop.lossScaleLog2);
    meta["loss_scale_clean_steps"] = std::to_string(loop.cleanSteps);
    meta["skipped_steps"] = std::to_string(loop.skippedSteps);
  }
  return meta;
}

CheckpointRecord
parseCheckpointMetadata(const std::map<std::string, std::string> &metadata,
                        const std::string &path) {
  MetadataReader read(metadata, path);
  if (read.text("format") != kCheckpointFormat)
    fail(TXL_DATA_ERROR, "{}: checkpoint format '{}', expected '{}'", path,
         read.text("format"), kCheckpointFormat);
  CheckpointRecord record;
  record.model = read.text("model");
  record.dataset = read.text("dataset");
  LoopState &loop = record.loop;
  loop.step = read.integer("step", 0);
  loop.epoch = read.integer("epoch", 1);
  loop.batchInEpoch = read.integer("batch_in_epoch", 0);
  loop.iteratorRow = read.integer("iterator_row", 0);
  loop.lr = read.real("lr");
  if (loop.lr < 0)
    read.invalid("lr", read.text("lr"), "is negative");
  if (read.text("best_val_loss") != "none")
    loop.bestValLoss = read.real("best_val_loss");
  loop.intervalLoss = read.real("interval_loss");
  loop.intervalSteps = read.integer("interval_steps", 0);
  loop.evalCount = read.integer("eval_count", 0);
  // +inf until the first validation (ReduceLROnPlateau's initial best).
  loop.plateauBest = read.real("plateau_best", /*allowInfinity=*/true);
  loop.plateauBad = read.integer("plateau_bad", 0);
  record.memRows = read.integer("mem_rows", 0);
  record.batchSize = read.integer("batch_size", 1);
  record.batchChunk = read.integer("batch_chunk", 1, record.batchSize);
  if (record.batchSize % record.batchChunk != 0)
    read.invalid(
        "batch_chunk", read.text("batch_chunk"),
        fmt::format("does not divide batch_size {}", record.batchSize));
  record.numpyRng = read.text("numpy_rng");
  NumpyRandomState check(0);
  try {
    check.restore(record.numpyRng);
  } catch (const Error &error) {
    fail(TXL_DATA_ERROR, "{}: metadata 'numpy_rng': {}", path, error.what());
  }
  record.seed = read.unsignedInteger("seed");
  record.threads = read.integer("threads", 1, std::numeric_limits<int>::max());
  // Checkpoints from before data-parallel training are of one rank.
  if (read.has("ranks"))
    record.ranks = read.integer("ranks", 1, std::numeric_limits<int>::max());
  if (read.has("iterator_state"))
    record.iteratorState = read.text("iterator_state");
  // Checkpoints from before the schedule followed --max-step have none.
  if (read.has("max_step"))
    record.maxStep = read.integer("max_step", 1);
  if (read.has("first_logged_loss"))
    loop.firstLoggedLoss = read.real("first_logged_loss");
  if (read.has("interval_loss_parts")) {
    // Three exactDouble values (hexadecimal floats), space-separated.
    const std::string &text = read.text("interval_loss_parts");
    std::array<double, 3> values;
    const char *cursor = text.c_str();
    for (double &value : values) {
      char *end = nullptr;
      errno = 0;
      value = std::strtod(cursor, &end);
      if (end == cursor || errno != 0 || !std::isfinite(value))
        read.invalid("interval_loss_parts", text,
                     "is not three finite numbers");
      cursor = end;
    }
    if (*cursor != '\0')
      read.invalid("interval_loss_parts", text, "is not three finite numbers");
    loop.intervalParts = values;
  }
  record.lossScaling = read.has("loss_scale_log2");
  if (record.lossScaling) {
    // The scale 2^k must be a normal float.
    loop.lossScaleLog2 =
        static_cast<int32_t>(read.integer("loss_scale_log2", -126, 127));
    loop.cleanSteps = read.integer("loss_scale_clean_steps", 0);
    loop.skippedSteps = read.integer("skipped_steps", 0);
  }
  return record;
}

} // namespace txl::rt

//===- TrainCheckpoint.cpp - The training checkpoint ----------------------===//
//
// last.safetensors: the parameters (with their tied aliases), Adam's or
// the other optimizers' state, every rank's memory in the single-process
// layout, and the loop's record (data/Checkpoint.h); written by rank 0,
// restored by every rank after validating everything first (TrainParts.h).
//
//===----------------------------------------------------------------------===//

#include "TrainParts.h"

#include "txl/rt/session/ModelInfo.h"

#include <algorithm>
#include <vector>

namespace txl::rt {

static Shape shapeOf(const txl_param_info_t &p) {
  return Shape(p.shape, p.shape + p.rank);
}

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

namespace {
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
} // namespace

/// Every rank's memory, gathered on rank 0 into the checkpoint's tensors
/// "train.mems.chunk<c>.layer<l>" [mlen, batch_size / batch_chunk, d_model]
/// in the single-process layout (one rank: its chunks as they are). Returns
/// mlen. A collective: every rank calls it, only rank 0's `tensors` grow.
static int64_t addMemoryTensors(const txl_model_info_t &info,
                                txl_session_t *session, TrainingData &data,
                                Communicator &comm, TensorMap &tensors) {
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

void saveTrainingCheckpoint(const std::string &path,
                            const txl_model_info_t &info,
                            txl_session_t *session, OptimizerStates &optimizer,
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

LoopState loadTrainingCheckpoint(const std::string &path,
                                 const txl_model_info_t &info,
                                 txl_session_t *session,
                                 OptimizerStates &optimizer, Settings &settings,
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
      std::vector<float> state(static_cast<size_t>(parameterElements(p)));
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

} // namespace txl::rt

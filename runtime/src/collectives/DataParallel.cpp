//===- DataParallel.cpp - Ranks of a data-parallel training run -----------===//

#include "txl/rt/collectives/DataParallel.h"

#include "txl/rt/support/Status.h"

#include <algorithm>
#include <cstdlib>

namespace txl::rt {

/// Mpi.cpp: MPI_COMM_WORLD of the launcher's Open MPI.
std::unique_ptr<Communicator> makeMpiCommunicator();

namespace {

/// One rank: every collective is the identity.
class SingleProcess final : public Communicator {
public:
  std::string description() const override { return "single process"; }
  void allreduceSum(float *, int64_t) override {}
  void allreduceSum(double *, int64_t) override {}
  void broadcast(void *, int64_t, int) override {}
  void gatherToRoot(const float *in, int64_t count, float *out) override {
    std::copy_n(in, count, out);
  }
  void abortAll(int) override {}
};

} // namespace

void Communicator::allreduceAverageOnDevice(const std::vector<DeviceSpan> &) {
  fail(TXL_UNAVAILABLE, "{} has no collectives on the device", description());
}

int launcherLocalRank() {
  for (const char *name :
       {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}) {
    const char *value = std::getenv(name);
    if (value && *value)
      return std::max(std::atoi(value), 0);
  }
  return 0;
}

int launcherWorldSize() {
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE"}) {
    const char *value = std::getenv(name);
    if (value && *value)
      return std::max(std::atoi(value), 1);
  }
  // PMIx launchers that announce only the rank (srun --mpi=pmix).
  return std::getenv("PMIX_RANK") ? 1 : 0;
}

std::unique_ptr<Communicator> Communicator::forThisProcess() {
  if (launcherWorldSize() == 0)
    return std::make_unique<SingleProcess>();
  return makeMpiCommunicator();
}

IndexRange rankColumns(int64_t batch, int rank, int ranks,
                       const std::string &what) {
  if (batch % ranks != 0)
    fail(TXL_INVALID_ARGUMENT,
         "{} {} is not a multiple of the {} ranks: each rank must own as many "
         "batch columns",
         what, batch, ranks);
  const int64_t count = batch / ranks;
  return {rank * count, count};
}

IndexRange unevenColumns(int64_t batch, int rank, int ranks) {
  const int64_t first = batch * rank / ranks;
  return {first, batch * (rank + 1) / ranks - first};
}

std::vector<IndexRange> gradientBuckets(int64_t total, int64_t bucketFloats) {
  std::vector<IndexRange> out;
  for (int64_t end = total; end > 0; end -= bucketFloats) {
    const int64_t first = std::max<int64_t>(end - bucketFloats, 0);
    out.push_back({first, end - first});
  }
  return out;
}

std::vector<TensorPart> tensorParts(const std::vector<int64_t> &sizes,
                                    IndexRange bucket) {
  std::vector<TensorPart> parts;
  int64_t start = 0;
  for (size_t t = 0; t < sizes.size(); ++t) {
    const int64_t lo = std::max(bucket.first, start);
    const int64_t hi = std::min(bucket.first + bucket.count, start + sizes[t]);
    if (lo < hi)
      parts.push_back({t, {lo - start, hi - lo}});
    start += sizes[t];
  }
  return parts;
}

#if !TXL_ENABLE_CUDA
// Nccl.cpp is the CUDA backend's: without it, NCCL is refused by name.
std::unique_ptr<Communicator> withNccl(std::unique_ptr<Communicator>) {
  fail(TXL_UNAVAILABLE, "no NCCL: this runtime was built without the CUDA "
                        "backend (TXL_ENABLE_CUDA=OFF)");
}

int ncclLibraryVersion() { return withNccl(nullptr), 0; }
#endif

} // namespace txl::rt

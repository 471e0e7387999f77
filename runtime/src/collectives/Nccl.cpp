//===- Nccl.cpp - NCCL for a CUDA-target run's gradients ------------------===//
//
// A data-parallel run of the CUDA target averages its gradients where they
// live, on the GPUs, with ncclAllReduce on the session's stream; the host
// collectives (losses, memories for the checkpoint, the NCCL id itself) stay
// on the launcher's MPI. libnccl.so.2 is opened at run time like the other
// CUDA libraries; <nccl.h> (the CUDA toolkit's) gives only the types.
//
//===----------------------------------------------------------------------===//

#include "txl/device.h"
#include "txl/rt/collectives/DataParallel.h"
#include "txl/rt/support/DynamicLibrary.h"
#include "txl/rt/support/Status.h"

#include <nccl.h>

#include <cstdlib>

namespace txl::rt {
namespace {

/// libnccl's entry points.
struct NcclLibrary {
  std::unique_ptr<DynamicLibrary> library;
  decltype(&ncclGetVersion) getVersion;
  decltype(&ncclGetUniqueId) getUniqueId;
  decltype(&ncclCommInitRank) commInitRank;
  decltype(&ncclCommDestroy) commDestroy;
  decltype(&ncclCommAbort) commAbort;
  decltype(&ncclAllReduce) allReduce;
  decltype(&ncclGroupStart) groupStart;
  decltype(&ncclGroupEnd) groupEnd;
  decltype(&ncclGetErrorString) errorString;

  NcclLibrary() {
    std::vector<std::string> candidates;
    if (const char *path = std::getenv("TXL_NCCL_LIBRARY"); path && *path)
      candidates.push_back(path);
    const char *cuda = std::getenv("CUDA_HOME");
    std::string home = cuda && *cuda ? cuda : "/usr/local/cuda";
    candidates.push_back("libnccl.so.2");
    candidates.push_back(home + "/lib64/libnccl.so.2");
    candidates.push_back(home + "/lib/libnccl.so.2");
    library = openFirstLibrary(candidates, "NCCL (libnccl.so.2)");
    auto fn = [&](auto &slot, const char *name) {
      slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(
          library->symbol(name, "NCCL 2.10 or later"));
    };
    fn(getVersion, "ncclGetVersion");
    fn(getUniqueId, "ncclGetUniqueId");
    fn(commInitRank, "ncclCommInitRank");
    fn(commDestroy, "ncclCommDestroy");
    fn(commAbort, "ncclCommAbort");
    fn(allReduce, "ncclAllReduce");
    fn(groupStart, "ncclGroupStart");
    fn(groupEnd, "ncclGroupEnd");
    fn(errorString, "ncclGetErrorString");
  }

  void check(ncclResult_t result, const char *call) const {
    if (result != ncclSuccess)
      fail(TXL_UNAVAILABLE, "{} failed: {}", call, errorString(result));
  }
};

class NcclCommunicator final : public Communicator {
public:
  explicit NcclCommunicator(std::unique_ptr<Communicator> control)
      : control_(std::move(control)) {
    rank_ = control_->rank();
    size_ = control_->size();
    int version = 0;
    nccl_.check(nccl_.getVersion(&version), "ncclGetVersion");
    version_ = version;
  }
  ~NcclCommunicator() override {
    if (comm_)
      nccl_.commDestroy(comm_);
  }

  std::string description() const override {
    return fmt::format("{}, NCCL {}.{}.{} for the gradients",
                       control_->description(), version_ / 10000,
                       version_ / 100 % 100, version_ % 100);
  }
  void allreduceSum(float *data, int64_t count) override {
    control_->allreduceSum(data, count);
  }
  void allreduceSum(double *data, int64_t count) override {
    control_->allreduceSum(data, count);
  }
  void broadcast(void *data, int64_t bytes, int root) override {
    control_->broadcast(data, bytes, root);
  }
  void gatherToRoot(const float *in, int64_t count, float *out) override {
    control_->gatherToRoot(in, count, out);
  }
  void abortAll(int status) override {
    if (comm_)
      nccl_.commAbort(comm_);
    comm_ = nullptr;
    control_->abortAll(status);
  }

  bool reducesOnDevice() const override { return true; }
  void allreduceAverageOnDevice(const std::vector<DeviceSpan> &spans) override {
    ensureComm();
    auto *stream = static_cast<cudaStream_t>(txl_device_native_stream());
    nccl_.check(nccl_.groupStart(), "ncclGroupStart");
    for (const DeviceSpan &span : spans) {
      // The CUDA backend's buffer handles are the CUdeviceptr values.
      float *data = static_cast<float *>(span.buffer) + span.first;
      ncclResult_t result = nccl_.allReduce(
          data, data, size_t(span.count), ncclFloat32, ncclAvg, comm_, stream);
      if (result != ncclSuccess) {
        nccl_.groupEnd();
        nccl_.check(result, "ncclAllReduce");
      }
    }
    nccl_.check(nccl_.groupEnd(), "ncclGroupEnd");
  }

private:
  NcclLibrary nccl_;
  std::unique_ptr<Communicator> control_;
  ncclComm_t comm_ = nullptr;
  int version_ = 0;

  /// The NCCL communicator, made at the first reduction (by then the
  /// session has made its device current): rank 0's id to every rank.
  void ensureComm() {
    if (comm_)
      return;
    if (!txl_device_native_stream())
      fail(TXL_UNAVAILABLE, "NCCL needs the CUDA device open (no stream)");
    ncclUniqueId id{};
    if (rank_ == 0)
      nccl_.check(nccl_.getUniqueId(&id), "ncclGetUniqueId");
    control_->broadcast(&id, sizeof id, 0);
    nccl_.check(nccl_.commInitRank(&comm_, size_, id, rank_),
                "ncclCommInitRank");
  }
};

} // namespace

std::unique_ptr<Communicator> withNccl(std::unique_ptr<Communicator> control) {
  return std::make_unique<NcclCommunicator>(std::move(control));
}

/// ncclGetVersion of the NCCL withNccl would load (tests).
int ncclLibraryVersion() {
  NcclLibrary nccl;
  int version = 0;
  nccl.check(nccl.getVersion(&version), "ncclGetVersion");
  return version;
}

} // namespace txl::rt

//===- DataParallel.h - Ranks of a data-parallel training run ---*- C++ -*-===//
//
// `mpirun -np N <model> train ...` runs N ranks of one training run (the
// official recipes' multi-GPU data parallelism, across processes and
// machines). Rank r of N owns batch columns [r·B/N, (r+1)·B/N) of every
// segment, carries their memory, and after each backward the ranks sum their
// gradients; the clipping and the optimizer then run identically on every
// rank. A `Communicator` is what the training loop sees of the other ranks:
// one rank without a launcher, Open MPI's libmpi (loaded with dlopen, so that
// an executable run without mpirun needs no MPI installed) under one.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_DATAPARALLEL_H
#define TXL_RT_DATAPARALLEL_H

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace txl::rt {

/// The ranks of a run and the collectives the training loop needs. Every
/// collective must be called by every rank in the same order (MPI's rule);
/// failures throw Error(TXL_UNAVAILABLE) naming the call.
class Communicator {
public:
  virtual ~Communicator() = default;
  int rank() const { return rank_; }
  int size() const { return size_; }
  /// What runs the ranks: "single process" or "Open MPI <version>".
  virtual std::string description() const = 0;

  /// In place, every rank receives the element-wise sum over the ranks.
  /// Every rank gets the same bits (the reduction is computed once per
  /// element, as MPI_Allreduce and ncclAllReduce do).
  virtual void allreduceSum(float *data, int64_t count) = 0;
  virtual void allreduceSum(double *data, int64_t count) = 0;
  /// `bytes` bytes of rank `root`'s `data` into every rank's.
  virtual void broadcast(void *data, int64_t bytes, int root) = 0;
  /// Rank 0's `out` receives every rank's `count` floats, rank-major
  /// ([size, count]); `out` is ignored on the other ranks.
  virtual void gatherToRoot(const float *in, int64_t count, float *out) = 0;
  /// Ends every rank of the run with `status` (MPI_Abort); returns only
  /// on a single process, where it does nothing.
  virtual void abortAll(int status) = 0;

  /// Whether gradients on the device are averaged in place there (NCCL:
  /// allreduceAverageOnDevice) rather than through the host collectives.
  virtual bool reducesOnDevice() const { return false; }
  /// Float runs [first, first + count) of device buffers (txl_device_*
  /// handles).
  struct DeviceSpan {
    void *buffer;
    int64_t first, count;
  };
  /// In place on the device, every span becomes its element-wise mean over
  /// the ranks; the calls join the device's queue as one group. Errors:
  /// TXL_UNAVAILABLE where reducesOnDevice() is false.
  virtual void allreduceAverageOnDevice(const std::vector<DeviceSpan> &spans);

  /// The communicator of this process: Open MPI's MPI_COMM_WORLD when a
  /// launcher started it (launcherWorldSize() > 0), else one rank. Errors
  /// (TXL_UNAVAILABLE): the launcher's libmpi cannot be loaded (its path:
  /// $TXL_MPI_LIBRARY, default libmpi.so.40, Open MPI 3 to 5) or MPI_Init
  /// fails.
  static std::unique_ptr<Communicator> forThisProcess();

protected:
  int rank_ = 0, size_ = 1;
};

/// The communicator of a CUDA-target run of several ranks: `control`'s
/// collectives on the host, NCCL's ncclAllReduce (libnccl.so.2, loaded with
/// dlopen: $TXL_NCCL_LIBRARY, else the CUDA installation's) for the
/// gradients on the device, on the session's stream. Rank 0's NCCL id
/// reaches the others through `control`. Call it after the session opened
/// its device. Errors (TXL_UNAVAILABLE): no NCCL, or its initialisation
/// fails (the message is NCCL's); a runtime built without the CUDA backend
/// (TXL_ENABLE_CUDA=OFF).
std::unique_ptr<Communicator> withNccl(std::unique_ptr<Communicator> control);

/// ncclGetVersion (e.g. 22803 for 2.28.3) of the NCCL that withNccl loads.
/// Errors (TXL_UNAVAILABLE): no NCCL, or no CUDA backend.
int ncclLibraryVersion();

/// The world size a launcher announces in the environment (Open MPI's
/// OMPI_COMM_WORLD_SIZE, PMIx's PMIX_SIZE... as mpirun or srun --mpi=pmix
/// set them), 0 when none started this process.
int launcherWorldSize();

/// This process's rank among the launcher's ranks on its machine (Open
/// MPI's OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, SLURM_LOCALID), 0
/// without a launcher: the GPU a rank of a CUDA-target run uses.
int launcherLocalRank();

/// Indices [first, first + count).
struct IndexRange {
  int64_t first = 0, count = 0;
};

/// The columns of the global batch that `rank` of `ranks` owns:
/// [rank·batch/ranks, (rank+1)·batch/ranks). Errors (TXL_INVALID_ARGUMENT):
/// `batch` not a multiple of `ranks`, naming `what` ("[train] batch_size"),
/// the batch and the rank count.
IndexRange rankColumns(int64_t batch, int rank, int ranks,
                       const std::string &what);

/// Columns [rank·batch/ranks, (rank+1)·batch/ranks) (rounded down) of a
/// batch that need not divide: counts differ by at most one, and are 0 for
/// some ranks when batch < ranks. For evaluation, whose per-token sums
/// reduce the same whatever the split.
IndexRange unevenColumns(int64_t batch, int rank, int ranks);

/// The buckets of a flat gradient of `total` floats, last floats first
/// (the last parameters first, the order DDP's buckets follow), every count
/// in (0, bucketFloats].
std::vector<IndexRange> gradientBuckets(int64_t total, int64_t bucketFloats);

/// A bucket's part of one tensor: elements `range` of tensor `tensor`.
struct TensorPart {
  size_t tensor;
  IndexRange range;
};

/// The parts of flat range `bucket` in tensors of `sizes` elements laid end
/// to end, in flat order.
std::vector<TensorPart> tensorParts(const std::vector<int64_t> &sizes,
                                    IndexRange bucket);

} // namespace txl::rt

#endif // TXL_RT_DATAPARALLEL_H

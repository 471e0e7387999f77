//===- Mpi.cpp - Open MPI's libmpi through dlopen -------------------------===//
//
// The communicator of a run started by an MPI launcher. libmpi is opened at
// run time, never linked, so that an executable started without mpirun needs
// no MPI installed; <mpi.h> (Debian's libopenmpi-dev) gives only the
// functions' types and constants at build time. Open MPI's predefined
// handles (MPI_COMM_WORLD, MPI_FLOAT, MPI_SUM...) are the addresses of its
// global objects, looked up by their names: this is Open MPI's ABI
// (libmpi.so.40: Open MPI 3.0 to 5.x), not MPICH's.
//
//===----------------------------------------------------------------------===//

#include "txl/rt/collectives/DataParallel.h"
#include "txl/rt/support/DynamicLibrary.h"
#include "txl/rt/support/Status.h"

// The C API only: Open MPI's deprecated C++ bindings would want libmpi_cxx.
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdlib>

#ifndef OPEN_MPI
#error "the MPI support is built against Open MPI's mpi.h (libopenmpi-dev)"
#endif

namespace txl::rt {
namespace {

/// libmpi's entry points and predefined handles.
struct MpiLibrary {
  std::unique_ptr<DynamicLibrary> library;
  decltype(&MPI_Initialized) initialized;
  decltype(&MPI_Init_thread) initThread;
  decltype(&MPI_Finalize) finalize;
  decltype(&MPI_Comm_rank) commRank;
  decltype(&MPI_Comm_size) commSize;
  decltype(&MPI_Allreduce) allreduce;
  decltype(&MPI_Bcast) bcast;
  decltype(&MPI_Gather) gather;
  decltype(&MPI_Abort) abort;
  decltype(&MPI_Error_string) errorString;
  decltype(&MPI_Get_library_version) libraryVersion;
  MPI_Comm world;
  MPI_Datatype float32, float64, byte;
  MPI_Op sum;

  explicit MpiLibrary(const std::string &path) {
    library = std::make_unique<DynamicLibrary>(
        path, "MPI library (Open MPI's libmpi.so.40; $TXL_MPI_LIBRARY)",
        /*global=*/true);
    auto fn = [&](auto &slot, const char *name) {
      slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(
          library->symbol(name, "Open MPI 3 or later"));
    };
    fn(initialized, "MPI_Initialized");
    fn(initThread, "MPI_Init_thread");
    fn(finalize, "MPI_Finalize");
    fn(commRank, "MPI_Comm_rank");
    fn(commSize, "MPI_Comm_size");
    fn(allreduce, "MPI_Allreduce");
    fn(bcast, "MPI_Bcast");
    fn(gather, "MPI_Gather");
    fn(abort, "MPI_Abort");
    fn(errorString, "MPI_Error_string");
    fn(libraryVersion, "MPI_Get_library_version");
    auto handle = [&](auto &slot, const char *name) {
      slot = static_cast<std::remove_reference_t<decltype(slot)>>(
          library->symbol(name, "an Open MPI predefined handle"));
    };
    handle(world, "ompi_mpi_comm_world");
    handle(float32, "ompi_mpi_float");
    handle(float64, "ompi_mpi_double");
    handle(byte, "ompi_mpi_byte");
    handle(sum, "ompi_mpi_op_sum");
  }
};

class MpiCommunicator final : public Communicator {
public:
  explicit MpiCommunicator(const std::string &path) : mpi_(path) {
    int already = 0;
    check(mpi_.initialized(&already), "MPI_Initialized");
    if (!already) {
      // Only the main thread calls MPI; the worker threads compute.
      int provided = 0;
      check(mpi_.initThread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided),
            "MPI_Init_thread");
      owned_ = true;
    }
    check(mpi_.commRank(mpi_.world, &rank_), "MPI_Comm_rank");
    check(mpi_.commSize(mpi_.world, &size_), "MPI_Comm_size");
  }
  ~MpiCommunicator() override {
    if (owned_)
      mpi_.finalize();
  }

  std::string description() const override {
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int length = 0;
    mpi_.libraryVersion(version, &length);
    std::string text(version, size_t(std::max(length, 0)));
    // "Open MPI v4.1.4, package: ..., ident: ..., repo rev: ..."
    return text.substr(0, text.find(','));
  }

  void allreduceSum(float *data, int64_t count) override {
    forChunks(count, [&](int64_t offset, int n) {
      check(mpi_.allreduce(MPI_IN_PLACE, data + offset, n, mpi_.float32,
                           mpi_.sum, mpi_.world),
            "MPI_Allreduce");
    });
  }
  void allreduceSum(double *data, int64_t count) override {
    forChunks(count, [&](int64_t offset, int n) {
      check(mpi_.allreduce(MPI_IN_PLACE, data + offset, n, mpi_.float64,
                           mpi_.sum, mpi_.world),
            "MPI_Allreduce");
    });
  }
  void broadcast(void *data, int64_t bytes, int root) override {
    forChunks(bytes, [&](int64_t offset, int n) {
      check(mpi_.bcast(static_cast<char *>(data) + offset, n, mpi_.byte, root,
                       mpi_.world),
            "MPI_Bcast");
    });
  }
  void gatherToRoot(const float *in, int64_t count, float *out) override {
    if (count > INT_MAX)
      fail(TXL_UNAVAILABLE,
           "MPI_Gather: {} floats per rank are more than an int counts", count);
    check(mpi_.gather(in, int(count), mpi_.float32, out, int(count),
                      mpi_.float32, 0, mpi_.world),
          "MPI_Gather");
  }
  void abortAll(int status) override { mpi_.abort(mpi_.world, status); }

private:
  MpiLibrary mpi_;
  bool owned_ = false;

  void check(int code, const char *call) const {
    if (code == MPI_SUCCESS)
      return;
    char text[MPI_MAX_ERROR_STRING] = {};
    int length = 0;
    mpi_.errorString(code, text, &length);
    fail(TXL_UNAVAILABLE, "{} failed on rank {} of {}: {}", call, rank_, size_,
         std::string(text, size_t(std::max(length, 0))));
  }
  /// MPI counts are ints: calls of at most 2^30 elements.
  template <typename F> static void forChunks(int64_t count, F &&call) {
    constexpr int64_t kMax = int64_t(1) << 30;
    for (int64_t offset = 0; offset < count; offset += kMax)
      call(offset, int(std::min(kMax, count - offset)));
  }
};

} // namespace

std::unique_ptr<Communicator> makeMpiCommunicator() {
  const char *path = std::getenv("TXL_MPI_LIBRARY");
  return std::make_unique<MpiCommunicator>(path && *path ? path
                                                         : "libmpi.so.40");
}

} // namespace txl::rt

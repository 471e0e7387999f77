//===- DeviceAbi.cpp - txl/device.h over the device layer -----------------===//
//
// The process's one open device, the lazily loaded modules, and the
// buffers allocated through the ABI (so that mgpuMemcpy can tell a buffer
// handle from a host pointer). The mgpu* functions return no status: a
// failure prints one line and exits with status 2 (txl/device.h).
//
// With TXL_PROFILE=1 in the environment, every kernel launch and matrix
// product waits for the queue before and after it and adds the wall time
// to its kernel's total; txl_device_close prints the totals to stderr.
//
// A dry run (txl_device_begin_dry_run) hands out handles that are one-byte
// host allocations, so that each is distinct from every buffer and host
// pointer, and counts them as buffers of the size asked.
//
//===----------------------------------------------------------------------===//

#include "txl/device.h"

#include "txl/rt/device/BufferPool.h"
#include "txl/rt/device/CountingDevice.h"
#include "txl/rt/device/Device.h"
#include "txl/rt/support/Status.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

using namespace txl::rt;

namespace {

/// A module image recorded by mgpuModuleLoad, loaded on first use.
struct LazyModule {
  std::string_view image;
  std::unique_ptr<Module> loaded;
  /// The kernels mgpuModuleGetFunction has returned (TXL_PROFILE times
  /// each one's first call, which builds its program on OpenCL).
  std::unordered_set<std::string> fetched;
};

struct State {
  std::mutex mutex;
  std::unique_ptr<Device> device;
  std::string description;
  /// device->computeUnits(), asked once at the open (every attention
  /// launch sizes its key split from it).
  int64_t computeUnits = 0;
  std::vector<std::unique_ptr<LazyModule>> modules;
  /// Buffer handle -> size in bytes, for the buffers of the open device.
  std::unordered_map<const void *, size_t> buffers;
  /// The views (Device::view) handed out and not released, so that
  /// mgpuMemcpy tells them from host pointers (a CUDA view may equal a
  /// buffer's handle: counted).
  std::unordered_map<const void *, int> views;
  /// Sum of `buffers`' sizes, and its high-water mark since the open.
  size_t inUse = 0, peak = 0;
  /// The dry run's handles (in `buffers` too), and `peak` when it began.
  std::unordered_set<const void *> dryBuffers;
  size_t peakBeforeDryRun = 0;
  /// TXL_PROFILE: the kernels' names, and launches and seconds per name.
  std::unordered_map<const Kernel *, std::string> kernelNames;
  struct Timing {
    size_t launches = 0;
    double seconds = 0;
  };
  std::unordered_map<std::string, Timing> timings;
  /// The kernels a `counts: serial kernel` line has named.
  std::unordered_set<const Kernel *> serialKernels;
  /// What `device` has been asked to do since the open
  /// (txl_device_counters).
  DeviceCounters counters;
};

/// Between txl_device_begin_dry_run and txl_device_end_dry_run.
std::atomic<bool> dryRun{false};

/// txl_device_serial_steps's value for the next launch of this thread (0:
/// none given).
thread_local int64_t pendingSerialSteps = 0;

/// TXL_PROFILE asks for the kernels' times (profileTimes, CountingDevice.h).
bool profiling() { return profileTimes(); }

/// Never destroyed: device libraries tear themselves down at exit in an
/// order of their own, so nothing is released then (txl_device_close
/// releases everything before exit).
State &state() {
  static State *s = new State;
  return *s;
}

/// Runs `body`; on an Error (or any exception), prints "error: <message>"
/// and exits with status 2: the mgpu* calls have no way to report one.
template <typename Body> auto orExit(const char *what, Body &&body) {
  try {
    return body();
  } catch (const std::exception &e) {
    std::fprintf(stderr, "error: %s: %s\n", what, e.what());
    std::fflush(stderr);
    std::exit(2);
  }
}

void printProfileLocked(State &s);

/// Frees every module and buffer and closes the device; `s.mutex` held.
void closeLocked(State &s) {
  if (s.device)
    orExit("txl_device_close", [&] { s.device->synchronize(); });
  printProfileLocked(s);
  s.kernelNames.clear();
  s.serialKernels.clear();
  for (auto &module : s.modules)
    module->loaded.reset();
  for (auto &[buffer, size] : s.buffers)
    if (s.dryBuffers.count(buffer))
      delete static_cast<const char *>(buffer);
    else
      s.device->free(const_cast<void *>(buffer));
  s.buffers.clear();
  s.views.clear();
  s.dryBuffers.clear();
  dryRun = false;
  s.inUse = s.peak = 0;
  s.device.reset();
  s.description.clear();
  s.computeUnits = 0;
}

Device &device() {
  State &s = state();
  if (!s.device)
    fail(TXL_UNAVAILABLE, "no device is open (txl_device_open was not called)");
  return *s.device;
}

/// Runs `enqueue` (which enqueues work on the device); when profiling,
/// waits for the queue before and after it and adds the time to `name`.
template <typename Enqueue>
void timed(const std::string &name, Enqueue &&enqueue) {
  if (!profiling())
    return enqueue();
  device().synchronize();
  auto start = std::chrono::steady_clock::now();
  enqueue();
  device().synchronize();
  std::chrono::duration<double> elapsed =
      std::chrono::steady_clock::now() - start;
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  State::Timing &t = s.timings[name];
  ++t.launches;
  t.seconds += elapsed.count();
}

/// Prints TXL_PROFILE's table, longest total first; `s.mutex` held.
void printProfileLocked(State &s) {
  if (s.timings.empty())
    return;
  std::vector<std::pair<std::string, State::Timing>> rows(s.timings.begin(),
                                                          s.timings.end());
  std::sort(rows.begin(), rows.end(), [](const auto &a, const auto &b) {
    return a.second.seconds > b.second.seconds;
  });
  double total = 0;
  for (const auto &row : rows)
    total += row.second.seconds;
  std::fprintf(stderr, "TXL_PROFILE: %.3f s on the device\n", total);
  std::fprintf(stderr, "%10s %6s %10s %12s  %s\n", "seconds", "%", "launches",
               "ms/launch", "kernel");
  for (const auto &[name, t] : rows)
    std::fprintf(stderr, "%10.3f %6.1f %10zu %12.4f  %s\n", t.seconds,
                 total > 0 ? 100 * t.seconds / total : 0.0, t.launches,
                 1e3 * t.seconds / double(t.launches), name.c_str());
  s.timings.clear();
}

bool isBuffer(const void *p) {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().buffers.count(p) != 0 || state().views.count(p) != 0;
}

} // namespace

extern "C" {

int txl_device_open(int32_t backend, int ordinal, char *error,
                    size_t errorSize) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  closeLocked(s);
  try {
    Backend which;
    if (backend == TXL_BACKEND_CUDA)
      which = Backend::Cuda;
    else if (backend == TXL_BACKEND_OPENCL)
      which = Backend::OpenCL;
    else
      fail(TXL_INVALID_ARGUMENT,
           "backend {} ({}) has no device (TXL_BACKEND_CUDA = {}, "
           "TXL_BACKEND_OPENCL = {})",
           int(backend),
           txl_backend_name(backend) ? txl_backend_name(backend)
                                     : "not a txl_backend_t",
           int(TXL_BACKEND_CUDA), int(TXL_BACKEND_OPENCL));
    s.counters.reset();
    // The counters see what reaches the device: the pool's allocations
    // (BufferPool.h), not every buffer it hands out again.
    s.device = countOperations(openDevice(which, ordinal), s.counters);
    if (devicePoolEnabled())
      s.device = poolBuffers(std::move(s.device));
    s.description = s.device->description();
    s.computeUnits = s.device->computeUnits();
    return TXL_OK;
  } catch (const Error &e) {
    if (error && errorSize)
      std::snprintf(error, errorSize, "%s", e.what());
    return e.code();
  }
}

const char *txl_device_description(void) { return state().description.c_str(); }

void txl_device_counters(txl_device_counters_t *out) {
  if (!out)
    return;
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  *out = s.device ? s.counters.snapshot() : txl_device_counters_t{};
}

void *txl_device_native_stream(void) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.device ? s.device->nativeStream() : nullptr;
}

void txl_device_sync(void) {
  if (dryRun)
    return;
  orExit("txl_device_sync", [] { device().synchronize(); });
}

void txl_device_write(void *buffer, size_t offset, const void *host,
                      size_t bytes) {
  if (dryRun)
    return;
  orExit("txl_device_write",
         [&] { device().copyToDevice(buffer, offset, host, bytes); });
}

void txl_device_read(void *host, const void *buffer, size_t offset,
                     size_t bytes) {
  if (dryRun) {
    std::memset(host, 0, bytes);
    return;
  }
  orExit("txl_device_read",
         [&] { device().copyToHost(host, buffer, offset, bytes); });
}

void txl_device_memory(size_t *total, size_t *free, size_t *inUse,
                       size_t *peak) {
  State &s = state();
  size_t values[4] = {};
  orExit("txl_device_memory", [&] {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.device)
      return;
    values[0] = s.device->totalMemory();
    std::optional<size_t> reported = s.device->freeMemory();
    values[1] = reported ? *reported : values[0] - std::min(values[0], s.inUse);
    values[2] = s.inUse;
    values[3] = s.peak;
  });
  size_t *out[4] = {total, free, inUse, peak};
  for (int i = 0; i < 4; ++i)
    if (out[i])
      *out[i] = values[i];
}

void txl_device_close(void) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  closeLocked(s);
}

void txl_device_begin_dry_run(void) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.peakBeforeDryRun = s.peak;
  s.peak = s.inUse;
  dryRun = true;
}

size_t txl_device_end_dry_run(void) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  dryRun = false;
  for (const void *handle : s.dryBuffers) {
    s.inUse -= s.buffers[handle];
    s.buffers.erase(handle);
    delete static_cast<const char *>(handle);
  }
  s.dryBuffers.clear();
  size_t peak = s.peak;
  s.peak = std::max(s.peakBeforeDryRun, s.inUse);
  return peak;
}

namespace {

void deviceGemm(const char *name, GemmDesc::Inputs inputs, int32_t transA,
                int32_t transB, int64_t m, int64_t n, int64_t k, float alpha,
                void *a, int64_t aOffset, int64_t lda, int64_t aStride, void *b,
                int64_t bOffset, int64_t ldb, int64_t bStride, float beta,
                void *c, int64_t cOffset, int64_t ldc, int64_t cStride,
                int64_t batch) {
  if (dryRun)
    return;
  GemmDesc desc;
  desc.inputs = inputs;
  desc.transA = transA != 0;
  desc.transB = transB != 0;
  desc.m = m;
  desc.n = n;
  desc.k = k;
  desc.alpha = alpha;
  desc.beta = beta;
  desc.a = {a, aOffset, lda, aStride};
  desc.b = {b, bOffset, ldb, bStride};
  desc.c = {c, cOffset, ldc, cStride};
  desc.batch = batch;
  orExit(name, [&] {
    timed(inputs == GemmDesc::Inputs::Bf16  ? "gemm (bf16 inputs)"
          : inputs == GemmDesc::Inputs::F16 ? "gemm (f16 inputs)"
                                            : "gemm",
          [&] { enqueueGemm(device(), desc); });
  });
}

} // namespace

void txl_device_sgemm(int32_t transA, int32_t transB, int64_t m, int64_t n,
                      int64_t k, float alpha, void *a, int64_t aOffset,
                      int64_t lda, int64_t aStride, void *b, int64_t bOffset,
                      int64_t ldb, int64_t bStride, float beta, void *c,
                      int64_t cOffset, int64_t ldc, int64_t cStride,
                      int64_t batch) {
  deviceGemm("txl_device_sgemm", GemmDesc::Inputs::F32, transA, transB, m, n, k,
             alpha, a, aOffset, lda, aStride, b, bOffset, ldb, bStride, beta, c,
             cOffset, ldc, cStride, batch);
}

void txl_device_sgemm_bf16(int32_t transA, int32_t transB, int64_t m, int64_t n,
                           int64_t k, float alpha, void *a, int64_t aOffset,
                           int64_t lda, int64_t aStride, void *b,
                           int64_t bOffset, int64_t ldb, int64_t bStride,
                           float beta, void *c, int64_t cOffset, int64_t ldc,
                           int64_t cStride, int64_t batch) {
  deviceGemm("txl_device_sgemm_bf16", GemmDesc::Inputs::Bf16, transA, transB, m,
             n, k, alpha, a, aOffset, lda, aStride, b, bOffset, ldb, bStride,
             beta, c, cOffset, ldc, cStride, batch);
}

void txl_device_sgemm_f16(int32_t transA, int32_t transB, int64_t m, int64_t n,
                          int64_t k, float alpha, void *a, int64_t aOffset,
                          int64_t lda, int64_t aStride, void *b,
                          int64_t bOffset, int64_t ldb, int64_t bStride,
                          float beta, void *c, int64_t cOffset, int64_t ldc,
                          int64_t cStride, int64_t batch) {
  deviceGemm("txl_device_sgemm_f16", GemmDesc::Inputs::F16, transA, transB, m,
             n, k, alpha, a, aOffset, lda, aStride, b, bOffset, ldb, bStride,
             beta, c, cOffset, ldc, cStride, batch);
}

void *mgpuModuleLoad(void *data, size_t size) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.modules.push_back(std::make_unique<LazyModule>(LazyModule{
      std::string_view(static_cast<const char *>(data), size), {}, {}}));
  return s.modules.back().get();
}

void *mgpuModuleLoadJIT(void *data, int) {
  // PTX text, NUL-terminated; the CUDA driver compiles it on load.
  return mgpuModuleLoad(data, std::strlen(static_cast<const char *>(data)) + 1);
}

void mgpuModuleUnload(void *module) {
  // At exit (a global destructor): the device may be closed already.
  static_cast<LazyModule *>(module)->loaded.reset();
}

void *mgpuModuleGetFunction(void *module, const char *name) {
  if (dryRun)
    return module; // a token: launches do nothing in a dry run
  return orExit("mgpuModuleGetFunction", [&] {
    auto *lazy = static_cast<LazyModule *>(module);
    if (!lazy->loaded) {
      auto start = std::chrono::steady_clock::now();
      lazy->loaded = device().loadModule(lazy->image);
      if (profiling()) {
        std::chrono::duration<double> elapsed =
            std::chrono::steady_clock::now() - start;
        std::string origin = lazy->loaded->origin();
        std::fprintf(
            stderr, "TXL_PROFILE: kernel module loaded in %.3f s%s%s\n",
            elapsed.count(), origin.empty() ? "" : ": ", origin.c_str());
      }
    }
    if (!profiling()) {
      Kernel &kernel = lazy->loaded->kernel(name);
      if (profileCounts()) { // for the `counts: serial kernel` lines
        State &s = state();
        std::lock_guard<std::mutex> lock(s.mutex);
        s.kernelNames[&kernel] = name;
      }
      return static_cast<void *>(&kernel);
    }
    bool first = lazy->fetched.insert(name).second;
    auto start = std::chrono::steady_clock::now();
    Kernel &kernel = lazy->loaded->kernel(name);
    if (first) {
      std::chrono::duration<double> elapsed =
          std::chrono::steady_clock::now() - start;
      std::string origin = lazy->loaded->origin();
      std::fprintf(stderr, "TXL_PROFILE: kernel %s loaded in %.3f s%s%s\n",
                   name, elapsed.count(), origin.empty() ? "" : ": ",
                   origin.c_str());
    }
    {
      State &s = state();
      std::lock_guard<std::mutex> lock(s.mutex);
      s.kernelNames[&kernel] = name;
    }
    return static_cast<void *>(&kernel);
  });
}

void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t sharedBytes, void *,
                      void **params, void **, size_t paramCount) {
  const int64_t serialSteps = std::exchange(pendingSerialSteps, 0);
  if (dryRun)
    return;
  orExit("mgpuLaunchKernel", [&] {
    size_t grid[3] = {size_t(gridX), size_t(gridY), size_t(gridZ)};
    size_t block[3] = {size_t(blockX), size_t(blockY), size_t(blockZ)};
    auto &kernel = *static_cast<Kernel *>(function);
    const uint64_t workgroups = uint64_t(gridX) * gridY * gridZ;
    if ((serialSteps < 0 || serialSteps > kSerialStepsBudget) &&
        workgroups < kLintMultiprocessors && workgroups > 0) {
      State &s = state();
      std::lock_guard<std::mutex> lock(s.mutex);
      ++s.counters.serialLaunches;
      if (profileCounts() && s.serialKernels.insert(&kernel).second)
        std::fprintf(stderr,
                     "counts: serial kernel %s: %lld loop steps per "
                     "work-item on %llu workgroups\n",
                     s.kernelNames[&kernel].c_str(),
                     static_cast<long long>(serialSteps),
                     static_cast<unsigned long long>(workgroups));
    }
    auto launch = [&] {
      device().launch(kernel, grid, block, size_t(sharedBytes), params,
                      paramCount);
    };
    if (!profiling())
      return launch();
    std::string name;
    {
      State &s = state();
      std::lock_guard<std::mutex> lock(s.mutex);
      name = s.kernelNames[&kernel];
    }
    timed(name, launch);
  });
}

int64_t txl_device_attention_parts(int64_t workgroups, int64_t resident,
                                   int64_t key_tiles) {
  return orExit("txl_device_attention_parts", [&] {
    device(); // fails when no device is open
    return attentionKeyParts(state().computeUnits, workgroups, resident,
                             key_tiles);
  });
}

void *mgpuStreamCreate(void) {
  // Every stream is the device's one queue; a non-null token.
  static char queue;
  return &queue;
}

void mgpuStreamDestroy(void *) {}

void mgpuStreamSynchronize(void *) {}

void *mgpuMemAlloc(uint64_t bytes, void *, bool hostShared) {
  return orExit("mgpuMemAlloc", [&] {
    if (hostShared)
      fail(TXL_INVALID_ARGUMENT, "host-shared device memory is not supported");
    void *buffer = dryRun ? new char : device().allocate(bytes);
    State &s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (dryRun)
      s.dryBuffers.insert(buffer);
    s.buffers.emplace(buffer, bytes);
    s.inUse += bytes;
    s.peak = std::max(s.peak, s.inUse);
    return buffer;
  });
}

void mgpuMemFree(void *buffer, void *) {
  orExit("mgpuMemFree", [&] {
    {
      State &s = state();
      std::lock_guard<std::mutex> lock(s.mutex);
      auto found = s.buffers.find(buffer);
      if (found == s.buffers.end())
        fail(TXL_INVALID_ARGUMENT, "freeing {} which is no device buffer",
             buffer);
      s.inUse -= found->second;
      s.buffers.erase(found);
      if (s.dryBuffers.erase(buffer)) {
        delete static_cast<char *>(buffer);
        return;
      }
    }
    device().free(buffer);
  });
}

void mgpuMemcpy(void *dst, void *src, size_t bytes, void *) {
  orExit("mgpuMemcpy", [&] {
    bool toDevice = isBuffer(dst), fromDevice = isBuffer(src);
    if (dryRun && (toDevice || fromDevice)) {
      if (!toDevice)
        std::memset(dst, 0, bytes);
      return;
    }
    if (toDevice && fromDevice)
      device().copyOnDevice(dst, 0, src, 0, bytes);
    else if (toDevice)
      device().copyToDevice(dst, 0, src, bytes);
    else if (fromDevice)
      device().copyToHost(dst, src, 0, bytes);
    else
      std::memcpy(dst, src, bytes);
  });
}

void txl_device_serial_steps(int64_t steps) { pendingSerialSteps = steps; }

int64_t txl_device_count_bound(int64_t count, int64_t bound) {
  return dryRun ? bound : int64_t(std::min(uint64_t(count), uint64_t(bound)));
}

void mgpuMemset32(void *dst, unsigned int value, size_t count, void *) {
  if (dryRun)
    return;
  orExit("mgpuMemset32", [&] { device().fill32(dst, 0, value, count); });
}

// finalize-memref-to-llvm's generic allocation functions: on the GPU
// targets every allocation of host code is a device buffer.
void *_mlir_memref_to_llvm_alloc(size_t bytes) {
  return mgpuMemAlloc(bytes, nullptr, false);
}

void *_mlir_memref_to_llvm_aligned_alloc(size_t, size_t bytes) {
  // Device allocations are aligned far beyond what memrefs ask (256 bytes
  // on CUDA, CL_DEVICE_MEM_BASE_ADDR_ALIGN on OpenCL).
  return mgpuMemAlloc(bytes, nullptr, false);
}

void _mlir_memref_to_llvm_free(void *buffer) {
  if (buffer)
    mgpuMemFree(buffer, nullptr);
}

} // extern "C"

namespace txl::rt {

namespace {

/// openedDevice: the opened device through the ABI's own entry points, so
/// that the session's buffers are counted and dry-run like the compiled
/// code's.
class OpenedDevice final : public Device {
public:
  std::string description() const override { return device().description(); }
  size_t totalMemory() const override { return device().totalMemory(); }
  int64_t computeUnits() const override { return device().computeUnits(); }
  void *nativeStream() const override { return device().nativeStream(); }
  std::optional<size_t> freeMemory() const override {
    return device().freeMemory();
  }
  void *view(void *buffer, size_t offsetBytes, size_t bytes) override {
    if (dryRun)
      return buffer; // a token: nothing reads a dry run's buffers
    return orExit("view", [&] {
      void *view = device().view(buffer, offsetBytes, bytes);
      State &s = state();
      std::lock_guard<std::mutex> lock(s.mutex);
      ++s.views[view];
      return view;
    });
  }
  void releaseView(void *view) override {
    if (dryRun)
      return;
    orExit("releaseView", [&] {
      {
        State &s = state();
        std::lock_guard<std::mutex> lock(s.mutex);
        auto found = s.views.find(view);
        if (found == s.views.end())
          fail(TXL_INVALID_ARGUMENT, "releasing {} which is no view", view);
        if (--found->second == 0)
          s.views.erase(found);
      }
      device().releaseView(view);
    });
  }
  size_t viewAlignment() const override { return device().viewAlignment(); }
  void *allocate(size_t bytes) override {
    return mgpuMemAlloc(bytes, nullptr, false);
  }
  void free(void *buffer) override { mgpuMemFree(buffer, nullptr); }
  void copyToDevice(void *buffer, size_t offsetBytes, const void *host,
                    size_t bytes) override {
    txl_device_write(buffer, offsetBytes, host, bytes);
  }
  void copyToHost(void *host, const void *buffer, size_t offsetBytes,
                  size_t bytes) override {
    txl_device_read(host, buffer, offsetBytes, bytes);
  }
  void copyToHostAsync(void *host, const void *buffer, size_t offsetBytes,
                       size_t bytes) override {
    if (dryRun)
      std::memset(host, 0, bytes);
    else
      orExit("copyToHostAsync", [&] {
        device().copyToHostAsync(host, buffer, offsetBytes, bytes);
      });
  }
  void copyOnDevice(void *dst, size_t dstOffsetBytes, const void *src,
                    size_t srcOffsetBytes, size_t bytes) override {
    if (!dryRun)
      device().copyOnDevice(dst, dstOffsetBytes, src, srcOffsetBytes, bytes);
  }
  void copyStridedOnDevice(void *buffer, size_t dstOffsetBytes,
                           size_t srcOffsetBytes, size_t bytes,
                           size_t pitchBytes, size_t count) override {
    if (!dryRun)
      device().copyStridedOnDevice(buffer, dstOffsetBytes, srcOffsetBytes,
                                   bytes, pitchBytes, count);
  }
  void fill32(void *buffer, size_t offsetBytes, uint32_t value,
              size_t count) override {
    if (!dryRun)
      device().fill32(buffer, offsetBytes, value, count);
  }
  std::unique_ptr<Module> loadModule(std::string_view image) override {
    return device().loadModule(image);
  }
  void launch(Kernel &kernel, const size_t grid[3], const size_t block[3],
              size_t sharedBytes, void **params, size_t paramCount) override {
    if (!dryRun)
      device().launch(kernel, grid, block, sharedBytes, params, paramCount);
  }
  void gemm(const GemmDesc &columnMajor) override {
    if (!dryRun)
      device().gemm(columnMajor);
  }
  void synchronize() override { txl_device_sync(); }
};

} // namespace

Device &openedDevice() {
  static OpenedDevice opened;
  device(); // fails when no device is open
  return opened;
}

#if TXL_ENABLE_CUDA
#define TXL_CUDA_NAME " cuda"
#else
#define TXL_CUDA_NAME ""
#endif
#if TXL_ENABLE_OPENCL
#define TXL_OPENCL_NAME " opencl"
#else
#define TXL_OPENCL_NAME ""
#endif

const char *builtBackends() { return "host" TXL_CUDA_NAME TXL_OPENCL_NAME; }

std::unique_ptr<Device> openDevice(Backend backend, int ordinal) {
  switch (backend) {
  case Backend::Host:
    (void)ordinal; // the host device is the one device of its backend
    return openHostDevice();
  case Backend::Cuda:
#if TXL_ENABLE_CUDA
    return openCudaDevice(ordinal);
#else
    fail(TXL_UNAVAILABLE, "this runtime was built without the CUDA backend "
                          "(TXL_ENABLE_CUDA=OFF): rebuild it with "
                          "-DTXL_ENABLE_CUDA=ON");
#endif
  case Backend::OpenCL:
#if TXL_ENABLE_OPENCL
    return openOpenCLDevice(ordinal);
#else
    fail(TXL_UNAVAILABLE, "this runtime was built without the OpenCL backend "
                          "(TXL_ENABLE_OPENCL=OFF): rebuild it with "
                          "-DTXL_ENABLE_OPENCL=ON");
#endif
  }
  fail(TXL_INVALID_ARGUMENT, "no such backend {}", int(backend));
}

int64_t attentionKeyParts(int64_t computeUnits, int64_t workgroups,
                          int64_t resident, int64_t keyTiles) {
  constexpr int64_t kWaves = 2, kMinKeyTilesPerPart = 4, kMaxParts = 16;
  int64_t slots =
      std::max<int64_t>(computeUnits, 1) * std::max<int64_t>(resident, 1);
  workgroups = std::max<int64_t>(workgroups, 1);
  if (workgroups >= slots)
    return 1;
  int64_t wanted = (kWaves * slots + workgroups - 1) / workgroups;
  int64_t byKeys = std::max<int64_t>(keyTiles, 1) / kMinKeyTilesPerPart;
  return std::clamp<int64_t>(std::min(wanted, byKeys), 1, kMaxParts);
}

} // namespace txl::rt

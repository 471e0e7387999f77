//===- Device.h - One GPU (or OpenCL device) and its queue ------*- C++ -*-===//
//
// The device layer: one device, one in-order queue, buffers, kernel
// modules and launches, behind one interface with a host (the CPU target),
// a CUDA and an OpenCL backend (no MLIR in it). The code txlc generates for
// the GPU targets reaches it through the C functions of txl/device.h, which
// keep the names and signatures of MLIR's GPU runtime ABI (mgpu*); the
// runtime's sessions hold their arrays in its buffers on every target.
//
// Buffers are opaque handles (`void *`): a CUdeviceptr on CUDA, a cl_mem on
// OpenCL, the host address on the host device. Compiled GPU code only
// copies them and adds element offsets beside them (memref descriptors),
// never dereferences or offsets the handle; the host device's are the
// pointers its compiled host code takes.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_DEVICE_H
#define TXL_RT_DEVICE_H

#include "txl/device.h"
#include "txl/rt/device/Gemm.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace txl::rt {

/// A kernel of a loaded module.
class Kernel {
public:
  virtual ~Kernel() = default;
};

/// A loaded kernel module.
class Module {
public:
  virtual ~Module() = default;
  /// The kernel `name`. Throws Error(TXL_UNAVAILABLE) naming the kernel when
  /// the module has none of that name.
  virtual Kernel &kernel(const std::string &name) = 0;
  /// How the backend obtained the module, for TXL_PROFILE ("built from
  /// SPIR-V, cached in <path>", "from the program cache <path>"); empty
  /// when there is nothing to say.
  virtual std::string origin() const { return {}; }
};

/// One device and its in-order queue. Every operation is enqueued and
/// returns without waiting, except copyToHost and `synchronize` (the host
/// device's queue is the caller: everything is done when it returns); every
/// failure throws Error(TXL_UNAVAILABLE) with the API's error name.
class Device {
public:
  virtual ~Device() = default;

  /// "NVIDIA H100 80GB HBM3 (CUDA, sm_90, 79.1 GiB)" and the like.
  virtual std::string description() const = 0;
  /// Total device memory in bytes.
  virtual size_t totalMemory() const = 0;
  /// Compute units: streaming multiprocessors on CUDA
  /// (CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT), CL_DEVICE_MAX_COMPUTE_UNITS
  /// on OpenCL (cores on a CPU device).
  virtual int64_t computeUnits() const = 0;
  /// The queue as the API names it, for libraries that enqueue on it
  /// (CUDA: the CUstream); null where there is none to share.
  virtual void *nativeStream() const { return nullptr; }
  /// Free device memory in bytes as the driver reports it, or nullopt
  /// when the API has no such query (OpenCL).
  virtual std::optional<size_t> freeMemory() const = 0;
  /// Whether the device's memory is the host's (the host device): its
  /// buffers are host addresses, read and written in place, and any host
  /// address may be passed where it takes a buffer. False where buffers
  /// are reached only through copies (CUDA, OpenCL).
  virtual bool hostMemory() const { return false; }
  /// The host address of `buffer`'s first byte where hostMemory(), else
  /// null.
  void *hostAddress(void *buffer) const {
    return hostMemory() ? buffer : nullptr;
  }

  /// A handle for the `bytes` bytes of `buffer` from `offsetBytes` on,
  /// which compiled code takes wherever it takes a buffer (a window into
  /// one, as the key/value cache's): the handle plus the offset where
  /// handles are addresses (the host, CUDA: the default); on OpenCL, whose
  /// cl_mem names a whole buffer, a sub-buffer, for which `offsetBytes`
  /// must be a multiple of viewAlignment(). Released by releaseView once
  /// the work that uses it is enqueued (BufferView does both).
  virtual void *view(void *buffer, size_t offsetBytes, size_t bytes) {
    (void)bytes;
    return static_cast<char *>(buffer) + offsetBytes;
  }
  virtual void releaseView(void *view) { (void)view; }
  /// What view()'s offsets must be a multiple of, in bytes: 1 where
  /// handles are addresses; OpenCL's CL_DEVICE_MEM_BASE_ADDR_ALIGN.
  virtual size_t viewAlignment() const { return 1; }

  /// Uninitialised device memory for `bytes` bytes.
  virtual void *allocate(size_t bytes) = 0;
  /// Frees after the work enqueued so far (stream order).
  virtual void free(void *buffer) = 0;
  /// Enqueues a copy of `bytes` bytes of `host` into `buffer` from
  /// `offsetBytes` on; returns without waiting for the queue, and `host`
  /// may be reused when it returns (the GPU backends stage it: HostStaging).
  virtual void copyToDevice(void *buffer, size_t offsetBytes, const void *host,
                            size_t bytes) = 0;
  /// Waits for the queue, then copies.
  virtual void copyToHost(void *host, const void *buffer, size_t offsetBytes,
                          size_t bytes) = 0;
  /// Enqueues a copy of `bytes` bytes of `buffer` from `offsetBytes` on
  /// into `host` without waiting: `host` holds them once the next
  /// synchronize() or copyToHost returns, and must stay valid and unread
  /// until then. The default copies at once (copyToHost); the GPU backends
  /// override it.
  virtual void copyToHostAsync(void *host, const void *buffer,
                               size_t offsetBytes, size_t bytes) {
    copyToHost(host, buffer, offsetBytes, bytes);
  }
  /// The ranges may overlap only where hostMemory() (a memmove); the GPU
  /// APIs' copies take disjoint ranges.
  virtual void copyOnDevice(void *dst, size_t dstOffsetBytes, const void *src,
                            size_t srcOffsetBytes, size_t bytes) = 0;
  /// Enqueues `count` copies of `bytes` bytes within `buffer` as one
  /// operation (a 2-D copy: cuMemcpy2DAsync, clEnqueueCopyBufferRect):
  /// copy i from `srcOffsetBytes` + i · `pitchBytes` to `dstOffsetBytes` +
  /// i · `pitchBytes`, pitchBytes >= bytes. No source range may overlap a
  /// destination range unless hostMemory(). The default makes the copies
  /// one by one (copyOnDevice).
  virtual void copyStridedOnDevice(void *buffer, size_t dstOffsetBytes,
                                   size_t srcOffsetBytes, size_t bytes,
                                   size_t pitchBytes, size_t count) {
    for (size_t i = 0; i < count; ++i)
      copyOnDevice(buffer, dstOffsetBytes + i * pitchBytes, buffer,
                   srcOffsetBytes + i * pitchBytes, bytes);
  }
  /// Sets `count` 32-bit words from `offsetBytes` to `value`.
  virtual void fill32(void *buffer, size_t offsetBytes, uint32_t value,
                      size_t count) = 0;

  /// Loads a module image as txlc embeds it: a CUDA fatbin, cubin or PTX,
  /// or an OpenCL kernel image (txl/device.h).
  virtual std::unique_ptr<Module> loadModule(std::string_view image) = 0;
  /// Launches `kernel` on a grid of `grid` workgroups of `block`
  /// work-items; `params[i]` points at argument i as the generated host
  /// code lays them out (expanded memref descriptors, then scalars).
  virtual void launch(Kernel &kernel, const size_t grid[3],
                      const size_t block[3], size_t sharedBytes, void **params,
                      size_t paramCount) = 0;

  /// Enqueues `columnMajor` (checked, m, n, k and batch all positive) on
  /// the queue through the backend's BLAS library (cuBLAS, CLBlast), loaded
  /// on first use. Throws Error(TXL_UNAVAILABLE) "no cuBLAS: ..." / "no
  /// CLBlast: ..." when the library is missing, or with its status name.
  virtual void gemm(const GemmDesc &columnMajor) = 0;

  /// Waits until the queue is empty.
  virtual void synchronize() = 0;
};

/// Device::view of a buffer's bytes, released when destroyed.
class BufferView {
public:
  BufferView() = default;
  BufferView(Device &device, void *buffer, size_t offsetBytes, size_t bytes)
      : device_(&device), handle_(device.view(buffer, offsetBytes, bytes)) {}
  BufferView(BufferView &&other) noexcept
      : device_(other.device_), handle_(std::exchange(other.handle_, nullptr)) {
  }
  BufferView &operator=(BufferView &&other) noexcept {
    std::swap(device_, other.device_);
    std::swap(handle_, other.handle_);
    return *this;
  }
  BufferView(const BufferView &) = delete;
  BufferView &operator=(const BufferView &) = delete;
  ~BufferView() {
    if (handle_)
      device_->releaseView(handle_);
  }
  /// What compiled code takes.
  void *handle() const { return handle_; }

private:
  Device *device_ = nullptr;
  void *handle_ = nullptr;
};

/// The backends: the CPU (the host device) and the GPU targets'.
enum class Backend { Host, Cuda, OpenCL };

/// The backends this runtime was built with, as txlc's --target names
/// them after "host": "host cuda opencl", or fewer where the CMake options
/// TXL_ENABLE_CUDA / TXL_ENABLE_OPENCL were off.
const char *builtBackends();

/// Opens device `ordinal` of `backend` with its queue. Throws
/// Error(TXL_UNAVAILABLE) with one line naming what is missing: "no CUDA
/// driver: dlopen(libcuda.so.1) failed: ...", "no OpenCL platform: ...",
/// "no OpenCL device with SPIR-V ...", or "this runtime was built without
/// the CUDA backend (TXL_ENABLE_CUDA=OFF) ..." (and OpenCL's) for a backend
/// the build left out. The host device is the one device of Backend::Host
/// (`ordinal` unused there).
std::unique_ptr<Device> openDevice(Backend backend, int ordinal = 0);

/// The device txl_device_open opened (txl/device.h), the one a GPU
/// target's compiled code runs on, as a Device whose allocations go through
/// mgpuMemAlloc and mgpuMemFree (counted by txl_device_memory, backed by
/// nothing during a dry run) and whose copies, fills, launches and products
/// do nothing during a dry run, as the compiled code's. Throws
/// Error(TXL_UNAVAILABLE) when no device is open.
Device &openedDevice();

/// The device `open` returns, with every call of it, of its modules and of
/// their kernels (and its construction and destruction) made on one thread
/// the device owns; callers wait for their call, exceptions reach them
/// unchanged, calls from several threads run one after another. Modules
/// must not outlive the device. The OpenCL backend runs this way: Intel's
/// CPU runtime queries the calling thread's stack on every enqueue, which
/// glibc answers for the main thread by parsing /proc/self/maps
/// (ThreadBoundDevice.cpp).
std::unique_ptr<Device>
bindToThread(const std::function<std::unique_ptr<Device>()> &open);

/// The backends (HostDevice.cpp, OpenCLDevice.cpp, CudaDevice.cpp).
std::unique_ptr<Device> openHostDevice();
std::unique_ptr<Device> openOpenCLDevice(int ordinal);
std::unique_ptr<Device> openCudaDevice(int ordinal);

/// The magic that starts an OpenCL kernel image (txl/device.h).
inline constexpr std::string_view kOpenCLImageMagic = TXL_OPENCL_IMAGE_MAGIC;

/// How many parts a rel_attention forward kernel splits its keys into
/// (flash-decoding), for a grid of `workgroups` workgroups unsplit, of
/// which `resident` fit on one of the device's `computeUnits` at once, over
/// `keyTiles` tiles of 32 keys. 1 when the unsplit grid fills every compute
/// unit (workgroups >= computeUnits · resident): splitting would only add
/// the combine. Otherwise enough parts for two such waves, but each part at
/// least 4 key tiles (128 keys, so that a part's work outweighs its share
/// of the combine) and at most 16 parts. Inputs below 1 count as 1.
/// Example: Transformer-XL's enwik8 evaluation (qlen 80, klen 2180,
/// 5 × 32 workgroups of 4 resident) on 132 SMs: 7 parts (the bf16
/// kernel's 2 × 32 workgroups of 2 resident: 9).
int64_t attentionKeyParts(int64_t computeUnits, int64_t workgroups,
                          int64_t resident, int64_t keyTiles);

} // namespace txl::rt

#endif // TXL_RT_DEVICE_H

//===- CudaDevice.cpp - The CUDA backend of the device layer --------------===//
//
// One CUDA device through the driver API (CudaDriver: libcuda.so.1 loaded
// with dlopen), its primary context, one non-blocking stream; buffers are
// CUdeviceptr values from the stream-ordered allocator (cuMemAllocAsync,
// cuMemFreeAsync), so that allocation and release keep the queue's order
// without synchronizing; copies to and from the host go through
// page-locked staging blocks (HostStaging), so that neither an upload nor
// copyToHostAsync waits for the stream. Module images are what txlc embeds for
// --target=cuda: a fatbin (a cubin per --gpu-arch plus PTX for newer GPUs),
// a cubin or PTX, all loaded by cuModuleLoadDataEx.
//
//===----------------------------------------------------------------------===//

#include "txl/rt/device/Cublas.h"
#include "txl/rt/device/CudaDriver.h"
#include "txl/rt/device/Device.h"
#include "txl/rt/device/HostStaging.h"
#include "txl/rt/support/Status.h"

#include <map>
#include <string>

namespace txl::rt {

namespace {

/// Dynamic shared memory a launch gets without opting in.
constexpr size_t kDefaultDynamicSharedBytes = 48 * 1024;

CUdeviceptr asDevicePointer(const void *buffer) {
  return reinterpret_cast<CUdeviceptr>(buffer);
}

/// An event recorded after a copy, asked about without waiting.
class EventFence final : public CopyFence {
public:
  EventFence(const CudaDriver &cuda, CUevent event)
      : cuda_(cuda), event_(event) {}
  ~EventFence() override { cuda_.cuEventDestroy_v2(event_); }
  bool done() override {
    // CUDA_ERROR_NOT_READY while pending; an error is the stream's, which
    // the next synchronize reports (the block is no longer read).
    return cuda_.cuEventQuery(event_) != CUDA_ERROR_NOT_READY;
  }

private:
  const CudaDriver &cuda_;
  CUevent event_;
};

class CudaKernel : public Kernel {
public:
  CudaKernel(CUfunction function, std::string name)
      : function_(function), name_(std::move(name)) {}
  CUfunction function_;
  std::string name_;
  /// The dynamic shared memory its launches may pass (raised on demand).
  size_t dynamicSharedLimit_ = kDefaultDynamicSharedBytes;
};

class CudaModule : public Module {
public:
  CudaModule(const CudaDriver &cuda, CUmodule module)
      : cuda_(cuda), module_(module) {}
  ~CudaModule() override { cuda_.cuModuleUnload(module_); }

  Kernel &kernel(const std::string &name) override {
    auto found = kernels_.find(name);
    if (found != kernels_.end())
      return found->second;
    CUfunction function = nullptr;
    cuda_.check(cuda_.cuModuleGetFunction(&function, module_, name.c_str()),
                fmt::format("cuModuleGetFunction({})", name).c_str());
    return kernels_.emplace(name, CudaKernel(function, name)).first->second;
  }

private:
  const CudaDriver &cuda_;
  CUmodule module_;
  std::map<std::string, CudaKernel> kernels_;
};

class CudaDevice : public Device {
public:
  void *nativeStream() const override { return stream_; }

  explicit CudaDevice(int ordinal) {
    cuda_.check(cuda_.cuInit(0), "no usable CUDA driver: cuInit");
    int count = 0;
    cuda_.check(cuda_.cuDeviceGetCount(&count), "cuDeviceGetCount");
    if (ordinal < 0 || ordinal >= count)
      fail(TXL_UNAVAILABLE, "no CUDA device {} ({} found)", ordinal, count);
    cuda_.check(cuda_.cuDeviceGet(&device_, ordinal), "cuDeviceGet");
    cuda_.check(cuda_.cuDevicePrimaryCtxRetain(&context_, device_),
                "cuDevicePrimaryCtxRetain");
    cuda_.check(cuda_.cuCtxSetCurrent(context_), "cuCtxSetCurrent");
    cuda_.check(cuda_.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING),
                "cuStreamCreate");
    staging_ = std::make_unique<HostStaging>(
        [this](size_t bytes) {
          void *block = nullptr;
          cuda_.check(cuda_.cuMemAllocHost_v2(&block, bytes),
                      fmt::format("cuMemAllocHost({} bytes)", bytes).c_str());
          return block;
        },
        [this](void *block) { cuda_.cuMemFreeHost(block); });
  }

  ~CudaDevice() override {
    cuda_.cuStreamSynchronize(stream_);
    // Page-locked blocks and events go before the context.
    staging_.reset();
    if (cublas_)
      cublas_->cublasDestroy_v2(handle_);
    cuda_.cuStreamDestroy_v2(stream_);
    cuda_.cuDevicePrimaryCtxRelease_v2(device_);
  }

  std::string description() const override {
    char name[256] = {};
    cuda_.check(cuda_.cuDeviceGetName(name, sizeof(name), device_),
                "cuDeviceGetName");
    int major = 0, minor = 0;
    cuda_.check(
        cuda_.cuDeviceGetAttribute(
            &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device_),
        "cuDeviceGetAttribute");
    cuda_.check(
        cuda_.cuDeviceGetAttribute(
            &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device_),
        "cuDeviceGetAttribute");
    return fmt::format("{} (CUDA, sm_{}{}, {:.1f} GiB)", name, major, minor,
                       totalMemory() / double(1ull << 30));
  }

  int64_t computeUnits() const override {
    int units = 0;
    cuda_.check(cuda_.cuDeviceGetAttribute(
                    &units, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device_),
                "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)");
    return units;
  }

  size_t totalMemory() const override {
    size_t bytes = 0;
    cuda_.check(cuda_.cuDeviceTotalMem_v2(&bytes, device_), "cuDeviceTotalMem");
    return bytes;
  }

  std::optional<size_t> freeMemory() const override {
    size_t free = 0, total = 0;
    cuda_.check(cuda_.cuMemGetInfo_v2(&free, &total), "cuMemGetInfo");
    return free;
  }

  void *allocate(size_t bytes) override {
    CUdeviceptr buffer = 0;
    // A zero-byte allocation still gets a distinct handle.
    cuda_.check(
        cuda_.cuMemAllocAsync(&buffer, std::max<size_t>(bytes, 4), stream_),
        fmt::format("cuMemAllocAsync({} bytes)", bytes).c_str());
    return reinterpret_cast<void *>(buffer);
  }

  void free(void *buffer) override {
    cuda_.check(cuda_.cuMemFreeAsync(asDevicePointer(buffer), stream_),
                "cuMemFreeAsync");
  }

  void copyToDevice(void *buffer, size_t offsetBytes, const void *host,
                    size_t bytes) override {
    if (bytes == 0)
      return;
    // From a page-locked copy, so that the caller may reuse `host` at once
    // and the stream need not be waited for.
    void *block = staging_->stageUpload(host, bytes);
    cuda_.check(
        cuda_.cuMemcpyHtoDAsync_v2(asDevicePointer(buffer) + offsetBytes, block,
                                   bytes, stream_),
        "cuMemcpyHtoDAsync");
    CUevent event = nullptr;
    cuda_.check(cuda_.cuEventCreate(&event, CU_EVENT_DISABLE_TIMING),
                "cuEventCreate");
    auto fence = std::make_unique<EventFence>(cuda_, event);
    cuda_.check(cuda_.cuEventRecord(event, stream_), "cuEventRecord");
    staging_->inFlight(block, std::move(fence));
  }

  void copyToHost(void *host, const void *buffer, size_t offsetBytes,
                  size_t bytes) override {
    if (bytes == 0)
      return;
    cuda_.check(
        cuda_.cuMemcpyDtoHAsync_v2(host, asDevicePointer(buffer) + offsetBytes,
                                   bytes, stream_),
        "cuMemcpyDtoHAsync");
    synchronize();
  }

  void copyToHostAsync(void *host, const void *buffer, size_t offsetBytes,
                       size_t bytes) override {
    if (bytes == 0)
      return;
    // Into a page-locked block (a copy into pageable memory would wait for
    // the stream), delivered to `host` by the next synchronize().
    void *block = staging_->stageDownload(host, bytes);
    cuda_.check(
        cuda_.cuMemcpyDtoHAsync_v2(block, asDevicePointer(buffer) + offsetBytes,
                                   bytes, stream_),
        "cuMemcpyDtoHAsync");
  }

  void copyOnDevice(void *dst, size_t dstOffsetBytes, const void *src,
                    size_t srcOffsetBytes, size_t bytes) override {
    if (bytes == 0)
      return;
    cuda_.check(cuda_.cuMemcpyDtoDAsync_v2(
                    asDevicePointer(dst) + dstOffsetBytes,
                    asDevicePointer(src) + srcOffsetBytes, bytes, stream_),
                "cuMemcpyDtoDAsync");
  }

  void copyStridedOnDevice(void *buffer, size_t dstOffsetBytes,
                           size_t srcOffsetBytes, size_t bytes,
                           size_t pitchBytes, size_t count) override {
    if (bytes == 0 || count == 0)
      return;
    CUDA_MEMCPY2D copy = {};
    copy.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    copy.srcDevice = asDevicePointer(buffer) + srcOffsetBytes;
    copy.srcPitch = pitchBytes;
    copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    copy.dstDevice = asDevicePointer(buffer) + dstOffsetBytes;
    copy.dstPitch = pitchBytes;
    copy.WidthInBytes = bytes;
    copy.Height = count;
    cuda_.check(cuda_.cuMemcpy2DAsync_v2(&copy, stream_), "cuMemcpy2DAsync");
  }

  void fill32(void *buffer, size_t offsetBytes, uint32_t value,
              size_t count) override {
    if (count == 0)
      return;
    cuda_.check(cuda_.cuMemsetD32Async(asDevicePointer(buffer) + offsetBytes,
                                       value, count, stream_),
                "cuMemsetD32Async");
  }

  std::unique_ptr<Module> loadModule(std::string_view image) override {
    if (image.substr(0, kOpenCLImageMagic.size()) == kOpenCLImageMagic)
      fail(TXL_INVALID_ARGUMENT,
           "an OpenCL kernel image cannot load on CUDA (a module built for "
           "--target=opencl?)");
    CUmodule module = nullptr;
    cuda_.check(
        cuda_.cuModuleLoadDataEx(&module, image.data(), 0, nullptr, nullptr),
        "cuModuleLoadDataEx");
    return std::make_unique<CudaModule>(cuda_, module);
  }

  void launch(Kernel &kernel, const size_t grid[3], const size_t block[3],
              size_t sharedBytes, void **params, size_t) override {
    if (grid[0] * grid[1] * grid[2] == 0)
      return;
    auto &cudaKernel = static_cast<CudaKernel &>(kernel);
    if (sharedBytes > cudaKernel.dynamicSharedLimit_)
      allowDynamicShared(cudaKernel, sharedBytes);
    cuda_.check(cuda_.cuLaunchKernel(cudaKernel.function_, unsigned(grid[0]),
                                     unsigned(grid[1]), unsigned(grid[2]),
                                     unsigned(block[0]), unsigned(block[1]),
                                     unsigned(block[2]), unsigned(sharedBytes),
                                     stream_, params, nullptr),
                "cuLaunchKernel");
  }

  /// Opts `kernel` into `bytes` of dynamic shared memory (more than 48 KiB:
  /// txl-dynamic-shared-memory's kernels); fails naming the kernel when
  /// this GPU gives a workgroup less.
  void allowDynamicShared(CudaKernel &kernel, size_t bytes) {
    int optin = 0;
    cuda_.check(cuda_.cuDeviceGetAttribute(
                    &optin,
                    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                    device_),
                "cuDeviceGetAttribute");
    if (bytes > size_t(optin))
      fail(TXL_UNAVAILABLE,
           "kernel {} needs {} bytes of shared memory per workgroup; this "
           "GPU gives at most {}",
           kernel.name_, bytes, optin);
    cuda_.check(cuda_.cuFuncSetAttribute(
                    kernel.function_,
                    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    int(bytes)),
                fmt::format("cuFuncSetAttribute({}, "
                            "MAX_DYNAMIC_SHARED_SIZE_BYTES, {})",
                            kernel.name_, bytes)
                    .c_str());
    kernel.dynamicSharedLimit_ = bytes;
  }

  void gemm(const GemmDesc &desc) override {
    if (!cublas_) {
      auto cublas = std::make_unique<Cublas>();
      cublas->check(cublas->cublasCreate_v2(&handle_), "cublasCreate");
      // f32 is the exactness mode: plain f32 arithmetic, no TF32 tensor
      // cores (which CUBLAS_TF32_TENSOR_OP_MATH would allow).
      cublas->check(cublas->cublasSetMathMode(handle_, CUBLAS_DEFAULT_MATH),
                    "cublasSetMathMode");
      cublas->check(cublas->cublasSetStream_v2(handle_, stream_),
                    "cublasSetStream");
      cublas_ = std::move(cublas);
    }
    auto at = [](const GemmMatrix &matrix) {
      return reinterpret_cast<float *>(matrix.buffer) + matrix.offset;
    };
    if (desc.inputs != GemmDesc::Inputs::F32) {
      // f32 buffers, bf16 or f16 tensor-core products with f32
      // accumulation.
      cublas_->check(cublas_->cublasGemmStridedBatchedEx_64(
                         handle_, desc.transA ? CUBLAS_OP_T : CUBLAS_OP_N,
                         desc.transB ? CUBLAS_OP_T : CUBLAS_OP_N, desc.m,
                         desc.n, desc.k, &desc.alpha, at(desc.a), CUDA_R_32F,
                         desc.a.ld, desc.a.stride, at(desc.b), CUDA_R_32F,
                         desc.b.ld, desc.b.stride, &desc.beta, at(desc.c),
                         CUDA_R_32F, desc.c.ld, desc.c.stride, desc.batch,
                         desc.inputs == GemmDesc::Inputs::Bf16
                             ? CUBLAS_COMPUTE_32F_FAST_16BF
                             : CUBLAS_COMPUTE_32F_FAST_16F,
                         CUBLAS_GEMM_DEFAULT),
                     describe(desc).c_str());
      return;
    }
    cublas_->check(cublas_->cublasSgemmStridedBatched_64(
                       handle_, desc.transA ? CUBLAS_OP_T : CUBLAS_OP_N,
                       desc.transB ? CUBLAS_OP_T : CUBLAS_OP_N, desc.m, desc.n,
                       desc.k, &desc.alpha, at(desc.a), desc.a.ld,
                       desc.a.stride, at(desc.b), desc.b.ld, desc.b.stride,
                       &desc.beta, at(desc.c), desc.c.ld, desc.c.stride,
                       desc.batch),
                   describe(desc).c_str());
  }

  void synchronize() override {
    cuda_.check(cuda_.cuStreamSynchronize(stream_), "cuStreamSynchronize");
    staging_->complete();
  }

private:
  CudaDriver cuda_;
  /// Loaded by the first product, with its handle bound to `stream_`.
  std::unique_ptr<Cublas> cublas_;
  cublasHandle_t handle_ = nullptr;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;
  /// The copies' page-locked blocks (released before the context).
  std::unique_ptr<HostStaging> staging_;
};

} // namespace

std::unique_ptr<Device> openCudaDevice(int ordinal) {
  return std::make_unique<CudaDevice>(ordinal);
}

} // namespace txl::rt

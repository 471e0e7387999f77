//===- OpenCLDevice.cpp - The OpenCL backend of the device layer ----------===//
//
// One OpenCL 2.1+ device that takes SPIR-V (clCreateProgramWithIL), one
// in-order command queue, buffers as cl_mem handles. Kernel images are the
// ones txlc embeds for --target=opencl (txl/device.h): per kernel, its
// argument kinds, which OpenCL needs to set arguments and the generated
// host code does not pass, and a SPIR-V module of that kernel alone. Each
// kernel's program is built on the kernel's first use, so a run builds
// only the kernels it launches (an evaluation, none of the backward's),
// and what the driver builds is kept in the program cache (ProgramCache.h)
// per kernel, where every image and process that has the same kernel
// (the same SPIR-V) finds it. Matrix products go to CLBlast, except on a
// CPU device, whose buffers are host memory: there they run in the host's
// BLAS on the mapped buffers (OpenCLDevice::hostGemm).
//
//===----------------------------------------------------------------------===//

#include "txl/device.h"
#include "txl/rt/device/CLBlast.h"
#include "txl/rt/device/CpuBlas.h"
#include "txl/rt/device/Device.h"
#include "txl/rt/device/HostStaging.h"
#include "txl/rt/device/OpenCL.h"
#include "txl/rt/device/ProgramCache.h"
#include "txl/rt/support/Status.h"

#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string_view>
#include <vector>

namespace txl::rt {

namespace {

/// An enqueued command's event, asked about without waiting.
class EventFence final : public CopyFence {
public:
  EventFence(const OpenCL &cl, cl_event event) : cl_(cl), event_(event) {}
  ~EventFence() override { cl_.clReleaseEvent(event_); }
  bool done() override {
    cl_int status = CL_QUEUED;
    cl_.check(cl_.clGetEventInfo(event_, CL_EVENT_COMMAND_EXECUTION_STATUS,
                                 sizeof(status), &status, nullptr),
              "clGetEventInfo(CL_EVENT_COMMAND_EXECUTION_STATUS)");
    // A negative status is the command's error, which the next blocking
    // call reports; its block is no longer read either way.
    return status == CL_COMPLETE || status < 0;
  }

private:
  const OpenCL &cl_;
  cl_event event_;
};

/// One argument of a kernel, from the image's table.
struct ArgSpec {
  txl_kernel_arg_kind_t kind;
  uint32_t bytes; ///< the value's size; for workgroup memory, its size
};

/// One kernel of an image: its arguments and its own SPIR-V module.
struct KernelImage {
  std::vector<ArgSpec> args;
  std::string spirv;
};

/// Reads the little-endian fields of an OpenCL kernel image.
class ImageReader {
public:
  explicit ImageReader(std::string_view image) : rest_(image) {}
  std::string_view bytes(size_t n) {
    if (rest_.size() < n)
      fail(TXL_INVALID_ARGUMENT,
           "OpenCL kernel image: truncated ({} bytes missing)",
           n - rest_.size());
    std::string_view out = rest_.substr(0, n);
    rest_.remove_prefix(n);
    return out;
  }
  template <typename T> T scalar() {
    T value;
    std::memcpy(&value, bytes(sizeof(T)).data(), sizeof(T));
    return value;
  }
  std::string_view rest() const { return rest_; }

private:
  std::string_view rest_;
};

std::string deviceString(const OpenCL &cl, cl_device_id device, cl_uint what) {
  size_t size = 0;
  cl.check(cl.clGetDeviceInfo(device, what, 0, nullptr, &size),
           "clGetDeviceInfo");
  std::string value(size, '\0');
  cl.check(cl.clGetDeviceInfo(device, what, size, value.data(), nullptr),
           "clGetDeviceInfo");
  while (!value.empty() && value.back() == '\0')
    value.pop_back();
  return value;
}

class OpenCLKernel : public Kernel {
public:
  OpenCLKernel(const OpenCL &cl, cl_kernel kernel, std::vector<ArgSpec> args)
      : cl_(cl), kernel_(kernel), args_(std::move(args)) {}
  ~OpenCLKernel() override { cl_.clReleaseKernel(kernel_); }

  const OpenCL &cl_;
  cl_kernel kernel_;
  std::vector<ArgSpec> args_;
};

class OpenCLDevice;

/// The kernels of one image, each built into a program of its own on its
/// first kernel() call.
class OpenCLModule : public Module {
public:
  OpenCLModule(const OpenCL &cl, OpenCLDevice &device,
               std::map<std::string, KernelImage> images, size_t localMemBytes)
      : cl_(cl), device_(device), images_(std::move(images)),
        localMemBytes_(localMemBytes),
        origin_(fmt::format("{} kernels, each built on its first launch",
                            images_.size())) {}
  ~OpenCLModule() override {
    kernels_.clear();
    for (auto &[name, program] : programs_)
      cl_.clReleaseProgram(program);
  }

  /// Until the first kernel(): how many kernels the image holds; after it,
  /// how the latest kernel's program was obtained (built from SPIR-V, from
  /// the program cache).
  std::string origin() const override { return origin_; }

  Kernel &kernel(const std::string &name) override;

private:
  const OpenCL &cl_;
  OpenCLDevice &device_;
  std::map<std::string, KernelImage> images_;
  size_t localMemBytes_;
  std::string origin_;
  std::map<std::string, cl_program> programs_;
  std::map<std::string, std::unique_ptr<OpenCLKernel>> kernels_;
};

class OpenCLDevice : public Device {
  friend class OpenCLModule;

public:
  explicit OpenCLDevice(int ordinal) {
    // The ordinal-th device, over all platforms, that takes SPIR-V.
    int seen = 0;
    std::string skipped;
    for (cl_platform_id platform : cl_.platforms()) {
      cl_uint count = 0;
      if (cl_.clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, nullptr,
                             &count) != 0 ||
          count == 0)
        continue;
      std::vector<cl_device_id> devices(count);
      cl_.check(cl_.clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, count,
                                   devices.data(), nullptr),
                "clGetDeviceIDs");
      for (cl_device_id device : devices) {
        size_t ilSize = 0;
        cl_.clGetDeviceInfo(device, CL_DEVICE_IL_VERSION, 0, nullptr, &ilSize);
        std::string il = ilSize > 1
                             ? deviceString(cl_, device, CL_DEVICE_IL_VERSION)
                             : std::string();
        if (il.find("SPIR-V") == std::string::npos) {
          skipped +=
              fmt::format(" {};", deviceString(cl_, device, CL_DEVICE_NAME));
          continue;
        }
        if (seen++ != ordinal)
          continue;
        platform_ = platform;
        device_ = device;
      }
      if (device_)
        break;
    }
    if (!device_)
      fail(TXL_UNAVAILABLE,
           "no OpenCL device with SPIR-V (device {} requested, {} found{}{})",
           ordinal, seen, skipped.empty() ? "" : "; without SPIR-V:", skipped);
    cl_int status = 0;
    context_ =
        cl_.clCreateContext(nullptr, 1, &device_, nullptr, nullptr, &status);
    cl_.check(status, "clCreateContext");
    queue_ = cl_.clCreateCommandQueueWithProperties(context_, device_, nullptr,
                                                    &status);
    cl_.check(status, "clCreateCommandQueueWithProperties");
    if (const char *options = std::getenv("TXL_OPENCL_BUILD_OPTIONS"))
      buildOptions_ = options;
    cl_uint alignBits = 0;
    cl_.check(cl_.clGetDeviceInfo(device_, CL_DEVICE_MEM_BASE_ADDR_ALIGN,
                                  sizeof(alignBits), &alignBits, nullptr),
              "clGetDeviceInfo(CL_DEVICE_MEM_BASE_ADDR_ALIGN)");
    viewAlignment_ = std::max<size_t>(alignBits / 8, 1);
    cl_ulong type = 0;
    cl_.check(cl_.clGetDeviceInfo(device_, CL_DEVICE_TYPE, sizeof(type), &type,
                                  nullptr),
              "clGetDeviceInfo(CL_DEVICE_TYPE)");
    const char *choice = std::getenv("TXL_OPENCL_GEMM");
    std::string_view gemm = choice ? choice : "";
    if (gemm.empty())
      hostProducts_ = (type & CL_DEVICE_TYPE_CPU) != 0;
    else if (gemm == "host" || gemm == "clblast")
      hostProducts_ = gemm == "host";
    else
      fail(TXL_INVALID_ARGUMENT,
           "TXL_OPENCL_GEMM={}: expected host (the host's BLAS on mapped "
           "buffers) or clblast",
           gemm);
  }

  ~OpenCLDevice() override {
    cl_.clFinish(queue_);
    staging_.complete(); // releases the uploads' events
    cl_.clReleaseCommandQueue(queue_);
    cl_.clReleaseContext(context_);
  }

  /// "NAME (PLATFORM, VERSION, N GiB); products: WHERE", WHERE naming
  /// CLBlast or the host's BLAS (gemm()).
  std::string description() const override {
    return fmt::format("{} ({}, {}, {:.1f} GiB); products: {}",
                       deviceString(cl_, device_, CL_DEVICE_NAME),
                       platformString(CL_PLATFORM_NAME),
                       deviceString(cl_, device_, CL_DEVICE_VERSION),
                       totalMemory() / double(1ull << 30),
                       hostProducts_
                           ? "the host's OpenBLAS on the mapped buffers"
                           : "CLBlast");
  }

  int64_t computeUnits() const override {
    cl_uint units = 0;
    cl_.check(cl_.clGetDeviceInfo(device_, CL_DEVICE_MAX_COMPUTE_UNITS,
                                  sizeof(units), &units, nullptr),
              "clGetDeviceInfo(CL_DEVICE_MAX_COMPUTE_UNITS)");
    return units;
  }

  size_t totalMemory() const override {
    cl_ulong bytes = 0;
    cl_.check(cl_.clGetDeviceInfo(device_, CL_DEVICE_GLOBAL_MEM_SIZE,
                                  sizeof(bytes), &bytes, nullptr),
              "clGetDeviceInfo(CL_DEVICE_GLOBAL_MEM_SIZE)");
    return bytes;
  }

  std::optional<size_t> freeMemory() const override {
    // OpenCL has no free-memory query.
    return std::nullopt;
  }

  void *allocate(size_t bytes) override {
    cl_int status = 0;
    // OpenCL has no empty buffers; an empty memref (memory of length 0)
    // still gets a handle.
    cl_mem buffer =
        cl_.clCreateBuffer(context_, CL_MEM_READ_WRITE,
                           std::max<size_t>(bytes, 4), nullptr, &status);
    cl_.check(status, fmt::format("clCreateBuffer({} bytes)", bytes).c_str());
    return buffer;
  }

  void *view(void *buffer, size_t offsetBytes, size_t bytes) override {
    if (offsetBytes % viewAlignment_)
      fail(TXL_INVALID_ARGUMENT,
           "a view at byte {} of an OpenCL buffer: sub-buffers start at "
           "multiples of {} bytes (CL_DEVICE_MEM_BASE_ADDR_ALIGN)",
           offsetBytes, viewAlignment_);
    // OpenCL has no empty sub-buffers; an empty window still gets one.
    const cl_buffer_region region{offsetBytes, std::max<size_t>(bytes, 4)};
    cl_int status = 0;
    cl_mem view =
        cl_.clCreateSubBuffer(static_cast<cl_mem>(buffer), CL_MEM_READ_WRITE,
                              CL_BUFFER_CREATE_TYPE_REGION, &region, &status);
    cl_.check(status, fmt::format("clCreateSubBuffer({} bytes at {})", bytes,
                                  offsetBytes)
                          .c_str());
    return view;
  }

  void releaseView(void *view) override {
    // Released once the commands that use it are done (OpenCL defers it).
    cl_.check(cl_.clReleaseMemObject(static_cast<cl_mem>(view)),
              "clReleaseMemObject");
  }

  size_t viewAlignment() const override { return viewAlignment_; }

  void free(void *buffer) override {
    // Released once the commands that use it are done (OpenCL defers it).
    cl_.check(cl_.clReleaseMemObject(static_cast<cl_mem>(buffer)),
              "clReleaseMemObject");
  }

  void copyToDevice(void *buffer, size_t offsetBytes, const void *host,
                    size_t bytes) override {
    if (bytes == 0)
      return;
    // Not blocking (a blocking write waits for the whole in-order queue):
    // the bytes are staged, so that the caller may reuse `host` at once.
    void *block = staging_.stageUpload(host, bytes);
    cl_event event = nullptr;
    cl_.check(cl_.clEnqueueWriteBuffer(queue_, static_cast<cl_mem>(buffer),
                                       CL_FALSE, offsetBytes, bytes, block, 0,
                                       nullptr, &event),
              "clEnqueueWriteBuffer");
    staging_.inFlight(block, std::make_unique<EventFence>(cl_, event));
  }

  void copyToHost(void *host, const void *buffer, size_t offsetBytes,
                  size_t bytes) override {
    if (bytes == 0)
      return;
    cl_.check(cl_.clEnqueueReadBuffer(
                  queue_, static_cast<cl_mem>(const_cast<void *>(buffer)),
                  CL_TRUE, offsetBytes, bytes, host, 0, nullptr, nullptr),
              "clEnqueueReadBuffer");
    // The read waited for everything enqueued before it.
    staging_.complete();
  }

  void copyToHostAsync(void *host, const void *buffer, size_t offsetBytes,
                       size_t bytes) override {
    if (bytes == 0)
      return;
    // Straight into `host`, which the caller keeps until synchronize().
    cl_.check(cl_.clEnqueueReadBuffer(
                  queue_, static_cast<cl_mem>(const_cast<void *>(buffer)),
                  CL_FALSE, offsetBytes, bytes, host, 0, nullptr, nullptr),
              "clEnqueueReadBuffer");
  }

  void copyOnDevice(void *dst, size_t dstOffsetBytes, const void *src,
                    size_t srcOffsetBytes, size_t bytes) override {
    if (bytes == 0)
      return;
    cl_.check(cl_.clEnqueueCopyBuffer(
                  queue_, static_cast<cl_mem>(const_cast<void *>(src)),
                  static_cast<cl_mem>(dst), srcOffsetBytes, dstOffsetBytes,
                  bytes, 0, nullptr, nullptr),
              "clEnqueueCopyBuffer");
  }

  void copyStridedOnDevice(void *buffer, size_t dstOffsetBytes,
                           size_t srcOffsetBytes, size_t bytes,
                           size_t pitchBytes, size_t count) override {
    if (bytes == 0 || count == 0)
      return;
    // Rows of `bytes` at `pitchBytes` (origins in bytes: x + y · row pitch
    // + z · slice pitch, here x alone); the same buffer is allowed where
    // the rectangles share no byte (the specification's overlap test).
    const size_t src[3] = {srcOffsetBytes, 0, 0};
    const size_t dst[3] = {dstOffsetBytes, 0, 0};
    const size_t region[3] = {bytes, count, 1};
    auto *mem = static_cast<cl_mem>(buffer);
    cl_.check(cl_.clEnqueueCopyBufferRect(queue_, mem, mem, src, dst, region,
                                          pitchBytes, 0, pitchBytes, 0, 0,
                                          nullptr, nullptr),
              "clEnqueueCopyBufferRect");
  }

  void fill32(void *buffer, size_t offsetBytes, uint32_t value,
              size_t count) override {
    if (count == 0)
      return;
    cl_.check(cl_.clEnqueueFillBuffer(
                  queue_, static_cast<cl_mem>(buffer), &value, sizeof(value),
                  offsetBytes, count * sizeof(value), 0, nullptr, nullptr),
              "clEnqueueFillBuffer");
  }

  std::unique_ptr<Module> loadModule(std::string_view image) override {
    ImageReader reader(image);
    if (reader.bytes(kOpenCLImageMagic.size()) != kOpenCLImageMagic)
      fail(TXL_INVALID_ARGUMENT,
           "not an OpenCL kernel image (a module built for --target=cuda?)");
    if (uint32_t version = reader.scalar<uint32_t>();
        version != TXL_OPENCL_IMAGE_VERSION)
      fail(TXL_INVALID_ARGUMENT, "OpenCL kernel image version {} (expected {})",
           version, TXL_OPENCL_IMAGE_VERSION);
    std::map<std::string, KernelImage> kernels;
    for (uint32_t k = 0, n = reader.scalar<uint32_t>(); k < n; ++k) {
      std::string name(reader.bytes(reader.scalar<uint32_t>()));
      KernelImage &kernel = kernels[name];
      for (uint32_t a = 0, m = reader.scalar<uint32_t>(); a < m; ++a) {
        auto kind =
            static_cast<txl_kernel_arg_kind_t>(reader.scalar<uint8_t>());
        if (kind > TXL_KERNEL_ARG_LOCAL)
          fail(TXL_INVALID_ARGUMENT,
               "OpenCL kernel image: kernel '{}' argument {} has kind {}", name,
               a, int(kind));
        kernel.args.push_back({kind, reader.scalar<uint32_t>()});
      }
      kernel.spirv = std::string(reader.bytes(reader.scalar<uint64_t>()));
      if (kernel.spirv.empty())
        fail(TXL_INVALID_ARGUMENT,
             "OpenCL kernel image: kernel '{}' has no SPIR-V", name);
    }
    if (!reader.rest().empty())
      fail(TXL_INVALID_ARGUMENT,
           "OpenCL kernel image: {} bytes after the last kernel",
           reader.rest().size());
    cl_ulong localMem = 0;
    cl_.check(cl_.clGetDeviceInfo(device_, CL_DEVICE_LOCAL_MEM_SIZE,
                                  sizeof(localMem), &localMem, nullptr),
              "clGetDeviceInfo(CL_DEVICE_LOCAL_MEM_SIZE)");
    return std::make_unique<OpenCLModule>(cl_, *this, std::move(kernels),
                                          size_t(localMem));
  }

  void launch(Kernel &base, const size_t grid[3], const size_t block[3],
              size_t sharedBytes, void **params, size_t paramCount) override {
    auto &kernel = static_cast<OpenCLKernel &>(base);
    if (sharedBytes != 0)
      fail(TXL_INVALID_ARGUMENT,
           "OpenCL launch with {} bytes of dynamic workgroup memory (the "
           "kernels declare theirs)",
           sharedBytes);
    size_t expected = 0;
    for (const ArgSpec &arg : kernel.args_)
      expected += arg.kind != TXL_KERNEL_ARG_LOCAL;
    if (expected != paramCount)
      fail(TXL_INVALID_ARGUMENT,
           "OpenCL launch with {} arguments, the kernel takes {}", paramCount,
           expected);
    size_t param = 0;
    for (size_t i = 0; i < kernel.args_.size(); ++i) {
      const ArgSpec &arg = kernel.args_[i];
      cl_int status = 0;
      if (arg.kind == TXL_KERNEL_ARG_LOCAL) {
        status = cl_.clSetKernelArg(kernel.kernel_, i, arg.bytes, nullptr);
      } else {
        const void *value = params[param++];
        status =
            arg.kind == TXL_KERNEL_ARG_BUFFER
                ? cl_.clSetKernelArg(kernel.kernel_, i, sizeof(cl_mem), value)
                : cl_.clSetKernelArg(kernel.kernel_, i, arg.bytes, value);
      }
      cl_.check(status, fmt::format("clSetKernelArg({})", i).c_str());
    }
    size_t global[3], local[3];
    for (int d = 0; d < 3; ++d) {
      global[d] = grid[d] * block[d];
      local[d] = block[d];
    }
    if (global[0] * global[1] * global[2] == 0)
      return;
    cl_.check(cl_.clEnqueueNDRangeKernel(queue_, kernel.kernel_, 3, nullptr,
                                         global, local, 0, nullptr, nullptr),
              "clEnqueueNDRangeKernel");
  }

  void synchronize() override {
    cl_.check(cl_.clFinish(queue_), "clFinish");
    staging_.complete();
  }

  /// CLBlast's strided-batched product, or on a CPU device (or with
  /// TXL_OPENCL_GEMM=host) hostGemm(); TXL_OPENCL_GEMM=clblast keeps
  /// CLBlast on a CPU device too.
  void gemm(const GemmDesc &desc) override {
    if (hostProducts_) {
      hostGemm(desc);
      return;
    }
    if (!clblast_)
      clblast_ = std::make_unique<CLBlast>();
    auto buffer = [](const GemmMatrix &matrix) {
      return static_cast<cl_mem>(matrix.buffer);
    };
    // CLBlast computes beta * C even for beta = 0, so that NaN or Inf in C
    // (a fresh buffer holds whatever was there) would survive; BLAS
    // semantics, which cuBLAS keeps, are that C is not read then.
    if (desc.beta == 0.0f)
      zeroMatrices(desc);
    clblast_->check(
        clblast_->CLBlastSgemmStridedBatched(
            CLBlastLayoutColMajor,
            desc.transA ? CLBlastTransposeYes : CLBlastTransposeNo,
            desc.transB ? CLBlastTransposeYes : CLBlastTransposeNo,
            size_t(desc.m), size_t(desc.n), size_t(desc.k), desc.alpha,
            buffer(desc.a), size_t(desc.a.offset), size_t(desc.a.ld),
            size_t(desc.a.stride), buffer(desc.b), size_t(desc.b.offset),
            size_t(desc.b.ld), size_t(desc.b.stride), desc.beta, buffer(desc.c),
            size_t(desc.c.offset), size_t(desc.c.ld), size_t(desc.c.stride),
            size_t(desc.batch), &queue_, nullptr),
        describe(desc).c_str());
  }

private:
  /// `desc` in the host's OpenBLAS (cblas_sgemm per matrix of the batch,
  /// column-major as given) on the operands' buffers mapped for the host:
  /// each distinct buffer once, over the elements the batch reads or
  /// writes, blocking (the map waits for the commands before it in the
  /// queue), and unmapped after (later commands wait for the unmap). On a
  /// CPU device the map is the buffer's own memory, not a copy: Intel's
  /// OpenCL CPU runtime ran ptb_small's products about 18x slower in
  /// CLBlast than in OpenBLAS on the same cores (docs/design.md). OpenBLAS does not read C
  /// where beta = 0. Throws Error(TXL_INVALID_ARGUMENT) for a dimension
  /// past CBLAS's int.
  void hostGemm(const GemmDesc &desc) {
    struct Mapped {
      cl_mem buffer;
      int64_t begin, end; ///< elements [begin, end) of the buffer
      bool write;
      float *host = nullptr;
    };
    std::vector<Mapped> mapped;
    // Elements of `matrix` (rows x cols stored column-major) the batch uses.
    auto use = [&](const GemmMatrix &matrix, int64_t rows, int64_t cols,
                   bool write) -> size_t {
      int64_t end = matrix.offset + (desc.batch - 1) * matrix.stride +
                    (cols - 1) * matrix.ld + rows;
      auto *buffer = static_cast<cl_mem>(matrix.buffer);
      for (size_t i = 0; i < mapped.size(); ++i)
        if (mapped[i].buffer == buffer) {
          mapped[i].begin = std::min(mapped[i].begin, matrix.offset);
          mapped[i].end = std::max(mapped[i].end, end);
          mapped[i].write |= write;
          return i;
        }
      mapped.push_back({buffer, matrix.offset, end, write});
      return mapped.size() - 1;
    };
    size_t a = use(desc.a, desc.transA ? desc.k : desc.m,
                   desc.transA ? desc.m : desc.k, false);
    size_t b = use(desc.b, desc.transB ? desc.n : desc.k,
                   desc.transB ? desc.k : desc.n, false);
    size_t c = use(desc.c, desc.m, desc.n, true);
    for (int64_t v : {desc.m, desc.n, desc.k, desc.a.ld, desc.b.ld, desc.c.ld})
      if (v > INT_MAX)
        fail(
            TXL_INVALID_ARGUMENT,
            "{}: a dimension past the host BLAS's int (TXL_OPENCL_GEMM=clblast "
            "takes it)",
            describe(desc));
    for (Mapped &m : mapped) {
      cl_int status = 0;
      void *host = cl_.clEnqueueMapBuffer(
          queue_, m.buffer, CL_TRUE,
          m.write ? CL_MAP_READ | CL_MAP_WRITE : CL_MAP_READ,
          size_t(m.begin) * sizeof(float),
          size_t(m.end - m.begin) * sizeof(float), 0, nullptr, nullptr,
          &status);
      cl_.check(status, "clEnqueueMapBuffer");
      m.host = static_cast<float *>(host) - m.begin;
    }
    // OpenBLAS on the calling thread alone: its worker threads spin for a
    // while after each product and took the cores from the OpenCL
    // runtime's own (train_tiny's 20 updates: 7.9 s with 2 OpenBLAS
    // threads, 1.1 s with 1, 3.8 s with CLBlast). In a process with an
    // OpenCL CPU device OpenBLAS serves these products only.
    if (openblas_get_num_threads() != 1)
      openblas_set_num_threads(1);
    for (int64_t i = 0; i < desc.batch; ++i)
      cblas_sgemm(
          kCblasColMajor, desc.transA ? kCblasTrans : kCblasNoTrans,
          desc.transB ? kCblasTrans : kCblasNoTrans, int(desc.m), int(desc.n),
          int(desc.k), desc.alpha,
          mapped[a].host + desc.a.offset + i * desc.a.stride, int(desc.a.ld),
          mapped[b].host + desc.b.offset + i * desc.b.stride, int(desc.b.ld),
          desc.beta, mapped[c].host + desc.c.offset + i * desc.c.stride,
          int(desc.c.ld));
    // The staged uploads the maps waited for are done.
    staging_.complete();
    for (Mapped &m : mapped)
      cl_.check(cl_.clEnqueueUnmapMemObject(queue_, m.buffer, m.host + m.begin,
                                            0, nullptr, nullptr),
                "clEnqueueUnmapMemObject");
  }

  std::string platformString(cl_uint what) const {
    size_t size = 0;
    cl_.check(cl_.clGetPlatformInfo(platform_, what, 0, nullptr, &size),
              "clGetPlatformInfo");
    std::string value(size, '\0');
    cl_.check(
        cl_.clGetPlatformInfo(platform_, what, size, value.data(), nullptr),
        "clGetPlatformInfo");
    while (!value.empty() && value.back() == '\0')
      value.pop_back();
    return value;
  }

  /// What, beside the SPIR-V, decides what clBuildProgram makes: the
  /// program cache's device key. Intel's CPU runtime also reads
  /// CL_CONFIG_CPU_O0_VECTORIZATION: without it a -cl-opt-disable build
  /// runs a subgroup as one work-item (the kernels' shuffles then read
  /// garbage), so a build made without it must not serve one made with it.
  std::string cacheKey() const {
    const char *o0Vectorization = std::getenv("CL_CONFIG_CPU_O0_VECTORIZATION");
    return fmt::format(
        "platform {} | {}\ndevice {} | {} | driver {}\noptions {}\n"
        "CL_CONFIG_CPU_O0_VECTORIZATION {}\n",
        platformString(CL_PLATFORM_NAME), platformString(CL_PLATFORM_VERSION),
        deviceString(cl_, device_, CL_DEVICE_NAME),
        deviceString(cl_, device_, CL_DEVICE_VERSION),
        deviceString(cl_, device_, CL_DRIVER_VERSION), buildOptions_,
        o0Vectorization ? o0Vectorization : "(unset)");
  }

  /// The program of `spirv`: the built program from the program cache
  /// (ProgramCache::fromEnvironment) when it holds one the driver takes
  /// back, else built from the SPIR-V and then stored. `origin` says which.
  /// Errors: the build's, with the driver's build log.
  cl_program buildProgram(std::string_view spirv, std::string &origin) {
    std::optional<ProgramCache> cache = ProgramCache::fromEnvironment();
    std::string key = cache ? cacheKey() : std::string();
    if (cache) {
      if (std::optional<std::string> binary = cache->lookup(key, spirv)) {
        if (cl_program program = programFromBinary(*binary)) {
          origin = "from the program cache " + cache->path(key, spirv);
          return program;
        }
      }
    }
    cl_int status = 0;
    cl_program program = cl_.clCreateProgramWithIL(context_, spirv.data(),
                                                   spirv.size(), &status);
    cl_.check(status, "clCreateProgramWithIL");
    cl_int built = cl_.clBuildProgram(program, 1, &device_,
                                      buildOptions_.c_str(), nullptr, nullptr);
    if (built != 0) {
      size_t size = 0;
      cl_.clGetProgramBuildInfo(program, device_, CL_PROGRAM_BUILD_LOG, 0,
                                nullptr, &size);
      std::string log(size, '\0');
      cl_.clGetProgramBuildInfo(program, device_, CL_PROGRAM_BUILD_LOG, size,
                                log.data(), nullptr);
      cl_.clReleaseProgram(program);
      fail(TXL_UNAVAILABLE, "clBuildProgram{}: {}: {}",
           buildOptions_.empty()
               ? std::string()
               : " (TXL_OPENCL_BUILD_OPTIONS=" + buildOptions_ + ")",
           OpenCL::errorName(built), log.c_str());
    }
    origin = "built from SPIR-V";
    if (cache) {
      std::string binary = programBinary(program);
      if (!binary.empty() && cache->store(key, spirv, binary))
        origin += ", cached in " + cache->path(key, spirv);
      else
        origin += ", not cached (cannot write " + cache->directory() + ")";
    }
    return program;
  }

  /// A program from a binary clGetProgramInfo gave, built; null when the
  /// driver rejects it (another driver version, a damaged entry).
  cl_program programFromBinary(const std::string &binary) {
    size_t size = binary.size();
    const auto *bytes = reinterpret_cast<const unsigned char *>(binary.data());
    cl_int binaryStatus = 0, status = 0;
    cl_program program = cl_.clCreateProgramWithBinary(
        context_, 1, &device_, &size, &bytes, &binaryStatus, &status);
    if (status != 0 || binaryStatus != 0 || !program) {
      if (program)
        cl_.clReleaseProgram(program);
      return nullptr;
    }
    if (cl_.clBuildProgram(program, 1, &device_, buildOptions_.c_str(), nullptr,
                           nullptr) != 0) {
      cl_.clReleaseProgram(program);
      return nullptr;
    }
    return program;
  }

  /// The device binary of a built program (CL_PROGRAM_BINARIES), or empty
  /// when the driver gives none.
  std::string programBinary(cl_program program) {
    size_t size = 0;
    if (cl_.clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof size,
                             &size, nullptr) != 0 ||
        size == 0)
      return {};
    std::string binary(size, '\0');
    unsigned char *bytes = reinterpret_cast<unsigned char *>(binary.data());
    if (cl_.clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof bytes, &bytes,
                             nullptr) != 0)
      return {};
    return binary;
  }

  /// Zeroes C_b for every b of `desc` (column-major, m x n, columns ld
  /// apart): one fill when the batch is one contiguous block.
  void zeroMatrices(const GemmDesc &desc) {
    const GemmMatrix &c = desc.c;
    auto at = [&](int64_t element) { return size_t(element) * sizeof(float); };
    if (c.ld == desc.m && (desc.batch == 1 || c.stride == desc.m * desc.n)) {
      fill32(c.buffer, at(c.offset), 0, size_t(desc.m * desc.n * desc.batch));
      return;
    }
    for (int64_t b = 0; b < desc.batch; ++b)
      for (int64_t j = 0; j < desc.n; ++j)
        fill32(c.buffer, at(c.offset + b * c.stride + j * c.ld), 0,
               size_t(desc.m));
  }

  OpenCL cl_;
  /// Loaded by the first product.
  std::unique_ptr<CLBlast> clblast_;
  cl_platform_id platform_ = nullptr;
  cl_device_id device_ = nullptr;
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
  /// clBuildProgram's options: $TXL_OPENCL_BUILD_OPTIONS, else none. Part
  /// of the program cache's key, so builds with other options are kept
  /// apart. The test suite's kernel harnesses build with "-cl-opt-disable"
  /// (test/Integration/gpu/txl_device.py).
  std::string buildOptions_;
  /// Products in the host's BLAS (hostGemm) rather than CLBlast: a CPU
  /// device, unless TXL_OPENCL_GEMM says otherwise.
  bool hostProducts_ = false;
  /// CL_DEVICE_MEM_BASE_ADDR_ALIGN in bytes: where sub-buffers may start.
  size_t viewAlignment_ = 1;
  /// The uploads' bytes while they are in flight.
  HostStaging staging_{[](size_t bytes) { return std::malloc(bytes); },
                       [](void *block) { std::free(block); }};
};

Kernel &OpenCLModule::kernel(const std::string &name) {
  auto found = kernels_.find(name);
  if (found != kernels_.end())
    return *found->second;
  auto image = images_.find(name);
  if (image == images_.end())
    fail(TXL_UNAVAILABLE, "OpenCL kernel image has no kernel '{}'", name);
  // The workgroup tiles (__local arguments), checked here so that a device
  // with less local memory gets a message, not CL_OUT_OF_RESOURCES at the
  // launch.
  size_t localBytes = 0;
  for (const ArgSpec &arg : image->second.args)
    if (arg.kind == TXL_KERNEL_ARG_LOCAL)
      localBytes += arg.bytes;
  if (localBytes > localMemBytes_)
    fail(TXL_UNAVAILABLE,
         "kernel {} needs {} bytes of local memory per workgroup; this "
         "OpenCL device gives at most {} (CL_DEVICE_LOCAL_MEM_SIZE)",
         name, localBytes, localMemBytes_);
  cl_program program = device_.buildProgram(image->second.spirv, origin_);
  programs_.emplace(name, program);
  cl_int status = 0;
  cl_kernel kernel = cl_.clCreateKernel(program, name.c_str(), &status);
  cl_.check(status, fmt::format("clCreateKernel({})", name).c_str());
  auto created =
      std::make_unique<OpenCLKernel>(cl_, kernel, image->second.args);
  Kernel &ref = *created;
  kernels_.emplace(name, std::move(created));
  return ref;
}

} // namespace

std::unique_ptr<Device> openOpenCLDevice(int ordinal) {
  // On its own thread (see bindToThread), which, like the runtime's
  // workers, is made with room for the largest kernel frames.
  reserveKernelThreadStacks();
  return bindToThread(
      [ordinal] { return std::make_unique<OpenCLDevice>(ordinal); });
}

} // namespace txl::rt

//===- HostDevice.cpp - The CPU as a device -------------------------------===//
//
// openHostDevice (Device.h): the CPU target's device. Its memory is the
// host's (hostMemory): a buffer is a 64-byte aligned host allocation (2 MiB
// aligned and advised as transparent huge pages from 2 MiB on) whose handle
// is its address, so the compiled host functions and the session
// read and write it in place and a copy is a memcpy. Its queue is the
// calling thread: every operation is done when it returns. Products run in
// the process's BLAS (OpenBLAS's cblas_sgemm; bf16 operands through
// txl_rt_sgemm_bf16, Bf16Gemm.h). There are no kernel modules: the CPU
// target's code is linked into the executable, not loaded.
//
//===----------------------------------------------------------------------===//

#include "txl/rt/device/Bf16Gemm.h"
#include "txl/rt/device/CpuBlas.h"
#include "txl/rt/device/Device.h"
#include "txl/rt/support/Status.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>

namespace txl::rt {

namespace {

/// Host buffers are aligned for any vector load (AVX-512: 64 bytes).
constexpr size_t kAlignment = 64;
/// Buffers of at least this size are aligned to it and asked for as
/// transparent huge pages: the key/value cache is 787.5 MiB at the enwik8
/// paper setting, and touching it first in 4 KiB page faults took about a
/// tenth of a 30-segment eval (Intel Xeon, session 50).
constexpr size_t kHugePage = size_t(2) << 20;

/// Bytes of physical memory `name` (_SC_PHYS_PAGES, _SC_AVPHYS_PAGES) says.
size_t pagesInBytes(int name) {
  long pages = sysconf(name), pageSize = sysconf(_SC_PAGESIZE);
  return pages > 0 && pageSize > 0 ? size_t(pages) * size_t(pageSize) : 0;
}

class HostDevice final : public Device {
public:
  std::string description() const override {
    return fmt::format("host CPU ({}, {} hardware threads)", detectCpu().brand,
                       computeUnits());
  }
  size_t totalMemory() const override { return pagesInBytes(_SC_PHYS_PAGES); }
  int64_t computeUnits() const override {
    return std::max<int64_t>(std::thread::hardware_concurrency(), 1);
  }
  std::optional<size_t> freeMemory() const override {
    return pagesInBytes(_SC_AVPHYS_PAGES);
  }
  bool hostMemory() const override { return true; }

  void *allocate(size_t bytes) override {
    // Rounded up to the alignment (aligned_alloc's rule), and never 0, so
    // that an empty array still has a distinct non-null address.
    const size_t alignment = bytes >= kHugePage ? kHugePage : kAlignment;
    size_t rounded =
        (std::max<size_t>(bytes, 1) + alignment - 1) / alignment * alignment;
    void *buffer = std::aligned_alloc(alignment, rounded);
    if (!buffer)
      fail(TXL_UNAVAILABLE, "host device: out of memory allocating {} bytes",
           bytes);
    if (alignment == kHugePage)
      madvise(buffer, rounded, MADV_HUGEPAGE);
    return buffer;
  }
  void free(void *buffer) override { std::free(buffer); }
  void copyToDevice(void *buffer, size_t offsetBytes, const void *host,
                    size_t bytes) override {
    if (bytes)
      std::memcpy(static_cast<char *>(buffer) + offsetBytes, host, bytes);
  }
  void copyToHost(void *host, const void *buffer, size_t offsetBytes,
                  size_t bytes) override {
    if (bytes)
      std::memcpy(host, static_cast<const char *>(buffer) + offsetBytes, bytes);
  }
  void copyOnDevice(void *dst, size_t dstOffsetBytes, const void *src,
                    size_t srcOffsetBytes, size_t bytes) override {
    if (bytes)
      std::memmove(static_cast<char *>(dst) + dstOffsetBytes,
                   static_cast<const char *>(src) + srcOffsetBytes, bytes);
  }
  void fill32(void *buffer, size_t offsetBytes, uint32_t value,
              size_t count) override {
    char *at = static_cast<char *>(buffer) + offsetBytes;
    for (size_t i = 0; i < count; ++i)
      std::memcpy(at + i * sizeof(value), &value, sizeof(value));
  }

  std::unique_ptr<Module> loadModule(std::string_view) override {
    fail(TXL_UNAVAILABLE, "the host device loads no kernel modules: the CPU "
                          "target's code is linked into the executable");
  }
  void launch(Kernel &, const size_t[3], const size_t[3], size_t, void **,
              size_t) override {
    fail(TXL_UNAVAILABLE, "the host device launches no kernels: the CPU "
                          "target's code is linked into the executable");
  }

  /// cblas_sgemm per matrix of the batch; bf16 inputs through
  /// txl_rt_sgemm_bf16. f16 inputs have no CPU product: the f32 one runs,
  /// as CLBlast's does for them.
  void gemm(const GemmDesc &d) override {
    auto at = [](const GemmMatrix &x, int64_t b) {
      return static_cast<float *>(x.buffer) + x.offset + b * x.stride;
    };
    for (int64_t size : {d.m, d.n, d.k, d.a.ld, d.b.ld, d.c.ld})
      if (size > INT_MAX)
        fail(TXL_INVALID_ARGUMENT,
             "host device: {} has a size beyond BLAS's 32-bit integers",
             describe(d));
    const int transA = d.transA ? kCblasTrans : kCblasNoTrans;
    const int transB = d.transB ? kCblasTrans : kCblasNoTrans;
    for (int64_t b = 0; b < d.batch; ++b) {
      if (d.inputs == GemmDesc::Inputs::Bf16)
        txl_rt_sgemm_bf16(kCblasColMajor, transA, transB, int(d.m), int(d.n),
                          int(d.k), d.alpha, at(d.a, b), int(d.a.ld),
                          at(d.b, b), int(d.b.ld), d.beta, at(d.c, b),
                          int(d.c.ld));
      else
        cblas_sgemm(kCblasColMajor, transA, transB, int(d.m), int(d.n),
                    int(d.k), d.alpha, at(d.a, b), int(d.a.ld), at(d.b, b),
                    int(d.b.ld), d.beta, at(d.c, b), int(d.c.ld));
    }
  }

  void synchronize() override {}
};

} // namespace

std::unique_ptr<Device> openHostDevice() {
  return std::make_unique<HostDevice>();
}

} // namespace txl::rt

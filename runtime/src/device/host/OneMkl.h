//===- OneMkl.h - oneMKL, loaded once for the CPU's products ----*- C++ -*-===//
//
// The CPU target's products that oneMKL runs (txl/rt/device/Bf16Gemm.h and
// txl/rt/device/HostGemm.h) share one dlopen of libmkl_rt: the loader's path
// (libmkl_rt.so.3, .so.2), then /opt/txlc/mkl/lib, where
// scripts/install-deps.sh installs PyPI's mkl. Its threading layer is set to
// sequential: the runtime's batch slices are the threads.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_DEVICE_HOST_ONEMKL_H
#define TXL_RT_DEVICE_HOST_ONEMKL_H

#include "txl/rt/support/DynamicLibrary.h"

#include <cstdint>
#include <memory>
#include <string>

namespace txl::rt {

/// oneMKL's cblas_sgemm (CBLAS enums and sizes as int).
using MklSgemm = void (*)(int, int, int, int, int, int, float, const float *,
                          int, const float *, int, float, float *, int);
/// oneMKL's cblas_gemm_bf16bf16f32 (A and B as bf16 bits).
using MklBf16Gemm = void (*)(int, int, int, int, int, int, float,
                             const uint16_t *, int, const uint16_t *, int,
                             float, float *, int);

/// oneMKL as this process loaded it (on first use), or why it did not.
struct OneMkl {
  std::unique_ptr<DynamicLibrary> library; ///< null: not loaded
  std::string version;                     ///< e.g. "2026.2"
  std::string error;                       ///< why not loaded
  MklSgemm sgemm = nullptr;
  MklBf16Gemm bf16Gemm = nullptr; ///< null before oneMKL 2021
};

/// The process's oneMKL (loaded once, sequential threading layer).
const OneMkl &oneMkl();

} // namespace txl::rt

#endif // TXL_RT_DEVICE_HOST_ONEMKL_H

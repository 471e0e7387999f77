//===- CudaDriver.h - The CUDA driver API, loaded with dlopen ----*- C++
//-*-===//
//
// The CUDA target's runtime reaches the driver only through this table,
// filled by dlopen("libcuda.so.1") + dlsym at run time: a CUDA executable
// builds and starts on a machine without CUDA, and says what is missing
// instead of failing to load. Every CUresult becomes a txl::rt::Error at one
// boundary (`CudaDriver::check`), with the driver's error name.
//
// The types and constants are cuda.h's (the toolkit's header; the library
// itself is never linked).
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_CUDADRIVER_H
#define TXL_RT_CUDADRIVER_H

#include "txl/rt/support/DynamicLibrary.h"

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace txl::rt {

/// The driver's functions (CudaSymbols.def), resolved from one library.
class CudaDriver {
public:
  /// dlopen()s `library` and resolves every symbol of CudaSymbols.def.
  /// Throws Error(TXL_UNAVAILABLE) "no CUDA driver: dlopen(libcuda.so.1)
  /// failed: <dlerror>" when the library cannot be loaded, or "…: symbol
  /// cuX not found" when it lacks one (a driver older than the CUDA 11
  /// API the runtime uses). Does not call cuInit.
  explicit CudaDriver(const std::string &library = "libcuda.so.1");

  /// Returns when `result` is CUDA_SUCCESS (0); otherwise throws
  /// Error(TXL_UNAVAILABLE) "<what>: CUDA_ERROR_X (<description>)". The name
  /// and description come from cuGetErrorName/cuGetErrorString, or, when
  /// the driver cannot give them (the toolkit's stub libcuda answers every
  /// call with CUDA_ERROR_STUB_LIBRARY), from the runtime's own table of
  /// the codes a user is likely to meet; otherwise "CUresult <n>".
  void check(int result, const char *what) const;

  /// The name of `result` ("CUDA_ERROR_NO_DEVICE"), by the same rules.
  std::string errorName(int result) const;

  /// The library the table was loaded from.
  const std::string &library() const { return library_.path(); }

#define TXL_CUDA_SYMBOL(name, ret, params) ret(*name) params = nullptr;
#include "txl/rt/device/CudaSymbols.def"
#undef TXL_CUDA_SYMBOL

private:
  DynamicLibrary library_;
};

} // namespace txl::rt

#endif // TXL_RT_CUDADRIVER_H

//===- OpenCL.h - The OpenCL API, loaded with dlopen -------------*- C++
//-*-===//
//
// The OpenCL target's runtime reaches OpenCL only through this table,
// filled from the ICD loader (libOpenCL.so.1) at run time; every cl_int
// becomes a txl::rt::Error at one boundary (`OpenCL::check`) with the
// code's name. Types and constants are Khronos' CL/cl.h (OpenCL 3.0
// declarations; the ICD loader itself is never linked).
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_OPENCL_H
#define TXL_RT_OPENCL_H

#include "txl/rt/support/DynamicLibrary.h"

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300
#endif
#include <CL/cl.h>
#include <CL/cl_ext.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace txl::rt {

/// Raises the process's default thread stack size (pthread_setattr_default_np)
/// to 64 MiB where it is smaller, so that the threads an OpenCL CPU runtime
/// creates afterwards (Intel's TBB workers, which run the workgroups) have
/// room for the largest kernel frames; threads that exist keep theirs. Call
/// it before the first OpenCL call of the process; the OpenCL constructor
/// does.
void reserveKernelThreadStacks();

/// The OpenCL functions (OpenCLSymbols.def), resolved from one library.
class OpenCL {
public:
  /// dlopen()s `library` and resolves every symbol of OpenCLSymbols.def.
  /// Throws Error(TXL_UNAVAILABLE) "no OpenCL ICD loader: dlopen(...)
  /// failed: ..." or "no usable OpenCL ICD loader: ... has no symbol ...
  /// (the runtime needs OpenCL 2.1 or newer)".
  explicit OpenCL(const std::string &library = "libOpenCL.so.1");

  /// Returns when `result` is CL_SUCCESS (0); otherwise throws
  /// Error(TXL_UNAVAILABLE) "<what>: CL_X (<explanation>)", or
  /// "<what>: cl_int <n>" for a code the runtime does not name.
  static void check(cl_int result, const char *what);

  /// The name of `result` ("CL_INVALID_VALUE"), or "cl_int <n>".
  static std::string errorName(cl_int result);

  /// Every platform the loader finds. Throws Error(TXL_UNAVAILABLE) "no
  /// OpenCL platform: clGetPlatformIDs: CL_PLATFORM_NOT_FOUND_KHR (...)"
  /// when the loader finds no ICD (none in /etc/OpenCL/vendors or in the
  /// folder OCL_ICD_VENDORS names).
  std::vector<cl_platform_id> platforms() const;

  const std::string &library() const { return library_.path(); }

#define TXL_OPENCL_SYMBOL(name, ret, params) ret(*name) params = nullptr;
#include "txl/rt/device/OpenCLSymbols.def"
#undef TXL_OPENCL_SYMBOL

private:
  DynamicLibrary library_;
};

} // namespace txl::rt

#endif // TXL_RT_OPENCL_H

//===- CLBlast.h - CLBlast, loaded with dlopen ------------------*- C++ -*-===//
//
// The library the OpenCL backend's matrix products call
// (txl/rt/device/Gemm.h), reached only through this table, filled with
// dlopen/dlsym when the first product runs: an OpenCL executable starts on
// a machine without it, and a missing library is one line naming it. Each
// status code becomes a txl::rt::Error(TXL_UNAVAILABLE) at one boundary
// (`check`) with the runtime's name for it. The types and constants are
// clblast_c.h's (Debian's libclblast-dev); the library is not linked.
// Status codes are taken as the ints they are. Part of the OpenCL backend
// (TXL_ENABLE_OPENCL).
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_CLBLAST_H
#define TXL_RT_CLBLAST_H

#include "txl/rt/device/OpenCL.h"
#include "txl/rt/support/DynamicLibrary.h"

#include <clblast_c.h>

#include <string>

namespace txl::rt {

/// CLBlast (CLBlastSymbols.def), Debian's libclblast1. It links the same
/// ICD loader (libOpenCL.so.1) the OpenCL backend loaded, so the buffers
/// and queue it is given are that loader's objects.
class CLBlast {
public:
  explicit CLBlast(const std::string &library = "libclblast.so.1");

  /// Returns when `status` is CLBlastSuccess (0); otherwise throws
  /// Error(TXL_UNAVAILABLE) "<what>: <name> (<description>)" from the
  /// runtime's table of CLBlast's codes (its own and OpenCL's), or
  /// "<what>: CLBlastStatusCode <n>".
  void check(int status, const char *what) const;

  const std::string &library() const { return library_.path(); }

#define TXL_CLBLAST_SYMBOL(name, ret, params) ret(*name) params = nullptr;
#include "txl/rt/device/CLBlastSymbols.def"
#undef TXL_CLBLAST_SYMBOL

private:
  DynamicLibrary library_;
};

} // namespace txl::rt

#endif // TXL_RT_CLBLAST_H

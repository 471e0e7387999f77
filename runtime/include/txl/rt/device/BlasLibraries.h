//===- BlasLibraries.h - cuBLAS and CLBlast, loaded with dlopen -*- C++ -*-===//
//
// The libraries the GPU targets' matrix products call (txl/rt/device/Gemm.h),
// reached only through these tables, filled with dlopen/dlsym when the
// first product runs: a GPU executable starts on a machine without them,
// and a missing library is one line naming it. Each status code becomes a
// txl::rt::Error(TXL_UNAVAILABLE) at one boundary (`check`) with the
// library's name for it. The types and constants are the libraries' own
// headers': cublas_api.h (the toolkit's) and clblast_c.h (Debian's
// libclblast-dev); neither library is linked. Status codes are taken as
// the ints they are (a newer library may return one the header's enum
// does not hold, which must not be loaded as the enum).
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_BLASLIBRARIES_H
#define TXL_RT_BLASLIBRARIES_H

#include "txl/rt/device/OpenCL.h"
#include "txl/rt/support/DynamicLibrary.h"

#include <clblast_c.h>
#include <cublas_api.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace txl::rt {

/// cuBLAS (CublasSymbols.def) from the CUDA 13 or 12 library: the
/// soname on the loader's path first, then $CUDA_PATH/lib64 and
/// /usr/local/cuda/lib64.
class Cublas {
public:
  /// Loads the first library of `candidates`, or of the default list when
  /// empty. Throws Error(TXL_UNAVAILABLE) "no cuBLAS: dlopen(...) failed:
  /// ..." or "no usable cuBLAS: ... has no symbol ...".
  explicit Cublas(std::vector<std::string> candidates = {});

  /// Returns when `status` is CUBLAS_STATUS_SUCCESS (0); otherwise throws
  /// Error(TXL_UNAVAILABLE) "<what>: CUBLAS_STATUS_X (<description>)" with
  /// cublasGetStatusName/String.
  void check(int status, const char *what) const;

  const std::string &library() const { return library_->path(); }

#define TXL_CUBLAS_SYMBOL(name, ret, params) ret(*name) params = nullptr;
#include "txl/rt/device/CublasSymbols.def"
#undef TXL_CUBLAS_SYMBOL

private:
  std::unique_ptr<DynamicLibrary> library_;
};

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

#endif // TXL_RT_BLASLIBRARIES_H

//===- Cublas.h - cuBLAS, loaded with dlopen --------------------*- C++ -*-===//
//
// The library the CUDA backend's matrix products call (txl/rt/device/Gemm.h),
// reached only through this table, filled with dlopen/dlsym when the first
// product runs: a CUDA executable starts on a machine without it, and a
// missing library is one line naming it. Each status code becomes a
// txl::rt::Error(TXL_UNAVAILABLE) at one boundary (`check`) with cuBLAS's
// name for it. The types and constants are cublas_api.h's (the toolkit's);
// the library is not linked. Status codes are taken as the ints they are
// (a newer library may return one the header's enum does not hold, which
// must not be loaded as the enum). Part of the CUDA backend
// (TXL_ENABLE_CUDA).
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_CUBLAS_H
#define TXL_RT_CUBLAS_H

#include "txl/rt/support/DynamicLibrary.h"

#include <cublas_api.h>

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

} // namespace txl::rt

#endif // TXL_RT_CUBLAS_H

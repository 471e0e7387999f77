//===- HostGemm.cpp - The CPU target's f32 matrix products ---------------===//
//
// txl_rt_sgemm (txl/rt/device/HostGemm.h): oneMKL's sequential cblas_sgemm
// for calls made on one OpenBLAS thread where the CPU measured it faster,
// OpenBLAS's otherwise.
//
//===----------------------------------------------------------------------===//

#include "txl/rt/device/HostGemm.h"

#include "OneMkl.h"
#include "txl/rt/device/CpuBlas.h"

#include <fmt/format.h>

#include <cstdlib>
#include <string_view>

namespace txl::rt {
namespace {

/// The f32 product of this process's single-threaded calls.
struct F32Backend {
  MklSgemm gemm = nullptr; ///< null: OpenBLAS for every call
  std::string line;
};

F32Backend loadBackend() {
  F32Backend backend;
  const char *env = std::getenv("TXL_SGEMM");
  std::string_view choice = env ? env : "";
  if (choice == "openblas") {
    backend.line = "OpenBLAS (TXL_SGEMM=openblas)";
    return backend;
  }
  if (choice != "mkl") {
    CpuFeatures cpu = detectCpu();
    if (!cpu.intel || !cpu.avx512) {
      backend.line = "OpenBLAS (oneMKL is taken on Intel CPUs with AVX-512 "
                     "only, where it was measured faster)";
      return backend;
    }
  }
  const OneMkl &mkl = oneMkl();
  if (!mkl.sgemm) {
    backend.line = fmt::format("OpenBLAS ({})", mkl.error);
    return backend;
  }
  backend.gemm = mkl.sgemm;
  backend.line = fmt::format("oneMKL {} on one thread, OpenBLAS on more ({})",
                             mkl.version, mkl.library->path());
  return backend;
}

const F32Backend &backend() {
  static const F32Backend instance = loadBackend();
  return instance;
}

} // namespace

std::string f32ProductLine() { return backend().line; }

} // namespace txl::rt

extern "C" void txl_rt_sgemm(int order, int transA, int transB, int m, int n,
                             int k, float alpha, const float *a, int lda,
                             const float *b, int ldb, float beta, float *c,
                             int ldc) {
  const txl::rt::F32Backend &f32 = txl::rt::backend();
  if (f32.gemm && openblas_get_num_threads() == 1)
    f32.gemm(order, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c,
             ldc);
  else
    cblas_sgemm(order, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c,
                ldc);
}

//===- Bf16Gemm.cpp - The CPU target's bf16 matrix products --------------===//
//
// txl_rt_sgemm_bf16 (txl/rt/device/Bf16Gemm.h): each call rounds its A and B
// into the calling thread's scratch buffers (compact, kept between calls), then
// runs oneMKL's bf16 product on them, or cblas_sgemm on their f32 values.
//
//===----------------------------------------------------------------------===//

#include "txl/rt/device/Bf16Gemm.h"

#include "OneMkl.h"
#include "txl/rt/device/CpuBlas.h"

#include <fmt/format.h>

#include <cstdlib>
#include <string_view>
#include <vector>

namespace txl::rt {
namespace {

/// The bf16 product of this process, chosen on first use.
struct Bf16Backend {
  MklBf16Gemm gemm = nullptr; ///< null: emulated
  std::string line;
};

Bf16Backend loadBackend() {
  Bf16Backend backend;
  const char *env = std::getenv("TXL_BF16_GEMM");
  if (env && std::string_view(env) == "emulate") {
    backend.line = "emulated (bf16-rounded operands through cblas_sgemm: "
                   "TXL_BF16_GEMM=emulate)";
    return backend;
  }
  const OneMkl &mkl = oneMkl();
  if (!mkl.bf16Gemm) {
    backend.line = fmt::format(
        "emulated (bf16-rounded operands through cblas_sgemm: {})", mkl.error);
    return backend;
  }
  backend.gemm = mkl.bf16Gemm;
  backend.line = fmt::format("oneMKL {} cblas_gemm_bf16bf16f32 ({})",
                             mkl.version, mkl.library->path());
  return backend;
}

const Bf16Backend &backend() {
  static const Bf16Backend instance = loadBackend();
  return instance;
}

/// The stored extent of an operand: `lines` runs of `length` elements,
/// `ld` apart (row-major: rows of the stored matrix; column-major: columns).
struct Stored {
  int lines, length;
};

Stored stored(int order, int trans, int rows, int cols) {
  // rows x cols is the operand as the product uses it (op(A): m x k).
  bool asIs = trans == kCblasNoTrans;
  int storedRows = asIs ? rows : cols, storedCols = asIs ? cols : rows;
  return order == kCblasRowMajor ? Stored{storedRows, storedCols}
                                 : Stored{storedCols, storedRows};
}

/// Rounds `src` (shape `s`, leading dimension `ld`) into `out`, compact
/// (leading dimension s.length), as bf16 bits (T = uint16_t) or as their
/// f32 values (T = float). Inlined into the two clones below, which the
/// compiler vectorizes for their targets.
template <typename T>
__attribute__((always_inline)) inline void roundLines(const float *src, int ld,
                                                      Stored s, T *out) {
  for (int line = 0; line < s.lines; ++line) {
    const float *in = src + size_t(line) * size_t(ld);
    T *row = out + size_t(line) * size_t(s.length);
    for (int j = 0; j < s.length; ++j) {
      uint16_t bits = toBf16(in[j]);
      if constexpr (sizeof(T) == 2)
        row[j] = bits;
      else
        row[j] = fromBf16(bits);
    }
  }
}

template <typename T>
void roundLinesBaseline(const float *src, int ld, Stored s, T *out) {
  roundLines(src, ld, s, out);
}

/// The same with 512-bit vectors (16 lanes; the rounding was a fifth of a
/// bf16 ptb_small eval at 4 SSE2 lanes).
template <typename T>
__attribute__((target("arch=x86-64-v4"))) void
roundLinesV4(const float *src, int ld, Stored s, T *out) {
  roundLines(src, ld, s, out);
}

template <typename T>
void round(const float *src, int ld, Stored s, std::vector<T> &dst) {
  static const bool v4 = detectCpu().x86_64_v4;
  dst.resize(size_t(s.lines) * size_t(s.length));
  if (v4)
    roundLinesV4(src, ld, s, dst.data());
  else
    roundLinesBaseline(src, ld, s, dst.data());
}

} // namespace

std::string bf16ProductLine() { return backend().line; }

} // namespace txl::rt

extern "C" void txl_rt_sgemm_bf16(int order, int transA, int transB, int m,
                                  int n, int k, float alpha, const float *a,
                                  int lda, const float *b, int ldb, float beta,
                                  float *c, int ldc) {
  using namespace txl::rt;
  if (m <= 0 || n <= 0)
    return;
  Stored sa = stored(order, transA, m, k), sb = stored(order, transB, k, n);
  // Compact copies: leading dimension = the stored length (at least 1, as
  // BLAS requires).
  int lda2 = sa.length > 0 ? sa.length : 1,
      ldb2 = sb.length > 0 ? sb.length : 1;
  const Bf16Backend &bf16 = backend();
  if (bf16.gemm) {
    thread_local std::vector<uint16_t> a16, b16;
    round(a, lda, sa, a16);
    round(b, ldb, sb, b16);
    bf16.gemm(order, transA, transB, m, n, k, alpha, a16.data(), lda2,
              b16.data(), ldb2, beta, c, ldc);
    return;
  }
  thread_local std::vector<float> a32, b32;
  round(a, lda, sa, a32);
  round(b, ldb, sb, b32);
  cblas_sgemm(order, transA, transB, m, n, k, alpha, a32.data(), lda2,
              b32.data(), ldb2, beta, c, ldc);
}

//===- Bf16Gemm.cpp - The CPU target's bf16 matrix products --------------===//
//
// txl_rt_sgemm_bf16 (txl/rt/device/Bf16Gemm.h): the process's bf16 product,
// chosen once (TXL_BF16_GEMM, the CPU's vendor and features, whether oneMKL
// loads): the runtime's AVX512-BF16 kernel (Bf16Dot.h), which packs and
// rounds the operands itself, or oneMKL's product or cblas_sgemm on A and B
// rounded into the calling thread's scratch buffers (compact, kept between
// calls).
//
//===----------------------------------------------------------------------===//

#include "txl/rt/device/Bf16Gemm.h"

#include "Bf16Dot.h"
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
  Bf16Product product = Bf16Product::Emulated;
  std::string line;
};

std::string emulatedLine(std::string_view why) {
  return fmt::format("emulated (bf16-rounded operands through cblas_sgemm: {})",
                     why);
}

std::string dotLine(std::string_view why) {
  return fmt::format("txlc's AVX512-BF16 kernel (vdpbf16ps: {})", why);
}

Bf16Backend loadBackend() {
  const char *env = std::getenv("TXL_BF16_GEMM");
  std::string_view choice = env ? env : "";
  if (choice == "emulate")
    return {Bf16Product::Emulated, emulatedLine("TXL_BF16_GEMM=emulate")};
  const bool dot = bf16ProductAvailable(Bf16Product::Avx512Bf16);
  if (choice == "avx512bf16")
    return dot ? Bf16Backend{Bf16Product::Avx512Bf16,
                             dotLine("TXL_BF16_GEMM=avx512bf16")}
               : Bf16Backend{Bf16Product::Emulated,
                             emulatedLine("TXL_BF16_GEMM=avx512bf16, but "
                                          "this CPU has no AVX512-BF16")};
  // By measurement (bench/README.md, "Session 63"): on
  // Intel, oneMKL's product (AMX or AVX512-BF16); elsewhere oneMKL runs
  // bf16 no faster than f32, and the runtime's kernel 1.8x faster.
  if (choice != "mkl" && dot && !detectCpu().intel)
    return {Bf16Product::Avx512Bf16,
            dotLine("oneMKL does not use AVX512-BF16 on this CPU")};
  const OneMkl &mkl = oneMkl();
  if (!mkl.bf16Gemm)
    return {Bf16Product::Emulated, emulatedLine(mkl.error)};
  return {Bf16Product::OneMkl,
          fmt::format("oneMKL {} cblas_gemm_bf16bf16f32 ({})", mkl.version,
                      mkl.library->path())};
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

bool bf16ProductAvailable(Bf16Product product) {
  switch (product) {
  case Bf16Product::OneMkl:
    return oneMkl().bf16Gemm != nullptr;
  case Bf16Product::Avx512Bf16:
    return detectCpu().avx512bf16;
  case Bf16Product::Emulated:
    return true;
  }
  return false;
}

void sgemmBf16(Bf16Product product, int order, int transA, int transB, int m,
               int n, int k, float alpha, const float *a, int lda,
               const float *b, int ldb, float beta, float *c, int ldc) {
  if (m <= 0 || n <= 0)
    return;
  if (product == Bf16Product::Avx512Bf16) {
    // Column-major C = op(A) op(B) is row-major Cᵀ = op(B)ᵀ op(A)ᵀ.
    if (order == kCblasRowMajor)
      bf16DotGemm(transA == kCblasTrans, transB == kCblasTrans, m, n, k, alpha,
                  a, lda, b, ldb, beta, c, ldc);
    else
      bf16DotGemm(transB == kCblasTrans, transA == kCblasTrans, n, m, k, alpha,
                  b, ldb, a, lda, beta, c, ldc);
    return;
  }
  Stored sa = stored(order, transA, m, k), sb = stored(order, transB, k, n);
  // Compact copies: leading dimension = the stored length (at least 1, as
  // BLAS requires).
  int lda2 = sa.length > 0 ? sa.length : 1,
      ldb2 = sb.length > 0 ? sb.length : 1;
  if (product == Bf16Product::OneMkl) {
    thread_local std::vector<uint16_t> a16, b16;
    round(a, lda, sa, a16);
    round(b, ldb, sb, b16);
    oneMkl().bf16Gemm(order, transA, transB, m, n, k, alpha, a16.data(), lda2,
                      b16.data(), ldb2, beta, c, ldc);
    return;
  }
  thread_local std::vector<float> a32, b32;
  round(a, lda, sa, a32);
  round(b, ldb, sb, b32);
  cblas_sgemm(order, transA, transB, m, n, k, alpha, a32.data(), lda2,
              b32.data(), ldb2, beta, c, ldc);
}

} // namespace txl::rt

extern "C" void txl_rt_sgemm_bf16(int order, int transA, int transB, int m,
                                  int n, int k, float alpha, const float *a,
                                  int lda, const float *b, int ldb, float beta,
                                  float *c, int ldc) {
  txl::rt::sgemmBf16(txl::rt::backend().product, order, transA, transB, m, n, k,
                     alpha, a, lda, b, ldb, beta, c, ldc);
}

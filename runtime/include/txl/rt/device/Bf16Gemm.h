//===- Bf16Gemm.h - The CPU target's bf16 matrix products -------*- C++ -*-===//
//
// `txlc --precision=bf16 --target=cpu` (issue 49 item 4): every f32 matrix
// product the CPU target would give OpenBLAS's cblas_sgemm calls
// txl_rt_sgemm_bf16 instead (txl-linalg-to-blas bf16=true). Its operands A
// and B are rounded to bf16 (round to nearest even, as PyTorch's and
// cuBLAS's conversions) and the products are accumulated in f32, into an
// f32 C, as the GPU targets' txl_device_sgemm_bf16. Where the product runs
// (Bf16Product), chosen once per process:
//
//  - the runtime's AVX512-BF16 kernel (runtime/src/device/host/Bf16Dot.h:
//    packed, rounded operands and `vdpbf16ps`) on CPUs with AVX512-BF16
//    that are not Intel's (AMD Zen 4 and later), where oneMKL runs bf16 no
//    faster than f32, or with TXL_BF16_GEMM=avx512bf16;
//  - oneMKL's cblas_gemm_bf16bf16f32 otherwise, when oneMKL loads
//    (libmkl_rt.so.3 or .so.2 on the loader's path, then /opt/txlc/mkl/lib,
//    where scripts/install-deps.sh installs PyPI's mkl), with its sequential
//    threading layer: the runtime's slices are the threads. It uses AMX or
//    AVX512-BF16 where the CPU has them. TXL_BF16_GEMM=mkl takes it on any
//    CPU;
//  - otherwise, or with TXL_BF16_GEMM=emulate, the bf16-rounded operands in
//    f32 through cblas_sgemm ("emulated"): the same products of bf16
//    values (exact in f32) and f32 sums, in another order.
//
// The three agree to f32 rounding, except that the AVX512-BF16 kernel takes
// subnormal operands as zero (magnitudes below 1.2e-38: its conversion and
// vdpbf16ps flush them).
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_BF16GEMM_H
#define TXL_RT_BF16GEMM_H

#include <cstdint>
#include <string>

namespace txl::rt {

/// `x` rounded to the nearest bf16 (ties to even), as its 16 bits; a NaN
/// stays a (quiet) NaN, infinities stay infinite.
inline uint16_t toBf16(float x) {
  uint32_t u;
  __builtin_memcpy(&u, &x, sizeof(u));
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return uint16_t((u >> 16) | 0x40u);
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/// The f32 value of the bf16 `bits`.
inline float fromBf16(uint16_t bits) {
  uint32_t u = uint32_t(bits) << 16;
  float x;
  __builtin_memcpy(&x, &u, sizeof(x));
  return x;
}

/// Where a bf16 product runs (the file comment).
enum class Bf16Product { Avx512Bf16, OneMkl, Emulated };

/// Where txl_rt_sgemm_bf16's products run: "txlc's AVX512-BF16 kernel
/// (vdpbf16ps: why)", "oneMKL <version> cblas_gemm_bf16bf16f32 (path)" or
/// "emulated (bf16-rounded operands through cblas_sgemm: why)". Loads
/// oneMKL on first use where it may take it.
std::string bf16ProductLine();

/// Whether `product` can run in this process: the CPU has AVX512-BF16
/// (Avx512Bf16), oneMKL loads with its bf16 product (OneMkl; loads it), or
/// always (Emulated).
bool bf16ProductAvailable(Bf16Product product);

/// txl_rt_sgemm_bf16's product through `product`, which must be available
/// (bf16ProductAvailable): C = alpha · op(A) · op(B) + beta · C with A and B
/// rounded to bf16 and f32 sums; CBLAS's arguments (order and transpose
/// enums as kCblas*, sizes and leading dimensions in elements).
void sgemmBf16(Bf16Product product, int order, int transA, int transB, int m,
               int n, int k, float alpha, const float *a, int lda,
               const float *b, int ldb, float beta, float *c, int ldc);

} // namespace txl::rt

extern "C" {
/// cblas_sgemm's arguments and meaning (CBLAS order and transpose enums;
/// m, n, k and the leading dimensions in elements; A, B, C f32), with A and
/// B rounded to bf16 and the products summed in f32 (txl/rt/device/Bf16Gemm.h).
/// Called by the code of `--precision=bf16` CPU executables.
void txl_rt_sgemm_bf16(int order, int transA, int transB, int m, int n, int k,
                       float alpha, const float *a, int lda, const float *b,
                       int ldb, float beta, float *c, int ldc);
}

#endif // TXL_RT_BF16GEMM_H

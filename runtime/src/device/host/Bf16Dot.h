//===- Bf16Dot.h - bf16 products on AVX512-BF16's dot product ---*- C++ -*-===//
//
// The runtime's own bf16 product for CPUs with AVX512-BF16 where no BLAS
// uses it (txl/rt/device/Bf16Gemm.h says when it runs): the operands are
// rounded to bf16 while they are packed, and `vdpbf16ps` sums each lane's
// two bf16 products into an f32 accumulator, as oneMKL's
// cblas_gemm_bf16bf16f32 and OpenBLAS's sbgemm do.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_DEVICE_HOST_BF16DOT_H
#define TXL_RT_DEVICE_HOST_BF16DOT_H

namespace txl::rt {

/// C = alpha · op(A) · op(B) + beta · C for row-major A, B and C (op(X) = X
/// or Xᵀ: `transA`, `transB`), op(A) m × k, op(B) k × n, leading dimensions
/// in elements. A and B are rounded to bf16 (ties to even, as toBf16, except
/// that subnormal values become zero, as vdpbf16ps would take them), the
/// products summed in f32; C is not read where beta = 0 (a NaN there does
/// not propagate), as BLAS. Single-threaded; its packing buffers are the
/// calling thread's, kept between calls. Requires AVX512-BF16 (the caller
/// checks detectCpu().avx512bf16).
void bf16DotGemm(bool transA, bool transB, int m, int n, int k, float alpha,
                 const float *a, int lda, const float *b, int ldb, float beta,
                 float *c, int ldc);

} // namespace txl::rt

#endif // TXL_RT_DEVICE_HOST_BF16DOT_H

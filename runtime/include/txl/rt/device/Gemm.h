//===- Gemm.h - One strided-batched matrix product on a device --*- C++ -*-===//
//
// The GPU targets' matrix products are library calls, not generated
// kernels: cuBLAS on CUDA and CLBlast on OpenCL, both loaded with dlopen and
// both given the same descriptor, in the column-major convention of BLAS.
// Generated code describes each product row-major (txl_device_sgemm in
// txl/device.h, as `txl-linalg-to-blas` emits it); `toColumnMajor` is the
// one place that turns it into the descriptor the libraries take, so that
// every transpose, leading dimension and batch stride a CUDA run passes to
// cuBLAS is the one the OpenCL tests pass to CLBlast.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_GEMM_H
#define TXL_RT_GEMM_H

#include <cstdint>
#include <string>

namespace txl::rt {

/// One operand of a product: a device buffer handle and, in elements, the
/// offset of the first matrix, its leading dimension and the distance
/// between consecutive matrices of the batch.
struct GemmMatrix {
  void *buffer = nullptr;
  int64_t offset = 0;
  int64_t ld = 1;
  int64_t stride = 0;
};

/// For each b < batch: C_b = alpha * op(A_b) * op(B_b) + beta * C_b, with
/// op(A_b) m x k, op(B_b) k x n, C_b m x n, all stored column-major (BLAS,
/// cublasSgemmStridedBatched, CLBlastSgemmStridedBatched with
/// CLBlastLayoutColMajor).
struct GemmDesc {
  bool transA = false, transB = false;
  int64_t m = 0, n = 0, k = 0;
  float alpha = 1, beta = 0;
  GemmMatrix a, b, c;
  int64_t batch = 1;
  /// `--precision=bf16` / `fp16`: A and B may be rounded to bf16 / f16 for
  /// tensor cores, products accumulated in f32 (cuBLAS
  /// CUBLAS_COMPUTE_32F_FAST_16BF / _16F on f32 buffers). CLBlast has no
  /// such mode: OpenCL computes the f32 product.
  enum class Inputs { F32, Bf16, F16 } inputs = Inputs::F32;
};

/// The column-major descriptor of the row-major product C = op(A) op(B)
/// (C m x n): the same memory read as Cᵀ = op(B)ᵀ op(A)ᵀ, so A and B swap
/// places, m and n swap, and every transpose flag and leading dimension
/// stays as it is.
GemmDesc toColumnMajor(const GemmDesc &rowMajor);

/// "sgemm(N,T m=.. n=.. k=.. lda=.. ldb=.. ldc=.. batch=..)" (sgemm_bf16,
/// sgemm_f16 with bf16 or f16 inputs): names a product in error messages.
std::string describe(const GemmDesc &desc);

/// Checks what both libraries require (non-negative sizes, leading
/// dimensions covering a column, batch >= 0, and a nonzero batch stride of
/// C when batch > 1: the products would all write one C). Throws
/// Error(TXL_INVALID_ARGUMENT) naming the product otherwise.
void checkGemm(const GemmDesc &desc);

class Device;

/// Enqueues the row-major product `rowMajor` on `device`: checks it,
/// returns for an empty C, zeroes C for k = 0 with beta = 0 (beta = 1:
/// nothing to do; other betas with k = 0 are refused), and otherwise
/// passes `toColumnMajor(rowMajor)` to Device::gemm, with C's batch
/// stride set to its size when batch = 1 (CLBlast rejects 0 there, which
/// generated code passes for a plain product). Throws
/// Error(TXL_INVALID_ARGUMENT) for a malformed product, Error(TXL_UNAVAILABLE)
/// from the library.
void enqueueGemm(Device &device, const GemmDesc &rowMajor);

} // namespace txl::rt

#endif // TXL_RT_GEMM_H

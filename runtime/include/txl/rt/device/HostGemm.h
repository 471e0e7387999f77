//===- HostGemm.h - The CPU target's f32 matrix products --------*- C++ -*-===//
//
// Every f32 matrix product of a CPU executable calls txl_rt_sgemm
// (txl-linalg-to-blas runtime-sgemm=true, which the CPU pipeline sets), and
// the runtime chooses where it runs, by measurement (issue 49, bench/README.md
// "Which BLAS"):
//
//  - oneMKL's cblas_sgemm (sequential; OneMkl.h) for a call made while
//    OpenBLAS is set to one thread, which is every product of the batch
//    slices (each slice is one thread) and of `--threads 1`, on Intel CPUs
//    with AVX-512 (against OpenBLAS's SkylakeX kernel on a family 6 model
//    167 Xeon: ptb_small eval 1.05x, train update 1.10x, session 58; on a
//    model 207 Xeon in session 46 oneMKL's best runs were 6-8 % ahead, its
//    medians within noise);
//  - OpenBLAS's cblas_sgemm otherwise: calls made with OpenBLAS threads
//    (one slice over several cores), other CPUs (AMD not yet measured), no
//    oneMKL, or TXL_SGEMM=openblas. TXL_SGEMM=mkl takes oneMKL on any CPU.
//
// A process makes the choice once, at its first product; each call then
// reads OpenBLAS's thread count.
//
// oneMKL's sums depend on where the operands start (it takes other kernels
// for other alignments; its strict reproducibility mode, MKL_CBWR_STRICT,
// removes that but measured 0.87-1.03x OpenBLAS, session 58). A run repeats
// bit for bit (an executable places its buffers the same way each run), but
// two executables that hold the same values at other offsets may differ in
// the last bits, as OpenBLAS's kernels for two CPUs do; TXL_SGEMM=openblas
// where that matters (test/Integration/dropout.test).
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_HOSTGEMM_H
#define TXL_RT_HOSTGEMM_H

#include <string>

namespace txl::rt {

/// Where txl_rt_sgemm's products run, for the run header: "oneMKL <version>
/// on one thread, OpenBLAS on more" or "OpenBLAS[: why not oneMKL]". Makes
/// the choice (loads oneMKL) on first use.
std::string f32ProductLine();

} // namespace txl::rt

extern "C" {
/// cblas_sgemm's arguments and meaning (CBLAS order and transpose enums; m,
/// n, k and the leading dimensions in elements; f32), run by oneMKL or
/// OpenBLAS as txl/rt/device/HostGemm.h says. Called by the code of f32 CPU
/// executables.
void txl_rt_sgemm(int order, int transA, int transB, int m, int n, int k,
                  float alpha, const float *a, int lda, const float *b, int ldb,
                  float beta, float *c, int ldc);
}

#endif // TXL_RT_HOSTGEMM_H

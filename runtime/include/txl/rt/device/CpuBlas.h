//===- CpuBlas.h - The CPU's features and the BLAS kernel that fits -*- C++
//-*-===//
//
// The CPU target's products run in OpenBLAS, which picks its kernels for the
// CPU when it loads (DYNAMIC_ARCH). An OpenBLAS older than the CPU does not
// know it and falls back to its generic SSE3 kernels ("Prescott"): Debian
// 12's 0.3.21 on Intel's family 6 model 207 (Emerald Rapids) runs products
// about 3x slower than its SkylakeX kernels there (issue 49). The runtime
// reads the CPU's features itself (cpuid), compares them with the kernel
// OpenBLAS reports, and at start-up either restarts the process with the
// kernel that fits (OPENBLAS_CORETYPE) or, where it cannot, prints one
// warning line naming the CPU, the kernel and the fix.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_CPUBLAS_H
#define TXL_RT_CPUBLAS_H

#include <string>
#include <string_view>

// OpenBLAS's cblas_sgemm, declared here rather than through cblas.h, whose
// enum types differ between BLAS vendors; its order and transpose
// arguments take CBLAS's values (kCblas* below).
extern "C" void cblas_sgemm(int order, int transA, int transB, int m, int n,
                            int k, float alpha, const float *a, int lda,
                            const float *b, int ldb, float beta, float *c,
                            int ldc);

// OpenBLAS's thread count: the threads its products run on (the calling one
// included), process-wide.
extern "C" int openblas_get_num_threads(void);
extern "C" void openblas_set_num_threads(int numThreads);

namespace txl::rt {

/// CBLAS's CBLAS_ORDER and CBLAS_TRANSPOSE values.
inline constexpr int kCblasRowMajor = 101, kCblasColMajor = 102,
                     kCblasNoTrans = 111, kCblasTrans = 112;

/// What cpuid says of this CPU (x86-64; all false elsewhere). A vector
/// extension counts only when the OS saves its registers (XGETBV).
struct CpuFeatures {
  std::string brand; ///< the brand string, e.g. "AMD EPYC 9R14"
  bool intel = false; ///< vendor "GenuineIntel"
  int family = 0, model = 0;
  bool avx2 = false, fma = false;
  /// AVX-512 F, DQ, BW and VL together (what OpenBLAS's SkylakeX kernels use).
  bool avx512 = false;
  bool avx512bf16 = false;
  bool amx = false; ///< AMX-TILE and AMX-BF16
  /// x86-64-v4: AVX-512 F, BW, CD, DQ and VL (and AVX2, FMA).
  bool x86_64_v4 = false;
};

/// This CPU's features.
CpuFeatures detectCpu();

/// The linked BLAS: OpenBLAS's build configuration (openblas_get_config,
/// e.g. "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Cooperlake MAX_THREADS=64"),
/// the kernels it runs (openblas_get_corename, e.g. "Cooperlake") and its
/// thread count.
struct BlasInfo {
  std::string config;
  std::string kernel;
  int threads = 0;
};

BlasInfo blasInfo();

/// Whether OpenBLAS kernel `kernel` (as openblas_get_corename or
/// OPENBLAS_CORETYPE names it, any case) uses AVX2 and FMA: Haswell, Zen,
/// SkylakeX, Cooperlake, SapphireRapids.
bool kernelUsesAvx2(std::string_view kernel);

/// The OpenBLAS kernel for `cpu`: "SkylakeX" with AVX-512, "Haswell" with
/// AVX2 and FMA, "" when the CPU has neither (any kernel fits it).
std::string kernelFor(const CpuFeatures &cpu);

/// What start-up does about the BLAS kernel.
struct BlasKernelAction {
  enum Kind {
    Fits,    ///< the kernel fits the CPU
    Restart, ///< restart with OPENBLAS_CORETYPE = `kernel`
    Warn,    ///< print `warning` (one line) and go on
  } kind = Fits;
  std::string kernel;
  std::string warning;
};

/// The decision for a CPU with `cpu`'s features whose OpenBLAS runs
/// `runningKernel`: Fits unless the CPU has AVX2 and the kernel does not
/// use it; then Restart with kernelFor(cpu), unless `coreTypeEnv` (the
/// OPENBLAS_CORETYPE in effect, null when unset) was set by the user or by
/// an earlier restart (`restarted`), which Warn about instead.
BlasKernelAction decideBlasKernel(const CpuFeatures &cpu,
                                  std::string_view runningKernel,
                                  const char *coreTypeEnv, bool restarted);

/// Start-up of an executable (before any product): carries out
/// decideBlasKernel for this CPU and BLAS. Restart re-executes
/// /proc/self/exe with `argv` and OPENBLAS_CORETYPE set (and
/// TXL_BLAS_RESTARTED=1, so that it happens once); when that fails, or
/// for Warn, prints the warning on stderr, prefixed by `prog`.
void ensureBlasKernel(const char *prog, char **argv);

/// One line for run headers and --version: "blas: OpenBLAS 0.3.21 (kernel
/// Cooperlake, 2 threads) | cpu: AMD EPYC 9R14 (avx2 avx512 avx512bf16)".
std::string blasLine();

} // namespace txl::rt

#endif // TXL_RT_CPUBLAS_H

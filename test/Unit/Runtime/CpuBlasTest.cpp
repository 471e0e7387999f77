//===- CpuBlasTest.cpp - The BLAS kernel that fits the CPU
//-----------------===//
//
// decideBlasKernel on the machines issue 49 met: Debian's OpenBLAS 0.3.21
// runs its generic Prescott kernels on Intel's family 6 model 207; this
// machine's own kernel, whatever it is, fits it.
//
//===----------------------------------------------------------------------===//

#include "txl/rt/device/CpuBlas.h"

#include <gtest/gtest.h>

using namespace txl::rt;

namespace {

CpuFeatures emeraldRapids() {
  CpuFeatures cpu;
  cpu.brand = "INTEL(R) XEON(R) PLATINUM 8581C CPU @ 2.10GHz";
  cpu.family = 6;
  cpu.model = 207;
  cpu.avx2 = cpu.fma = cpu.avx512 = cpu.avx512bf16 = cpu.amx = true;
  return cpu;
}

TEST(CpuBlasTest, KernelsThatUseAvx2) {
  for (const char *k :
       {"Haswell", "Zen", "SkylakeX", "COOPERLAKE", "SapphireRapids"})
    EXPECT_TRUE(kernelUsesAvx2(k)) << k;
  for (const char *k : {"Prescott", "Core2", "Nehalem", "Sandybridge", "", "x"})
    EXPECT_FALSE(kernelUsesAvx2(k)) << k;
}

TEST(CpuBlasTest, KernelForTheCpu) {
  CpuFeatures cpu = emeraldRapids();
  EXPECT_EQ(kernelFor(cpu), "SkylakeX");
  cpu.avx512 = false;
  EXPECT_EQ(kernelFor(cpu), "Haswell");
  cpu.avx2 = false;
  EXPECT_EQ(kernelFor(cpu), "");
}

// The Xeon's case: generic kernels, nothing set: restart with SkylakeX.
// After that restart, or with the user's own OPENBLAS_CORETYPE, a generic
// kernel is a warning naming the CPU, the kernel and the fix.
TEST(CpuBlasTest, GenericKernelOnAvx512) {
  CpuFeatures cpu = emeraldRapids();
  BlasKernelAction action = decideBlasKernel(cpu, "Prescott", nullptr, false);
  EXPECT_EQ(action.kind, BlasKernelAction::Restart);
  EXPECT_EQ(action.kernel, "SkylakeX");

  action = decideBlasKernel(cpu, "Prescott", "Prescott", false);
  EXPECT_EQ(action.kind, BlasKernelAction::Warn);
  EXPECT_EQ(action.warning,
            "warning: OpenBLAS runs its Prescott kernels "
            "(OPENBLAS_CORETYPE=Prescott) on INTEL(R) XEON(R) PLATINUM 8581C "
            "CPU @ 2.10GHz (family 6 model 207), which has AVX-512: its "
            "matrix products run several times slower than they can; unset "
            "OPENBLAS_CORETYPE or set it to SkylakeX");

  action = decideBlasKernel(cpu, "Prescott", "SkylakeX", true);
  EXPECT_EQ(action.kind, BlasKernelAction::Warn);
  EXPECT_NE(action.warning.find("did not take OPENBLAS_CORETYPE=SkylakeX"),
            std::string::npos)
      << action.warning;
}

// Kernels that fit: nothing to do, whatever the environment says.
TEST(CpuBlasTest, KernelsThatFit) {
  CpuFeatures cpu = emeraldRapids();
  EXPECT_EQ(decideBlasKernel(cpu, "SkylakeX", nullptr, false).kind,
            BlasKernelAction::Fits);
  EXPECT_EQ(decideBlasKernel(cpu, "Cooperlake", "Cooperlake", true).kind,
            BlasKernelAction::Fits);
  CpuFeatures old;
  old.family = 6;
  old.model = 15;
  EXPECT_EQ(decideBlasKernel(old, "Core2", nullptr, false).kind,
            BlasKernelAction::Fits);
}

// This machine's BLAS answers (which kernel fits is Driver's
// native-executable.test, through an executable's --version).
TEST(CpuBlasTest, ThisMachine) {
  BlasInfo blas = blasInfo();
  EXPECT_FALSE(blas.kernel.empty());
  EXPECT_NE(blas.config.find("OpenBLAS"), std::string::npos) << blas.config;
  EXPECT_GT(blas.threads, 0);
}

} // namespace

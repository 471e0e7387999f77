//===- CpuBlas.cpp - The CPU's features and the BLAS kernel that fits ----===//

#include "txl/rt/device/CpuBlas.h"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

// OpenBLAS's own queries (see CpuBlas.h for why not cblas.h).
extern "C" char *openblas_get_config(void);
extern "C" char *openblas_get_corename(void);

namespace txl::rt {

namespace {

/// Set in the environment of the process restarted with OPENBLAS_CORETYPE,
/// so that it restarts once at most.
constexpr const char *kRestartedVariable = "TXL_BLAS_RESTARTED";

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string trim(std::string text) {
  size_t begin = text.find_first_not_of(' ');
  size_t end = text.find_last_not_of(' ');
  return begin == std::string::npos ? std::string()
                                    : text.substr(begin, end - begin + 1);
}

} // namespace

CpuFeatures detectCpu() {
  CpuFeatures cpu;
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0x80000000, &a, &b, &c, &d) && a >= 0x80000004) {
    char brand[49] = {};
    for (unsigned leaf = 0; leaf < 3; ++leaf) {
      unsigned regs[4];
      __get_cpuid(0x80000002 + leaf, &regs[0], &regs[1], &regs[2], &regs[3]);
      std::memcpy(brand + 16 * leaf, regs, sizeof(regs));
    }
    cpu.brand = trim(brand);
  }
  if (!__get_cpuid(1, &a, &b, &c, &d))
    return cpu;
  unsigned baseFamily = (a >> 8) & 0xf, baseModel = (a >> 4) & 0xf;
  cpu.family =
      int(baseFamily == 0xf ? baseFamily + ((a >> 20) & 0xff) : baseFamily);
  cpu.model = int(baseFamily == 0x6 || baseFamily == 0xf
                      ? baseModel + (((a >> 16) & 0xf) << 4)
                      : baseModel);
  bool fma = c & (1u << 12), osxsave = c & (1u << 27), avx = c & (1u << 28);
  // The registers the OS saves: xmm/ymm (bits 1, 2), opmask and zmm (5-7),
  // AMX tiles (17, 18).
  unsigned long long xcr0 = 0;
  if (osxsave) {
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    xcr0 = (static_cast<unsigned long long>(hi) << 32) | lo;
  }
  bool ymm = avx && (xcr0 & 0x6) == 0x6;
  bool zmm = ymm && (xcr0 & 0xe0) == 0xe0;
  bool tiles = (xcr0 & 0x60000) == 0x60000;
  unsigned max = 0;
  __get_cpuid(0, &max, &b, &c, &d);
  // The vendor string is ebx, edx, ecx: "Genu" "ineI" "ntel".
  cpu.intel = b == 0x756e6547u && d == 0x49656e69u && c == 0x6c65746eu;
  if (max < 7)
    return cpu;
  __cpuid_count(7, 0, a, b, c, d);
  cpu.avx2 = ymm && (b & (1u << 5));
  cpu.fma = ymm && fma;
  cpu.avx512 = zmm && (b & (1u << 16)) && (b & (1u << 17)) &&
               (b & (1u << 30)) && (b & (1u << 31));
  cpu.amx = tiles && (d & (1u << 24)) && (d & (1u << 22));
  cpu.x86_64_v4 = cpu.avx512 && cpu.avx2 && cpu.fma && (b & (1u << 28));
  unsigned subleaves = a;
  if (subleaves >= 1) {
    __cpuid_count(7, 1, a, b, c, d);
    cpu.avx512bf16 = cpu.avx512 && (a & (1u << 5));
  }
#endif
  return cpu;
}

BlasInfo blasInfo() {
  BlasInfo info;
  if (const char *config = openblas_get_config())
    info.config = trim(config);
  if (const char *core = openblas_get_corename())
    info.kernel = core;
  info.threads = openblas_get_num_threads();
  return info;
}

bool kernelUsesAvx2(std::string_view kernel) {
  std::string name = lower(kernel);
  for (const char *avx2 :
       {"haswell", "zen", "skylakex", "cooperlake", "sapphirerapids"})
    if (name == avx2)
      return true;
  return false;
}

std::string kernelFor(const CpuFeatures &cpu) {
  if (cpu.avx512)
    return "SkylakeX";
  if (cpu.avx2 && cpu.fma)
    return "Haswell";
  return "";
}

BlasKernelAction decideBlasKernel(const CpuFeatures &cpu,
                                  std::string_view runningKernel,
                                  const char *coreTypeEnv, bool restarted) {
  BlasKernelAction action;
  std::string fitting = kernelFor(cpu);
  if (fitting.empty() || kernelUsesAvx2(runningKernel))
    return action;
  if (!coreTypeEnv && !restarted) {
    action.kind = BlasKernelAction::Restart;
    action.kernel = fitting;
    return action;
  }
  action.kind = BlasKernelAction::Warn;
  action.kernel = fitting;
  std::string cpuName =
      cpu.brand.empty()
          ? fmt::format("family {} model {}", cpu.family, cpu.model)
          : fmt::format("{} (family {} model {})", cpu.brand, cpu.family,
                        cpu.model);
  action.warning =
      coreTypeEnv && !restarted
          ? fmt::format(
                "warning: OpenBLAS runs its {} kernels (OPENBLAS_CORETYPE={}) "
                "on {}, which has {}: its matrix products run several times "
                "slower than they can; unset OPENBLAS_CORETYPE or set it to {}",
                runningKernel, coreTypeEnv, cpuName,
                cpu.avx512 ? "AVX-512" : "AVX2", fitting)
          : fmt::format(
                "warning: OpenBLAS runs its {} kernels on {}, which has {}, "
                "and did not take OPENBLAS_CORETYPE={}: its matrix products "
                "run several times slower than they can; install an OpenBLAS "
                "that knows this CPU",
                runningKernel, cpuName, cpu.avx512 ? "AVX-512" : "AVX2",
                fitting);
  return action;
}

void ensureBlasKernel(const char *prog, char **argv) {
  CpuFeatures cpu = detectCpu();
  BlasInfo blas = blasInfo();
  const char *restarted = std::getenv(kRestartedVariable);
  BlasKernelAction action =
      decideBlasKernel(cpu, blas.kernel, std::getenv("OPENBLAS_CORETYPE"),
                       restarted && *restarted);
  if (action.kind == BlasKernelAction::Restart) {
    // OpenBLAS chose its kernels when it loaded, before main: only a new
    // process can take another.
    ::setenv("OPENBLAS_CORETYPE", action.kernel.c_str(), 1);
    ::setenv(kRestartedVariable, "1", 1);
    std::fflush(nullptr);
    ::execv("/proc/self/exe", argv);
    // Still here: the restart failed; say so and go on.
    ::unsetenv("OPENBLAS_CORETYPE");
    action = decideBlasKernel(cpu, blas.kernel, nullptr, /*restarted=*/true);
  }
  if (action.kind == BlasKernelAction::Warn)
    std::fprintf(stderr, "%s: %s\n", prog, action.warning.c_str());
}

std::string blasLine() {
  BlasInfo blas = blasInfo();
  CpuFeatures cpu = detectCpu();
  // "OpenBLAS 0.3.21 DYNAMIC_ARCH ..." -> "OpenBLAS 0.3.21".
  std::string name = blas.config;
  size_t second = name.find(' ', name.find(' ') + 1);
  if (second != std::string::npos)
    name.resize(second);
  std::vector<std::string> features;
  if (cpu.avx2)
    features.push_back("avx2");
  if (cpu.avx512)
    features.push_back("avx512");
  if (cpu.avx512bf16)
    features.push_back("avx512bf16");
  if (cpu.amx)
    features.push_back("amx");
  std::string joined;
  for (const std::string &f : features)
    joined += (joined.empty() ? "" : " ") + f;
  return fmt::format("blas: {} (kernel {}, {} threads) | cpu: {} ({})",
                     name.empty() ? "OpenBLAS" : name, blas.kernel,
                     blas.threads, cpu.brand.empty() ? "unknown" : cpu.brand,
                     joined.empty() ? "no avx2" : joined);
}

} // namespace txl::rt

/// The byte the generated code's x86-64-v4 variants are chosen by
/// (txl/Target/ObjectEmitter.h, kX86_64V4Flag): set when the runtime loads,
/// from cpuid, unless TXL_X86_64_V4=0 keeps the x86-64-v3 code (to compare
/// the two, or to test the fallback on an AVX-512 machine).
extern "C" uint8_t txl_rt_x86_64_v4 = [] {
  const char *env = std::getenv("TXL_X86_64_V4");
  return uint8_t(txl::rt::detectCpu().x86_64_v4 &&
                 !(env && std::string_view(env) == "0"));
}();

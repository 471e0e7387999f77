//===- OneMkl.cpp - oneMKL, loaded once for the CPU's products -----------===//
//
// See OneMkl.h.
//
//===----------------------------------------------------------------------===//

#include "OneMkl.h"

#include "txl/rt/support/Status.h"

namespace txl::rt {
namespace {

/// MKL_THREADING_SEQUENTIAL of mkl_service.h.
constexpr int kMklThreadingSequential = 1;

OneMkl load() {
  OneMkl mkl;
  try {
    mkl.library = openFirstLibrary({"libmkl_rt.so.3", "libmkl_rt.so.2",
                                    "/opt/txlc/mkl/lib/libmkl_rt.so.3"},
                                   "oneMKL");
    const char *requirement = "the runtime needs oneMKL 2021 or newer";
    auto setLayer = reinterpret_cast<int (*)(int)>(
        mkl.library->symbol("MKL_Set_Threading_Layer", requirement));
    auto version = reinterpret_cast<void (*)(char *, int)>(
        mkl.library->symbol("MKL_Get_Version_String", requirement));
    mkl.sgemm = reinterpret_cast<MklSgemm>(
        mkl.library->symbol("cblas_sgemm", requirement));
    mkl.bf16Gemm = reinterpret_cast<MklBf16Gemm>(
        mkl.library->symbol("cblas_gemm_bf16bf16f32", requirement));
    setLayer(kMklThreadingSequential);
    char text[256] = {};
    version(text, sizeof(text) - 1);
    // "Intel(R) oneAPI Math Kernel Library Version 2026.2-Product Build
    // ..." -> "2026.2".
    std::string name = text;
    size_t at = name.find("Version ");
    mkl.version =
        at == std::string::npos
            ? "?"
            : name.substr(at + 8, name.find_first_of("- ", at + 8) - at - 8);
  } catch (const Error &error) {
    mkl = OneMkl();
    mkl.error = error.what();
  }
  return mkl;
}

} // namespace

const OneMkl &oneMkl() {
  static const OneMkl instance = load();
  return instance;
}

} // namespace txl::rt

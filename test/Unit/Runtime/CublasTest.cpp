//===- CublasTest.cpp - cuBLAS's table ------------------------------------===//
//
// cuBLAS as a user meets it: loaded by dlopen (from the toolkit here: no
// GPU, so nothing runs on it), missing, or not cuBLAS. Built with the CUDA
// backend (TXL_ENABLE_CUDA).
//
//===----------------------------------------------------------------------===//

#include "txl/rt/device/Cublas.h"
#include "txl/rt/support/Status.h"

#include "TestUtil.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

namespace txl::rt {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr const char *kToolkitCublas = "/usr/local/cuda/lib64/libcublas.so.13";

// The default search finds the toolkit's library although /usr/local/cuda
// is not on the loader's path, and every symbol resolves.
TEST(CublasTest, CublasFromTheToolkit) {
  if (!std::filesystem::exists(kToolkitCublas))
    GTEST_SKIP() << kToolkitCublas << " is not installed";
  Cublas cublas;
#define TXL_CUBLAS_SYMBOL(name, ret, params)                                   \
  EXPECT_NE(cublas.name, nullptr) << #name;
#include "txl/rt/device/CublasSymbols.def"
#undef TXL_CUBLAS_SYMBOL
  EXPECT_THAT(cublas.library(), HasSubstr("libcublas.so.1"));
  cublas.check(CUBLAS_STATUS_SUCCESS, "cublasCreate");
  // Named by the library itself (cublasGetStatusName/String).
  std::string message = test::expectError(
      [&] { cublas.check(CUBLAS_STATUS_ALLOC_FAILED, "cublasCreate"); },
      TXL_UNAVAILABLE, {});
  EXPECT_THAT(message,
              StartsWith("cublasCreate: CUBLAS_STATUS_ALLOC_FAILED ("));
}

// None of the candidates loads: the first one's reason and the others.
TEST(CublasTest, MissingCublasNamesEveryCandidate) {
  std::string message = test::expectError(
      [] {
        Cublas cublas({"libtxl-no-cublas.so.13", "/nowhere/libcublas.so"});
      },
      TXL_UNAVAILABLE, {});
  EXPECT_THAT(message, StartsWith("no cuBLAS: dlopen(libtxl-no-cublas.so.13) "
                                  "failed: "));
  EXPECT_THAT(message, HasSubstr("(also tried: /nowhere/libcublas.so)"));
}

// A library that is not cuBLAS: the first missing symbol is named.
TEST(CublasTest, CublasWithoutTheSymbols) {
  std::string message = test::expectError([] { Cublas cublas({"libm.so.6"}); },
                                          TXL_UNAVAILABLE, {});
  EXPECT_EQ(message, "no usable cuBLAS: libm.so.6 has no symbol "
                     "cublasGetStatusName (the runtime needs cuBLAS from CUDA "
                     "12 or newer)");
}

} // namespace
} // namespace txl::rt

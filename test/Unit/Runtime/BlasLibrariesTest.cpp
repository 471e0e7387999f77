//===- BlasLibrariesTest.cpp - cuBLAS and CLBlast tables, Gemm.h -*- C++
//-*-===//
//
// The BLAS libraries of the GPU targets as a user meets them: loaded by
// dlopen (cuBLAS from the toolkit here: no GPU, so nothing runs on it),
// missing, or answering with a status; and the one row-major ->
// column-major conversion both are given.
//
//===----------------------------------------------------------------------===//

#include "txl/rt/device/BlasLibraries.h"
#include "txl/rt/device/Gemm.h"
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
TEST(BlasLibrariesTest, CublasFromTheToolkit) {
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
TEST(BlasLibrariesTest, MissingCublasNamesEveryCandidate) {
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
TEST(BlasLibrariesTest, CublasWithoutTheSymbols) {
  std::string message = test::expectError([] { Cublas cublas({"libm.so.6"}); },
                                          TXL_UNAVAILABLE, {});
  EXPECT_EQ(message, "no usable cuBLAS: libm.so.6 has no symbol "
                     "cublasGetStatusName (the runtime needs cuBLAS from CUDA "
                     "12 or newer)");
}

// Debian's CLBlast resolves; its own codes and OpenCL's are named.
TEST(BlasLibrariesTest, CLBlastCodes) {
  CLBlast clblast;
  EXPECT_NE(clblast.CLBlastSgemmStridedBatched, nullptr);
  clblast.check(CLBlastSuccess, "sgemm");
  EXPECT_EQ(test::expectError([&] { clblast.check(-1014, "sgemm"); },
                              TXL_UNAVAILABLE, {}),
            "sgemm: CLBlastInvalidLeadDimC (leading dimension of C too "
            "small)");
  EXPECT_EQ(test::expectError([&] { clblast.check(-4, "sgemm"); },
                              TXL_UNAVAILABLE, {}),
            "sgemm: CL_MEM_OBJECT_ALLOCATION_FAILURE (device memory "
            "exhausted)");
  EXPECT_EQ(test::expectError([&] { clblast.check(-3000, "sgemm"); },
                              TXL_UNAVAILABLE, {}),
            "sgemm: CLBlastStatusCode -3000");
  std::string missing = test::expectError(
      [] { CLBlast clblast("libtxl-no-clblast.so.1"); }, TXL_UNAVAILABLE, {});
  EXPECT_THAT(missing,
              StartsWith("no CLBlast: dlopen(libtxl-no-clblast.so.1) failed"));
}

// Row-major C (m x n) = op(A) op(B) is column-major Cᵀ = op(B)ᵀ op(A)ᵀ:
// A and B swap with their descriptors, m and n swap, flags stay with their
// matrices.
TEST(BlasLibrariesTest, ToColumnMajorSwapsOperands) {
  int x = 0, y = 0, z = 0;
  GemmDesc row;
  row.transA = true;
  row.transB = false;
  row.m = 3;
  row.n = 5;
  row.k = 7;
  row.a = {&x, 1, 3, 21};
  row.b = {&y, 2, 5, 35};
  row.c = {&z, 4, 6, 18};
  row.batch = 2;
  GemmDesc col = toColumnMajor(row);
  EXPECT_FALSE(col.transA);
  EXPECT_TRUE(col.transB);
  EXPECT_EQ(col.m, 5);
  EXPECT_EQ(col.n, 3);
  EXPECT_EQ(col.k, 7);
  EXPECT_EQ(col.a.buffer, &y);
  EXPECT_EQ(col.a.ld, 5);
  EXPECT_EQ(col.a.stride, 35);
  EXPECT_EQ(col.b.buffer, &x);
  EXPECT_EQ(col.b.offset, 1);
  EXPECT_EQ(col.c.buffer, &z);
  EXPECT_EQ(col.c.ld, 6);
  EXPECT_EQ(col.batch, 2);
  checkGemm(col);
  col.c.ld = 4; // < m = 5
  EXPECT_THAT(
      test::expectError([&] { checkGemm(col); }, TXL_INVALID_ARGUMENT, {}),
      HasSubstr("a leading dimension is smaller"));
  col.c.ld = 6;
  col.c.stride = 0;
  EXPECT_THAT(
      test::expectError([&] { checkGemm(col); }, TXL_INVALID_ARGUMENT, {}),
      HasSubstr("every product of the batch would write the same C"));
}

} // namespace
} // namespace txl::rt

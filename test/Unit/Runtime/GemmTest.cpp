//===- GemmTest.cpp - The one row-major to column-major conversion --------===//
//
// Gemm.h: the column-major descriptor every backend's library is given,
// and the checks they all require.
//
//===----------------------------------------------------------------------===//

#include "txl/rt/device/Gemm.h"
#include "txl/rt/support/Status.h"

#include "TestUtil.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace txl::rt {
namespace {

using ::testing::HasSubstr;

// Row-major C (m x n) = op(A) op(B) is column-major Cᵀ = op(B)ᵀ op(A)ᵀ:
// A and B swap with their descriptors, m and n swap, flags stay with their
// matrices.
TEST(GemmTest, ToColumnMajorSwapsOperands) {
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

//===- Bf16GemmTest.cpp - The CPU target's bf16 products ------------------===//
//
// toBf16's rounding, and each bf16 product (the runtime's AVX512-BF16
// kernel where the CPU has AVX512-BF16, oneMKL's, the emulation) against
// the same product computed here in double from the bf16-rounded operands:
// every transpose pair and both orders, padded leading dimensions, and
// sizes past each of the kernel's blocks and register tiles (odd k, k over
// two blocks, rows and columns of partial tiles). test/Integration/
// bf16-cpu.test runs executables with each.
//
//===----------------------------------------------------------------------===//

#include "txl/rt/device/Bf16Gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace txl::rt;

namespace {

TEST(Bf16GemmTest, RoundsToNearestEven) {
  EXPECT_EQ(toBf16(1.0f), 0x3f80);
  // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: ties go to the even 1.
  EXPECT_EQ(toBf16(1.0f + 0x1p-8f), 0x3f80);
  // 1 + 3 * 2^-8 lies halfway between 1 + 2^-7 (odd) and 1 + 2^-6: up.
  EXPECT_EQ(toBf16(1.0f + 3 * 0x1p-8f), 0x3f82);
  // Just above the halfway point rounds up.
  EXPECT_EQ(toBf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);
  EXPECT_EQ(toBf16(-2.0f), 0xc000);
  EXPECT_EQ(toBf16(std::numeric_limits<float>::infinity()), 0x7f80);
  // The largest float rounds up to infinity, as IEEE rounding does.
  EXPECT_EQ(toBf16(std::numeric_limits<float>::max()), 0x7f80);
  // A NaN stays NaN, even one whose low bits would carry into the sign.
  uint32_t nanBits = 0x7fffffff;
  float nan;
  std::memcpy(&nan, &nanBits, sizeof(nan));
  EXPECT_TRUE(std::isnan(fromBf16(toBf16(nan))));
  EXPECT_TRUE(std::isnan(fromBf16(toBf16(-nan))));
  EXPECT_EQ(fromBf16(0x3f81), 1.0f + 0x1p-7f);
}

constexpr int kRowMajor = 101, kColMajor = 102, kNoTrans = 111, kTrans = 112;

/// op(X) of a row-major X stored with leading dimension ld.
float at(const std::vector<float> &x, int ld, bool trans, int i, int j) {
  return trans ? x[size_t(j) * ld + i] : x[size_t(i) * ld + j];
}

struct Shape {
  int m, n, k;
};

/// The product `product` of every transpose pair in both orders, against
/// double sums of the rounded operands (and measurably off the unrounded
/// ones). A column-major call is checked as the row-major product it is:
/// C (n x m, row-major) = op(B)ᵀ op(A)ᵀ, where a column-major operand's
/// storage is its transpose's, row-major.
void checkProduct(Bf16Product product, Shape shape, float beta) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const int m = shape.m, n = shape.n, k = shape.k, pad = 3;
  for (int order : {kRowMajor, kColMajor})
    for (bool transA : {false, true})
      for (bool transB : {false, true}) {
        SCOPED_TRACE(::testing::Message()
                     << "m " << m << " n " << n << " k " << k << " order "
                     << order << " transA " << transA << " transB " << transB
                     << " beta " << beta);
        // Row-major view: C (rows x cols) = op(X) op(Y), X rows x k.
        const bool row = order == kRowMajor;
        const int rows = row ? m : n, cols = row ? n : m;
        const bool tX = row ? transA : transB, tY = row ? transB : transA;
        int ldx = (tX ? rows : k) + pad, ldy = (tY ? k : cols) + pad;
        int ldc = cols + pad;
        std::vector<float> x(size_t(tX ? k : rows) * ldx),
            y(size_t(tY ? cols : k) * ldy), c(size_t(rows) * ldc);
        for (float &v : x)
          v = dist(rng);
        for (float &v : y)
          v = dist(rng);
        for (float &v : c)
          v = beta == 0.0f ? std::numeric_limits<float>::quiet_NaN()
                           : dist(rng);
        std::vector<float> c0 = c;
        const float alpha = 0.75f;
        if (row)
          sgemmBf16(product, kRowMajor, transA ? kTrans : kNoTrans,
                    transB ? kTrans : kNoTrans, m, n, k, alpha, x.data(), ldx,
                    y.data(), ldy, beta, c.data(), ldc);
        else // column-major A = Yᵀ (stored as Y is), B = Xᵀ
          sgemmBf16(product, kColMajor, transA ? kTrans : kNoTrans,
                    transB ? kTrans : kNoTrans, m, n, k, alpha, y.data(), ldy,
                    x.data(), ldx, beta, c.data(), ldc);
        double worstRounded = 0, worstExact = 0;
        for (int i = 0; i < rows; ++i)
          for (int j = 0; j < cols; ++j) {
            double rounded = 0, exact = 0;
            for (int p = 0; p < k; ++p) {
              float u = at(x, ldx, tX, i, p), v = at(y, ldy, tY, p, j);
              rounded += double(fromBf16(toBf16(u))) * fromBf16(toBf16(v));
              exact += double(u) * v;
            }
            // beta = 0: C's NaNs are not read.
            double base =
                beta == 0.0f ? 0.0 : beta * double(c0[size_t(i) * ldc + j]);
            double got = c[size_t(i) * ldc + j];
            ASSERT_FALSE(std::isnan(got)) << i << " " << j;
            worstRounded = std::max(worstRounded,
                                    std::abs(got - (alpha * rounded + base)));
            worstExact =
                std::max(worstExact, std::abs(got - (alpha * exact + base)));
          }
        // f32 sums of k terms of magnitude < 1.
        EXPECT_LT(worstRounded, 1e-7 * k + 1e-6);
        // The negative control: the operands were rounded, so the result is
        // measurably off the product of the unrounded ones.
        if (k >= 16)
          EXPECT_GT(worstExact, 1e-3);
        // The padding of C is left alone.
        for (int i = 0; i < rows; ++i)
          for (int j = cols; j < ldc; ++j)
            EXPECT_TRUE(std::memcmp(&c[size_t(i) * ldc + j],
                                    &c0[size_t(i) * ldc + j],
                                    sizeof(float)) == 0);
      }
}

const Shape kShapes[] = {{37, 29, 70}, {1, 1, 1}, {13, 33, 7}};

TEST(Bf16GemmTest, EmulatedMatchesTheProductOfRoundedOperands) {
  for (Shape shape : kShapes)
    checkProduct(Bf16Product::Emulated, shape, 0.5f);
  checkProduct(Bf16Product::Emulated, kShapes[0], 0.0f);
}

TEST(Bf16GemmTest, OneMklMatchesTheProductOfRoundedOperands) {
  if (!bf16ProductAvailable(Bf16Product::OneMkl))
    GTEST_SKIP() << "oneMKL does not load: " << bf16ProductLine();
  for (Shape shape : kShapes)
    checkProduct(Bf16Product::OneMkl, shape, 0.5f);
  checkProduct(Bf16Product::OneMkl, kShapes[0], 0.0f);
}

TEST(Bf16GemmTest, Avx512Bf16MatchesTheProductOfRoundedOperands) {
  if (!bf16ProductAvailable(Bf16Product::Avx512Bf16))
    GTEST_SKIP() << "this CPU has no AVX512-BF16";
  for (Shape shape : kShapes)
    checkProduct(Bf16Product::Avx512Bf16, shape, 0.5f);
  checkProduct(Bf16Product::Avx512Bf16, kShapes[0], 0.0f);
  // Past the kernel's blocks (KC 256, MC 96, NC 512) and tiles (12 x 32):
  // an odd k over three k blocks, rows and columns over two blocks with
  // partial tiles at their ends.
  checkProduct(Bf16Product::Avx512Bf16, {101, 547, 515}, 0.5f);
}

TEST(Bf16GemmTest, Avx512Bf16WithoutProductsScalesC) {
  if (!bf16ProductAvailable(Bf16Product::Avx512Bf16))
    GTEST_SKIP() << "this CPU has no AVX512-BF16";
  // k = 0 (and alpha = 0): C = beta C, and C is not read where beta = 0.
  std::vector<float> c = {1.0f, std::numeric_limits<float>::quiet_NaN(), 3.0f,
                          4.0f};
  float unused = 1.0f;
  sgemmBf16(Bf16Product::Avx512Bf16, kRowMajor, kNoTrans, kNoTrans, 2, 2, 0,
            1.0f, &unused, 1, &unused, 2, 0.0f, c.data(), 2);
  EXPECT_EQ(c, std::vector<float>(4, 0.0f));
  c = {1.0f, 2.0f, 3.0f, 4.0f};
  sgemmBf16(Bf16Product::Avx512Bf16, kRowMajor, kNoTrans, kNoTrans, 2, 2, 1,
            0.0f, &unused, 1, &unused, 2, 2.0f, c.data(), 2);
  EXPECT_EQ(c, (std::vector<float>{2.0f, 4.0f, 6.0f, 8.0f}));
}

TEST(Bf16GemmTest, NamesWhereTheProductsRun) {
  std::string line = bf16ProductLine();
  EXPECT_TRUE(line.rfind("txlc's AVX512-BF16 kernel (vdpbf16ps: ", 0) == 0 ||
              line.rfind("oneMKL ", 0) == 0 || line.rfind("emulated (", 0) == 0)
      << line;
}

} // namespace

//===- Bf16GemmTest.cpp - The CPU target's bf16 products ------------------===//
//
// toBf16's rounding, and txl_rt_sgemm_bf16 against the same product
// computed here in double from the bf16-rounded operands, for every
// transpose pair and padded leading dimensions, with whichever product this
// process loaded (oneMKL's, or the emulation under TXL_BF16_GEMM=emulate;
// test/Integration/bf16-cpu.test runs executables with both).
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

constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;

/// op(X) of a row-major X stored with leading dimension ld.
float at(const std::vector<float> &x, int ld, bool trans, int i, int j) {
  return trans ? x[size_t(j) * ld + i] : x[size_t(i) * ld + j];
}

TEST(Bf16GemmTest, MatchesTheProductOfRoundedOperands) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const int m = 37, n = 29, k = 70, pad = 3;
  for (bool transA : {false, true})
    for (bool transB : {false, true}) {
      SCOPED_TRACE(::testing::Message()
                   << "transA " << transA << " transB " << transB);
      int lda = (transA ? m : k) + pad, ldb = (transB ? k : n) + pad;
      int ldc = n + pad;
      std::vector<float> a(size_t(transA ? k : m) * lda),
          b(size_t(transB ? n : k) * ldb), c(size_t(m) * ldc);
      for (float &x : a)
        x = dist(rng);
      for (float &x : b)
        x = dist(rng);
      for (float &x : c)
        x = dist(rng);
      std::vector<float> c0 = c;
      const float alpha = 0.75f, beta = 0.5f;
      txl_rt_sgemm_bf16(kRowMajor, transA ? kTrans : kNoTrans,
                        transB ? kTrans : kNoTrans, m, n, k, alpha, a.data(),
                        lda, b.data(), ldb, beta, c.data(), ldc);
      double worstRounded = 0, worstExact = 0;
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
          double rounded = 0, exact = 0;
          for (int p = 0; p < k; ++p) {
            float x = at(a, lda, transA, i, p), y = at(b, ldb, transB, p, j);
            rounded += double(fromBf16(toBf16(x))) * fromBf16(toBf16(y));
            exact += double(x) * y;
          }
          double base = beta * double(c0[size_t(i) * ldc + j]);
          double got = c[size_t(i) * ldc + j];
          worstRounded =
              std::max(worstRounded, std::abs(got - (alpha * rounded + base)));
          worstExact =
              std::max(worstExact, std::abs(got - (alpha * exact + base)));
        }
      // f32 sums of k = 70 terms of magnitude < 1.
      EXPECT_LT(worstRounded, 2e-5);
      // The negative control: the operands were rounded, so the result is
      // measurably off the product of the unrounded ones.
      EXPECT_GT(worstExact, 1e-3);
      // The padding of C is left alone.
      for (int i = 0; i < m; ++i)
        for (int j = n; j < ldc; ++j)
          EXPECT_EQ(c[size_t(i) * ldc + j], c0[size_t(i) * ldc + j]);
    }
}

TEST(Bf16GemmTest, NamesWhereTheProductsRun) {
  std::string line = bf16ProductLine();
  EXPECT_TRUE(line.rfind("oneMKL ", 0) == 0 || line.rfind("emulated (", 0) == 0)
      << line;
}

} // namespace

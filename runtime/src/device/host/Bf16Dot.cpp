//===- Bf16Dot.cpp - bf16 products on AVX512-BF16's dot product ----------===//
//
// bf16DotGemm (Bf16Dot.h), blocked as BLAS products are (Goto and van de
// Geijn, "Anatomy of high-performance matrix multiplication", 2008): a
// block of KC rows × NC columns of op(B) is packed into strips of NR
// columns, a block of MC rows × KC of op(A) into strips of MR rows, and a
// register tile of MR × NR accumulators is summed over the block's k. The
// packing rounds to bf16 and pairs consecutive k, the layout `vdpbf16ps`
// takes: a 32-bit word holds op(X)[i][2q] (low half) and op(X)[i][2q + 1],
// and one instruction adds both products of 16 columns to their f32 sums.
// An odd k's last pair is completed with zeros, as are rows and columns
// past the edge, which the write-back leaves out.
//
//===----------------------------------------------------------------------===//

#include "Bf16Dot.h"

#include "txl/rt/device/Bf16Gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace txl::rt {
namespace {

/// The register tile: MR rows × NR columns of f32 sums, 2 · MR zmm
/// accumulators (24 of the 32), the two B vectors of a step and the
/// broadcast A word in the rest. (test/Integration/bf16-dot-cpu.test
/// compiles this file with TXL_BF16_DOT_MR=16, 32 accumulators, to show
/// that its loop check fails on a tile that spills.)
#ifndef TXL_BF16_DOT_MR
#define TXL_BF16_DOT_MR 12
#endif
constexpr int MR = TXL_BF16_DOT_MR, NR = 32;
/// The packed blocks: a B strip of KC × NR (16 KiB of bf16) stays in L1
/// while MC rows of A (48 KiB) stream from L2; NC columns of B (256 KiB)
/// stay in L2 for the whole of A.
constexpr int KC = 256, MC = 8 * MR, NC = 512;
static_assert(KC % 2 == 0 && NC % NR == 0);

/// Two bf16-rounded values as the 32-bit word of a pair: `lo` in the low
/// half, as vdpbf16ps pairs them.
inline uint32_t pair(float lo, float hi) {
  return uint32_t(toBf16(lo)) | uint32_t(toBf16(hi)) << 16;
}

/// Packs op(X)'s block of rows [p0, p0 + kc) (the k dimension) and lines
/// [l0, l0 + lines) (op(A)'s rows or op(B)'s columns) into strips of W
/// lines: word (strip · kc2 + q) · W + w holds lines l0 + strip · W + w at
/// k = p0 + 2q and p0 + 2q + 1. `kMajor`: op(X)[line][p] is
/// x[p · ld + line] (consecutive lines adjacent in memory), otherwise
/// x[line · ld + p].
template <int W>
__attribute__((target("avx512f,avx512bw,avx512vl"))) void
pack(const float *x, int ld, bool kMajor, int p0, int kc, int l0, int lines,
     uint32_t *out) {
  const int kc2 = (kc + 1) / 2, pairs = kc / 2;
  for (int s = 0; s * W < lines; ++s) {
    uint32_t *strip = out + size_t(s) * kc2 * W;
    const int first = l0 + s * W, count = std::min(W, lines - s * W);
    if (kMajor) {
      for (int q = 0; q < pairs; ++q) {
        const float *r0 = x + size_t(p0 + 2 * q) * ld + first, *r1 = r0 + ld;
        uint32_t *o = strip + size_t(q) * W;
        for (int w = 0; w < count; ++w)
          o[w] = pair(r0[w], r1[w]);
        for (int w = count; w < W; ++w)
          o[w] = 0;
      }
      if (kc % 2) {
        const float *r0 = x + size_t(p0 + kc - 1) * ld + first;
        uint32_t *o = strip + size_t(pairs) * W;
        for (int w = 0; w < count; ++w)
          o[w] = pair(r0[w], 0.0f);
        for (int w = count; w < W; ++w)
          o[w] = 0;
      }
    } else {
      for (int w = 0; w < count; ++w) {
        const float *line = x + size_t(first + w) * ld + p0;
        for (int q = 0; q < pairs; ++q)
          strip[size_t(q) * W + w] = pair(line[2 * q], line[2 * q + 1]);
        if (kc % 2)
          strip[size_t(pairs) * W + w] = pair(line[kc - 1], 0.0f);
      }
      for (int w = count; w < W; ++w)
        for (int q = 0; q < kc2; ++q)
          strip[size_t(q) * W + w] = 0;
    }
  }
}

/// One register tile: C[0:mr, 0:nr] = alpha · Σ_q a[q] · b[q] + beta · C
/// over kc2 pairs (a: kc2 × MR words, b: kc2 × NR words); C is not read
/// where beta = 0.
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) void
tile(int kc2, const uint32_t *a, const uint32_t *b, float *c, int ldc, int mr,
     int nr, float alpha, float beta) {
  __m512 acc[MR][2];
  for (int r = 0; r < MR; ++r)
    acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int q = 0; q < kc2; ++q) {
    __m512bh b0 = (__m512bh)_mm512_loadu_si512(b);
    __m512bh b1 = (__m512bh)_mm512_loadu_si512(b + 16);
#pragma clang loop unroll(full)
    for (int r = 0; r < MR; ++r) {
      __m512bh ar = (__m512bh)_mm512_set1_epi32(int(a[r]));
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], ar, b0);
      acc[r][1] = _mm512_dpbf16_ps(acc[r][1], ar, b1);
    }
    a += MR;
    b += NR;
  }
  const __mmask16 m0 = nr >= 16 ? __mmask16(0xffff) : __mmask16((1u << nr) - 1);
  const __mmask16 m1 = nr >= 32   ? __mmask16(0xffff)
                       : nr <= 16 ? __mmask16(0)
                                  : __mmask16((1u << (nr - 16)) - 1);
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
  for (int r = 0; r < mr; ++r) {
    float *row = c + size_t(r) * ldc;
    for (int h = 0; h < 2; ++h) {
      __mmask16 m = h ? m1 : m0;
      __m512 x = _mm512_mul_ps(va, acc[r][h]);
      if (beta != 0.0f)
        x = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m, row + 16 * h), x);
      _mm512_mask_storeu_ps(row + 16 * h, m, x);
    }
  }
}

} // namespace

void bf16DotGemm(bool transA, bool transB, int m, int n, int k, float alpha,
                 const float *a, int lda, const float *b, int ldb, float beta,
                 float *c, int ldc) {
  if (m <= 0 || n <= 0)
    return;
  if (k <= 0 || alpha == 0.0f) {
    // No products: C = beta · C (BLAS does not read C where beta = 0).
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j)
        c[size_t(i) * ldc + j] =
            beta == 0.0f ? 0.0f : beta * c[size_t(i) * ldc + j];
    return;
  }
  thread_local std::vector<uint32_t> aPack, bPack;
  aPack.resize(size_t(MC) * (KC / 2));
  bPack.resize(size_t(NC) * (KC / 2));
  for (int jc = 0; jc < n; jc += NC) {
    const int nc = std::min(NC, n - jc);
    for (int pc = 0; pc < k; pc += KC) {
      const int kc = std::min(KC, k - pc), kc2 = (kc + 1) / 2;
      // op(B)[p][j] is b[p · ldb + j] (k-major) unless transposed.
      pack<NR>(b, ldb, !transB, pc, kc, jc, nc, bPack.data());
      const float betaHere = pc == 0 ? beta : 1.0f;
      for (int ic = 0; ic < m; ic += MC) {
        const int mc = std::min(MC, m - ic);
        // op(A)[i][p] is a[p · lda + i] (k-major) when transposed.
        pack<MR>(a, lda, transA, pc, kc, ic, mc, aPack.data());
        for (int jr = 0; jr < nc; jr += NR)
          for (int ir = 0; ir < mc; ir += MR)
            tile(kc2, aPack.data() + size_t(ir) * kc2,
                 bPack.data() + size_t(jr) * kc2,
                 c + size_t(ic + ir) * ldc + jc + jr, ldc,
                 std::min(MR, mc - ir), std::min(NR, nc - jr), alpha, betaHere);
      }
    }
  }
}

} // namespace txl::rt

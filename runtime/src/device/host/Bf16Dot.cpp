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

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace txl::rt {
namespace {

/// The register tile: MR rows × NR columns of f32 sums, 2 · MR zmm
/// accumulators (24 of the 32), the two B vectors of a step and the
/// broadcast A word in the rest. (test/Integration/bf16-cpu.test
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

/// The lanes below `n` (0 to 16) of a 16-lane mask.
inline __mmask16 lanesBelow(int n) {
  return n >= 16 ? __mmask16(0xffff) : __mmask16((1u << std::max(n, 0)) - 1);
}

/// 16 f32 rounded to bf16 (vcvtneps2bf16: ties to even, NaN kept quiet,
/// subnormals to zero, as vdpbf16ps takes them anyway), each in the low half
/// of a 32-bit lane.
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) inline __m512i
bf16Lanes(__m512 x) {
  return _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(x));
}

/// The 16 × 16 transpose of 32-bit lanes: row i of the result is lane i of
/// every row of `r`, in order (two unpack stages leave 4 × 4 blocks
/// transposed in each 128-bit lane; two 128-bit shuffles place them).
__attribute__((target("avx512f,avx512bw,avx512vl"))) inline void
transpose16(__m512i r[16]) {
  __m512i t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  // s[4g + j], lane L: rows 4g .. 4g + 3 of column 4L + j.
  __m512i s[16];
  for (int g = 0; g < 4; ++g) {
    s[4 * g + 0] = _mm512_unpacklo_epi64(t[4 * g], t[4 * g + 2]);
    s[4 * g + 1] = _mm512_unpackhi_epi64(t[4 * g], t[4 * g + 2]);
    s[4 * g + 2] = _mm512_unpacklo_epi64(t[4 * g + 1], t[4 * g + 3]);
    s[4 * g + 3] = _mm512_unpackhi_epi64(t[4 * g + 1], t[4 * g + 3]);
  }
  for (int j = 0; j < 4; ++j) {
    __m512i u0 = _mm512_shuffle_i32x4(s[j], s[4 + j], 0x44),
            u1 = _mm512_shuffle_i32x4(s[j], s[4 + j], 0xee),
            u2 = _mm512_shuffle_i32x4(s[8 + j], s[12 + j], 0x44),
            u3 = _mm512_shuffle_i32x4(s[8 + j], s[12 + j], 0xee);
    r[j] = _mm512_shuffle_i32x4(u0, u2, 0x88);
    r[4 + j] = _mm512_shuffle_i32x4(u0, u2, 0xdd);
    r[8 + j] = _mm512_shuffle_i32x4(u1, u3, 0x88);
    r[12 + j] = _mm512_shuffle_i32x4(u1, u3, 0xdd);
  }
}

/// Packs op(X)'s block of rows [p0, p0 + kc) (the k dimension) and lines
/// [l0, l0 + lines) (op(A)'s rows or op(B)'s columns) into strips of W
/// lines: word (strip · kc2 + q) · W + w holds the bf16 values of line
/// l0 + strip · W + w at k = p0 + 2q (low half) and p0 + 2q + 1, zero past
/// the block's lines and an odd kc. `kMajor`: op(X)[line][p] is
/// x[p · ld + line] (consecutive lines adjacent in memory: two rows of 16
/// lines make 16 words), otherwise x[line · ld + p] (consecutive k
/// adjacent: 32 k of 16 lines make 16 × 16 words, transposed in registers
/// into 16 pairs of 16 lines).
template <int W>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) void
pack(const float *x, int ld, bool kMajor, int p0, int kc, int l0, int lines,
     uint32_t *out) {
  const int kc2 = (kc + 1) / 2;
  for (int s = 0; s * W < lines; ++s) {
    uint32_t *strip = out + size_t(s) * kc2 * W;
    const int first = l0 + s * W, count = std::min(W, lines - s * W);
    for (int w0 = 0; w0 < W; w0 += 16) {
      const __mmask16 store = lanesBelow(W - w0);
      if (kMajor) {
        const __mmask16 load = lanesBelow(count - w0);
        for (int q = 0; q < kc2; ++q) {
          const float *r0 = x + size_t(p0 + 2 * q) * ld + first + w0;
          __m512i lo = bf16Lanes(_mm512_maskz_loadu_ps(load, r0));
          __m512i hi = 2 * q + 1 < kc
                           ? bf16Lanes(_mm512_maskz_loadu_ps(load, r0 + ld))
                           : _mm512_setzero_si512();
          _mm512_mask_storeu_epi32(
              strip + size_t(q) * W + w0, store,
              _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
        }
        continue;
      }
      for (int q0 = 0; q0 < kc2; q0 += 16) {
        // 32 k (16 pairs) of each of 16 lines, one line per vector.
        const int ks = kc - 2 * q0;
        const __mmask16 k0 = lanesBelow(ks), k1 = lanesBelow(ks - 16);
        __m512i r[16];
        for (int w = 0; w < 16; ++w) {
          if (w0 + w >= count) {
            r[w] = _mm512_setzero_si512();
            continue;
          }
          const float *line = x + size_t(first + w0 + w) * ld + p0 + 2 * q0;
          r[w] =
              (__m512i)_mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(k1, line + 16),
                                           _mm512_maskz_loadu_ps(k0, line));
        }
        transpose16(r);
        for (int q = 0; q < 16 && q0 + q < kc2; ++q)
          _mm512_mask_storeu_epi32(strip + size_t(q0 + q) * W + w0, store,
                                   r[q]);
      }
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

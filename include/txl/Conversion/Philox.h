//===- Philox.h - Philox4x32-10 in arith ops for dropout masks ----*- C++
//-*-===//
//
// The counter-based generator behind txl.dropout and the fused attention's
// dropatt (Salmon, Moraes, Dror, Shaw, "Parallel Random Numbers: As Easy as
// 1, 2, 3", SC 2011), emitted as arith ops so that the CPU lowering
// (txl-to-linalg) and the GPU kernels (txl-rel-attention-to-gpu) draw the
// same bits for the same element. The layout (TxlOps.td, txl.dropout):
// key = the 64-bit seed's (low, high) words; counter = (e / 4, stream,
// offset low, offset high) for the element's row-major index e; the
// element's word is word e mod 4 of the block; it is kept iff the word's
// top 24 bits, as an integer, are at least ceil(rate · 2^24).
//
//===----------------------------------------------------------------------===//

#ifndef TXL_CONVERSION_PHILOX_H
#define TXL_CONVERSION_PHILOX_H

#include "mlir/Dialect/Arith/IR/Arith.h"

#include <array>
#include <cmath>
#include <cstdint>

namespace mlir::txl::philox {

/// Round multipliers and Weyl key increments (the paper's M_{4x32} and the
/// golden-ratio / sqrt(3) - 1 bumps).
inline constexpr uint32_t kM0 = 0xD2511F53, kM1 = 0xCD9E8D57;
inline constexpr uint32_t kW0 = 0x9E3779B9, kW1 = 0xBB67AE85;
inline constexpr int kRounds = 10;
/// Uniforms in [0, 1) are the top 24 bits of a word times 2^-24: exact in
/// f32 and f64, so `keep = u >= rate` is the integer test
/// `bits >> 8 >= ceil(rate * 2^24)`.
inline constexpr int kUniformBits = 24;

inline Value constantI32(OpBuilder &b, Location loc, uint32_t value) {
  return arith::ConstantOp::create(
      b, loc, b.getI32IntegerAttr(static_cast<int32_t>(value)));
}

/// The smallest kept top-24-bit value for `rate` in [0, 1): ceil(rate ·
/// 2^24), exact (the product only shifts the exponent).
inline uint32_t keepThreshold(double rate) {
  return static_cast<uint32_t>(std::ceil(std::ldexp(rate, kUniformBits)));
}

/// The low and high 32-bit words of the i64 `v`.
inline std::pair<Value, Value> splitWords(OpBuilder &b, Location loc, Value v) {
  Type i32 = b.getI32Type();
  Value shift = arith::ConstantIntOp::create(b, loc, 32, 64);
  return {arith::TruncIOp::create(b, loc, i32, v),
          arith::TruncIOp::create(b, loc, i32,
                                  arith::ShRUIOp::create(b, loc, v, shift))};
}

/// The key of each round: the seed's words (`key`) bumped r times.
inline SmallVector<std::pair<Value, Value>>
roundKeys(OpBuilder &b, Location loc, std::pair<Value, Value> key) {
  SmallVector<std::pair<Value, Value>> keys;
  for (uint32_t r = 0; r < kRounds; ++r)
    keys.push_back(
        {arith::AddIOp::create(b, loc, key.first, constantI32(b, loc, r * kW0)),
         arith::AddIOp::create(b, loc, key.second,
                               constantI32(b, loc, r * kW1))});
  return keys;
}

/// Philox4x32 with one (k0, k1) pair per round, already bumped: each round
/// is (hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0) with (hi0, lo0) = M0 * c0 and
/// (hi1, lo1) = M1 * c2 as 32x32 -> 64-bit products.
inline std::array<Value, 4> philox4x32(OpBuilder &b, Location loc,
                                       std::array<Value, 4> ctr,
                                       ArrayRef<std::pair<Value, Value>> keys) {
  Value m0 = constantI32(b, loc, kM0);
  Value m1 = constantI32(b, loc, kM1);
  for (auto [k0, k1] : keys) {
    auto p0 = arith::MulUIExtendedOp::create(b, loc, m0, ctr[0]);
    auto p1 = arith::MulUIExtendedOp::create(b, loc, m1, ctr[2]);
    Value x0 = arith::XOrIOp::create(
        b, loc, arith::XOrIOp::create(b, loc, p1.getHigh(), ctr[1]), k0);
    Value x2 = arith::XOrIOp::create(
        b, loc, arith::XOrIOp::create(b, loc, p0.getHigh(), ctr[3]), k1);
    ctr = {x0, p1.getLow(), x2, p0.getLow()};
  }
  return ctr;
}

/// Word `word` (i32 in [0, 4)) of the block `words`.
inline Value selectWord(OpBuilder &b, Location loc, std::array<Value, 4> words,
                        Value word) {
  Value bits = words[3];
  for (int k = 2; k >= 0; --k) {
    Value isK = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, word,
                                      constantI32(b, loc, k));
    bits = arith::SelectOp::create(b, loc, isK, words[k], bits);
  }
  return bits;
}

/// Whether the element whose word is `bits` is kept: its top 24 bits are at
/// least `minKept` (i32; keepThreshold).
inline Value isKept(OpBuilder &b, Location loc, Value bits, Value minKept) {
  Value top = arith::ShRUIOp::create(b, loc, bits,
                                     constantI32(b, loc, 32 - kUniformBits));
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, top, minKept);
}

} // namespace mlir::txl::philox

#endif // TXL_CONVERSION_PHILOX_H

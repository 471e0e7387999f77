//===- Dropout.cpp - Lower txl.dropout to Philox4x32-10 bits -----*- C++ -*-===//
//
// Counter-based dropout: the random word of every element is Philox4x32-10
// (Salmon, Moraes, Dror, Shaw, "Parallel Random Numbers: As Easy as 1, 2,
// 3", SC 2011) of a counter built from the element's index, the site's
// stream and the call's offset, under the 64-bit seed as key. Nothing is
// stored and nothing is sequential: the backward pass recomputes the mask
// from the same operands, and any evaluation order (loops, threads, a GPU)
// draws the same bits.
//
//===----------------------------------------------------------------------===//

#include "Builders.h"
#include "txl/Conversion/Passes.h"
#include "txl/IR/TxlOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"

#include <array>
#include <cmath>

using namespace mlir;
using namespace mlir::txl;

// Philox4x32 round multipliers and Weyl key increments (the paper's
// M_{4x32} and the golden-ratio / sqrt(3) - 1 bumps).
static constexpr uint32_t kPhiloxM0 = 0xD2511F53, kPhiloxM1 = 0xCD9E8D57;
static constexpr uint32_t kPhiloxW0 = 0x9E3779B9, kPhiloxW1 = 0xBB67AE85;
static constexpr int kPhiloxRounds = 10;
/// Uniforms in [0, 1) are the top 24 bits of a word times 2^-24: exact in
/// f32 and f64, so `keep = u >= rate` is the integer test
/// `bits >> 8 >= ceil(rate * 2^24)`.
static constexpr int kUniformBits = 24;

static Value constantI32(OpBuilder &b, Location loc, uint32_t value) {
  return arith::ConstantOp::create(
      b, loc, b.getI32IntegerAttr(static_cast<int32_t>(value)));
}

/// The low and high 32-bit words of the i64 `v`.
static std::pair<Value, Value> splitWords(OpBuilder &b, Location loc, Value v) {
  Type i32 = b.getI32Type();
  Value shift = arith::ConstantIntOp::create(b, loc, 32, 64);
  return {arith::TruncIOp::create(b, loc, i32, v),
          arith::TruncIOp::create(b, loc, i32,
                                  arith::ShRUIOp::create(b, loc, v, shift))};
}

/// Philox4x32 with one (k0, k1) pair per round, already bumped: each round
/// is (hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0) with (hi0, lo0) = M0 * c0 and
/// (hi1, lo1) = M1 * c2 as 32x32 -> 64-bit products.
static std::array<Value, 4>
philox4x32(OpBuilder &b, Location loc, std::array<Value, 4> ctr,
           ArrayRef<std::pair<Value, Value>> roundKeys) {
  Value m0 = constantI32(b, loc, kPhiloxM0);
  Value m1 = constantI32(b, loc, kPhiloxM1);
  for (auto [k0, k1] : roundKeys) {
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

Value mlir::txl::createDropout(OpBuilder &b, Location loc, Value x,
                               const DropoutSite &site,
                               ArrayRef<int64_t> logicalDims) {
  if (site.rate == 0.0)
    return x;
  auto type = cast<RankedTensorType>(x.getType());
  Type et = type.getElementType();
  int64_t rank = type.getRank();
  assert(static_cast<int64_t>(logicalDims.size()) == rank &&
         "one logical position per dimension");
  Type i32 = b.getI32Type(), i64 = b.getI64Type();

  auto dropped = [&](OpBuilder &tb, Location l) {
    // Loop-invariant parts of the key and counter, hoisted out of the body.
    std::pair<Value, Value> key = splitWords(tb, l, site.seed);
    SmallVector<std::pair<Value, Value>> roundKeys;
    for (uint32_t r = 0; r < kPhiloxRounds; ++r)
      roundKeys.push_back(
          {arith::AddIOp::create(tb, l, key.first,
                                 constantI32(tb, l, r * kPhiloxW0)),
           arith::AddIOp::create(tb, l, key.second,
                                 constantI32(tb, l, r * kPhiloxW1))});
    Value stream = arith::ConstantIntOp::create(tb, l, site.stream, 64);
    if (site.streamBase)
      stream = arith::AddIOp::create(tb, l, site.streamBase, stream);
    Value c1 = arith::TruncIOp::create(tb, l, i32, stream);
    std::pair<Value, Value> offset = splitWords(tb, l, site.offset);
    SmallVector<Value> sizes =
        getValueOrCreateConstantIndexOp(tb, l, getSizes(tb, l, x));
    // ceil(rate * 2^24) is exact: the product only shifts the exponent.
    double threshold = std::ceil(std::ldexp(site.rate, kUniformBits));
    Value minKept = constantI32(tb, l, static_cast<uint32_t>(threshold));
    Value scale = arith::ConstantOp::create(
        tb, l, tb.getFloatAttr(et, 1.0 / (1.0 - site.rate)));
    Value zero = arith::ConstantOp::create(tb, l, tb.getFloatAttr(et, 0.0));

    AffineMap id = identityMap(tb.getContext(), rank);
    return createPointwise(
        tb, l, x, ValueRange{x}, {id},
        [&](OpBuilder &nb, Location bl, ValueRange a) -> Value {
          // e: the row-major index in the logical layout.
          Value e = arith::ConstantIndexOp::create(nb, bl, 0);
          for (int64_t d : logicalDims)
            e = arith::AddIOp::create(
                nb, bl, arith::MulIOp::create(nb, bl, e, sizes[d]),
                linalg::IndexOp::create(nb, bl, d));
          Value e64 = arith::IndexCastUIOp::create(nb, bl, i64, e);
          Value two = arith::ConstantIntOp::create(nb, bl, 2, 64);
          Value c0 = arith::TruncIOp::create(
              nb, bl, i32, arith::ShRUIOp::create(nb, bl, e64, two));
          std::array<Value, 4> words = philox4x32(
              nb, bl, {c0, c1, offset.first, offset.second}, roundKeys);
          // Word e mod 4 of the block.
          Value w = arith::TruncIOp::create(
              nb, bl, i32,
              arith::AndIOp::create(
                  nb, bl, e64, arith::ConstantIntOp::create(nb, bl, 3, 64)));
          Value bits = words[3];
          for (int k = 2; k >= 0; --k) {
            Value isK = arith::CmpIOp::create(nb, bl, arith::CmpIPredicate::eq,
                                              w, constantI32(nb, bl, k));
            bits = arith::SelectOp::create(nb, bl, isK, words[k], bits);
          }
          Value top = arith::ShRUIOp::create(
              nb, bl, bits, constantI32(nb, bl, 32 - kUniformBits));
          Value keep = arith::CmpIOp::create(nb, bl, arith::CmpIPredicate::uge,
                                             top, minKept);
          Value scaled = arith::MulFOp::create(nb, bl, a[0], scale);
          return arith::SelectOp::create(nb, bl, keep, scaled, zero);
        });
  };
  auto ifOp = scf::IfOp::create(
      b, loc, site.training,
      [&](OpBuilder &tb, Location l) {
        scf::YieldOp::create(tb, l, dropped(tb, l));
      },
      [&](OpBuilder &eb, Location l) { scf::YieldOp::create(eb, l, x); });
  return ifOp.getResult(0);
}

namespace {

// txl.dropout(x) => scf.if training { keep(e) ? x / (1 - rate) : 0 } else { x }
struct DropoutLowering : public OpRewritePattern<DropoutOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(DropoutOp op,
                                PatternRewriter &rewriter) const override {
    DropoutSite site{op.getSeed(),
                     op.getOffset(),
                     op.getTraining(),
                     op.getStreamBase(),
                     op.getRate().convertToDouble(),
                     static_cast<int64_t>(op.getStream())};
    SmallVector<int64_t> rowMajor =
        llvm::to_vector(llvm::seq<int64_t>(0, op.getType().getRank()));
    rewriter.replaceOp(op, createDropout(rewriter, op.getLoc(), op.getInput(),
                                         site, rowMajor));
    return success();
  }
};

} // namespace

void mlir::txl::populateTxlDropoutToLinalgPatterns(
    RewritePatternSet &patterns) {
  patterns.add<DropoutLowering>(patterns.getContext());
}

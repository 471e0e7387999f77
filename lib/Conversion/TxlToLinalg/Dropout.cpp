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

/// Word `word` (i32 in [0, 4)) of the block `words`, and the element `x`
/// kept and scaled or zeroed by it: kept iff its top 24 bits, as an integer,
/// are at least `minKept`.
static Value applyWord(OpBuilder &b, Location loc, std::array<Value, 4> words,
                       Value word, Value x, Value minKept, Value scale,
                       Value zero) {
  Value bits = words[3];
  for (int k = 2; k >= 0; --k) {
    Value isK = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, word,
                                      constantI32(b, loc, k));
    bits = arith::SelectOp::create(b, loc, isK, words[k], bits);
  }
  Value top = arith::ShRUIOp::create(b, loc, bits,
                                     constantI32(b, loc, 32 - kUniformBits));
  Value keep =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, top, minKept);
  Value scaled = arith::MulFOp::create(b, loc, x, scale);
  return arith::SelectOp::create(b, loc, keep, scaled, zero);
}

/// Row-major index of the current iteration over the dimensions `dims`
/// (outermost first) of sizes `sizes`, the iteration index of dimension d
/// being `linalg.index indexDims[d]`.
static Value rowMajorIndex(OpBuilder &b, Location loc, ArrayRef<int64_t> dims,
                           ArrayRef<Value> sizes, ArrayRef<int64_t> indexDims) {
  Value e = arith::ConstantIndexOp::create(b, loc, 0);
  for (int64_t d : dims)
    e = arith::AddIOp::create(b, loc,
                              arith::MulIOp::create(b, loc, e, sizes[d]),
                              linalg::IndexOp::create(b, loc, indexDims[d]));
  return e;
}

// The generic writes over x: with scf.if yielding x in eval mode, a fresh
// result buffer in the training branch makes One-Shot Bufferize treat that
// write as conflicting with the read of x (both alias the if's result) and
// copy x first. Written in place, both branches yield x's buffer; x is
// copied only when it is read after the dropout.
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
  // The four elements of a block are consecutive along the innermost logical
  // dimension when its size is a static multiple of 4: then one Philox call
  // serves them all.
  int64_t inner = logicalDims.back();
  int64_t innerSize = type.getDimSize(inner);
  bool blocked =
      !ShapedType::isDynamic(innerSize) && innerSize > 0 && innerSize % 4 == 0;

  auto dropped = [&](OpBuilder &tb, Location l) -> Value {
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
    SmallVector<OpFoldResult> sizeOfrs = getSizes(tb, l, x);
    SmallVector<Value> sizes = getValueOrCreateConstantIndexOp(tb, l, sizeOfrs);
    // ceil(rate * 2^24) is exact: the product only shifts the exponent.
    double threshold = std::ceil(std::ldexp(site.rate, kUniformBits));
    Value minKept = constantI32(tb, l, static_cast<uint32_t>(threshold));
    Value scale = arith::ConstantOp::create(
        tb, l, tb.getFloatAttr(et, 1.0 / (1.0 - site.rate)));
    Value zero = arith::ConstantOp::create(tb, l, tb.getFloatAttr(et, 0.0));
    auto philoxAt = [&](OpBuilder &nb, Location bl, Value block) {
      Value c0 = arith::TruncIOp::create(
          nb, bl, i32, arith::IndexCastUIOp::create(nb, bl, i64, block));
      return philox4x32(nb, bl, {c0, c1, offset.first, offset.second},
                        roundKeys);
    };
    SmallVector<int64_t> sameDims =
        llvm::to_vector(llvm::seq<int64_t>(0, rank));

    if (!blocked) {
      AffineMap id = identityMap(tb.getContext(), rank);
      return createPointwise(
          tb, l, x, ValueRange{x}, {id},
          [&](OpBuilder &nb, Location bl, ValueRange a) -> Value {
            // e: the row-major index in the logical layout; block e / 4,
            // word e mod 4.
            Value e = rowMajorIndex(nb, bl, logicalDims, sizes, sameDims);
            Value four = arith::ConstantIndexOp::create(nb, bl, 4);
            Value word = arith::TruncIOp::create(
                nb, bl, i32,
                arith::IndexCastUIOp::create(
                    nb, bl, i64, arith::RemUIOp::create(nb, bl, e, four)));
            return applyWord(
                nb, bl,
                philoxAt(nb, bl, arith::DivUIOp::create(nb, bl, e, four)), word,
                a[0], minKept, scale, zero);
          },
          /*dest=*/x);
    }

    // x with its innermost logical dimension split into [blocks, 4]; the
    // generic iterates over x's dimensions (that one counting blocks) and,
    // innermost, the word w, so the Philox call is invariant in the w loop.
    MLIRContext *ctx = tb.getContext();
    SmallVector<ReassociationIndices> reassoc;
    SmallVector<OpFoldResult> splitSizes;
    SmallVector<AffineExpr> exprs;
    AffineExpr w = getAffineDimExpr(rank, ctx);
    for (int64_t d = 0; d < rank; ++d) {
      int64_t at = static_cast<int64_t>(splitSizes.size());
      exprs.push_back(getAffineDimExpr(d, ctx));
      if (d != inner) {
        reassoc.push_back({at});
        splitSizes.push_back(sizeOfrs[d]);
        continue;
      }
      reassoc.push_back({at, at + 1});
      splitSizes.push_back(tb.getIndexAttr(innerSize / 4));
      splitSizes.push_back(tb.getIndexAttr(4));
      exprs.push_back(w);
    }
    SmallVector<Value> blockSizes = sizes;
    blockSizes[inner] = arith::ConstantIndexOp::create(tb, l, innerSize / 4);
    Value split = createExpand(tb, l, x, reassoc, splitSizes);
    AffineMap map = AffineMap::get(rank + 1, 0, exprs, ctx);
    Value result =
        linalg::GenericOp::create(
            tb, l, TypeRange{split.getType()}, ValueRange{split},
            ValueRange{split}, {map, map},
            SmallVector<utils::IteratorType>(rank + 1,
                                             utils::IteratorType::parallel),
            [&](OpBuilder &nb, Location bl, ValueRange a) {
              Value block =
                  rowMajorIndex(nb, bl, logicalDims, blockSizes, sameDims);
              Value word = arith::IndexCastUIOp::create(
                  nb, bl, i32, linalg::IndexOp::create(nb, bl, rank));
              linalg::YieldOp::create(
                  nb, bl,
                  ValueRange{applyWord(nb, bl, philoxAt(nb, bl, block), word,
                                       a[0], minKept, scale, zero)});
            })
            .getResult(0);
    return castTo(tb, l, createCollapse(tb, l, result, reassoc), x.getType());
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

//===- Attention.cpp - Lower positions and attention to linalg ---*- C++ -*-===//
//
// txl.pos_emb (sinusoids of distances klen-1 ... 0), txl.masked_softmax, and
// the fused txl.rel_attention. The fused lowering computes AC = (q + u) kᵀ
// with a batched product into the score buffer, then accumulates
// BD[i, j] = (q_i + v) · r[j + qlen - 1 - i] onto it at its shifted position:
// the unshifted positional scores never exist.
//
//===----------------------------------------------------------------------===//

#include "Builders.h"
#include "txl/Conversion/Passes.h"
#include "txl/IR/TxlOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::txl;

/// `x[i, b, n, d] + bias[n, d]`.
static Value addHeadBias(OpBuilder &b, Location loc, Value x, Value bias) {
  MLIRContext *ctx = b.getContext();
  auto type = cast<RankedTensorType>(x.getType());
  AffineMap id = identityMap(ctx, 4);
  AffineMap biasMap = AffineMap::get(
      4, 0, {getAffineDimExpr(2, ctx), getAffineDimExpr(3, ctx)}, ctx);
  return linalg::GenericOp::create(
             b, loc, TypeRange{type}, ValueRange{x, bias},
             ValueRange{createEmpty(b, loc, getSizes(b, loc, x),
                                    type.getElementType())},
             {id, biasMap, id},
             SmallVector<utils::IteratorType>(4, utils::IteratorType::parallel),
             [](OpBuilder &nb, Location l, ValueRange a) {
               linalg::YieldOp::create(
                   nb, l, ValueRange{arith::AddFOp::create(nb, l, a[0], a[1])});
             })
      .getResult(0);
}

/// [len, b, n, d] -> [b·n, len, d], contiguous.
static Value headsFirst(OpBuilder &b, Location loc, Value x) {
  return createCollapse(b, loc, createTranspose(b, loc, x, {1, 2, 0, 3}),
                        {{0, 1}, {2}, {3}});
}

namespace {

// txl.pos_emb(inv_freq, klen, clamp)[k, c] => sin/cos(min(klen-1-k, clamp) * inv_freq[c mod half])
struct PosEmbLowering : public OpRewritePattern<PosEmbOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PosEmbOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    if (type.isDynamicDim(1))
      return rewriter.notifyMatchFailure(op, "feature dimension must be static");
    int64_t half = type.getDimSize(1) / 2;
    Value invFreq = op.getInvFreq(), klen = op.getKlen();
    Value clamp = op.getClampLen();
    SmallVector<Value> dynamicDims;
    if (type.isDynamicDim(0))
      dynamicDims.push_back(klen);
    Value generated = tensor::GenerateOp::create(
        rewriter, loc, type, dynamicDims,
        [&](OpBuilder &b, Location l, ValueRange ivs) {
          Value one = arith::ConstantIndexOp::create(b, l, 1);
          Value dist = arith::SubIOp::create(
              b, l, arith::SubIOp::create(b, l, klen, one), ivs[0]);
          Value pos = arith::IndexCastOp::create(b, l, b.getI64Type(), dist);
          Value zero64 = arith::ConstantIntOp::create(b, l, 0, 64);
          Value clamped = arith::MinSIOp::create(b, l, pos, clamp);
          Value doClamp = arith::CmpIOp::create(
              b, l, arith::CmpIPredicate::sgt, clamp, zero64);
          pos = arith::SelectOp::create(b, l, doClamp, clamped, pos);
          Value posF =
              arith::SIToFPOp::create(b, l, type.getElementType(), pos);
          Value halfC = arith::ConstantIndexOp::create(b, l, half);
          Value isSin = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult,
                                              ivs[1], halfC);
          Value freqIdx = arith::SelectOp::create(
              b, l, isSin, ivs[1], arith::SubIOp::create(b, l, ivs[1], halfC));
          Value freq = tensor::ExtractOp::create(b, l, invFreq, freqIdx);
          Value angle = arith::MulFOp::create(b, l, posF, freq);
          Value value = arith::SelectOp::create(
              b, l, isSin, math::SinOp::create(b, l, angle),
              math::CosOp::create(b, l, angle));
          tensor::YieldOp::create(b, l, value);
        });
    rewriter.replaceOp(op, generated);
    return success();
  }
};

// txl.masked_softmax(s[i, j, b, n]) => mask, max, exp, sum, divide over j
struct MaskedSoftmaxLowering : public OpRewritePattern<MaskedSoftmaxOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MaskedSoftmaxOp op,
                                PatternRewriter &rewriter) const override {
    Value probs = createMaskedSoftmax(
        rewriter, op.getLoc(), op.getScores(),
        ScoreLayout{/*queryDim=*/0, /*keyDim=*/1}, op.getMemLen(),
        op.getSameLength(), op.getScale().convertToDouble());
    rewriter.replaceOp(op, probs);
    return success();
  }
};

// txl.rel_attention => AC = bmm(q + u, k), += BD at r[j + qlen - 1 - i], softmax, bmm(p, v)
struct RelAttentionLowering : public OpRewritePattern<RelAttentionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(RelAttentionOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    Value q = op.getQuery(), k = op.getKey(), v = op.getValue();
    Value r = op.getPosKey();
    SmallVector<OpFoldResult> qs = getSizes(rewriter, loc, q);
    OpFoldResult klenOfr = getSizes(rewriter, loc, k)[0];
    Value qlen = tensor::DimOp::create(rewriter, loc, q, 0);
    Value klen = tensor::DimOp::create(rewriter, loc, k, 0);

    // AC = (q + u) kᵀ per (batch, head): [b, n, i, j].
    Value ac = createBatchMatmul(
        rewriter, loc, headsFirst(rewriter, loc, addHeadBias(rewriter, loc, q, op.getRWBias())),
        headsFirst(rewriter, loc, k), /*transposeRhs=*/true);
    ac = createExpand(rewriter, loc, ac, {{0, 1}, {2}, {3}},
                      {qs[1], qs[2], qs[0], klenOfr});

    // scores[b, n, i, j] += sum_d (q + v)[i, b, n, d] * r[j + qlen - 1 - i, n, d]
    Value qv = addHeadBias(rewriter, loc, q, op.getRRBias());
    AffineExpr db, dn, di, dj, dd;
    bindDims(ctx, db, dn, di, dj, dd);
    SmallVector<utils::IteratorType> iters(4, utils::IteratorType::parallel);
    iters.push_back(utils::IteratorType::reduction);
    Value scores =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{ac.getType()}, ValueRange{qv},
            ValueRange{ac},
            {AffineMap::get(5, 0, {di, db, dn, dd}, ctx),
             AffineMap::get(5, 0, {db, dn, di, dj}, ctx)},
            iters,
            [&](OpBuilder &b, Location l, ValueRange a) {
              Value i = linalg::IndexOp::create(b, l, 2);
              Value j = linalg::IndexOp::create(b, l, 3);
              Value n = linalg::IndexOp::create(b, l, 1);
              Value d = linalg::IndexOp::create(b, l, 4);
              Value one = arith::ConstantIndexOp::create(b, l, 1);
              Value src = arith::SubIOp::create(
                  b, l,
                  arith::AddIOp::create(
                      b, l, j, arith::SubIOp::create(b, l, qlen, one)),
                  i);
              Value inBounds = arith::CmpIOp::create(
                  b, l, arith::CmpIPredicate::ult, src, klen);
              Value row = arith::MinUIOp::create(
                  b, l, src, arith::SubIOp::create(b, l, klen, one));
              Value rv = tensor::ExtractOp::create(b, l, r, ValueRange{row, n, d});
              Value prod = arith::MulFOp::create(b, l, a[0], rv);
              Value zero = arith::ConstantOp::create(
                  b, l, b.getZeroAttr(prod.getType()));
              Value term = arith::SelectOp::create(b, l, inBounds, prod, zero);
              linalg::YieldOp::create(
                  b, l, ValueRange{arith::AddFOp::create(b, l, a[1], term)});
            })
            .getResult(0);

    Value probs = createMaskedSoftmax(
        rewriter, loc, scores, ScoreLayout{/*queryDim=*/2, /*keyDim=*/3},
        op.getMemLen(), op.getSameLength(), op.getScale().convertToDouble());

    Value out = createBatchMatmul(
        rewriter, loc, createCollapse(rewriter, loc, probs, {{0, 1}, {2}, {3}}),
        headsFirst(rewriter, loc, v), /*transposeRhs=*/false);
    out = createExpand(rewriter, loc, out, {{0, 1}, {2}, {3}},
                       {qs[1], qs[2], qs[0], qs[3]});
    out = createTranspose(rewriter, loc, out, {2, 0, 1, 3});
    rewriter.replaceOp(op, castTo(rewriter, loc, out, op.getType()));
    return success();
  }
};

} // namespace

void mlir::txl::populateTxlAttentionToLinalgPatterns(
    RewritePatternSet &patterns) {
  patterns.add<PosEmbLowering, MaskedSoftmaxLowering, RelAttentionLowering>(
      patterns.getContext());
}

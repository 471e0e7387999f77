//===- Contraction.cpp - Lower txl products to linalg matmuls ----*- C++ -*-===//
//
// txl.linear, txl.attn_score and txl.attn_apply, and the backward ops of the
// two attention products, become linalg.matmul / linalg.batch_matmul on
// contiguous operands (transposing heads to the front where needed), so that
// --txl-linalg-to-blas can hand them to cblas_sgemm.
//
//===----------------------------------------------------------------------===//

#include "Builders.h"
#include "txl/Conversion/Passes.h"
#include "txl/IR/TxlOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::txl;

Value mlir::txl::createLinear2d(OpBuilder &b, Location loc, Value x,
                                Value weight, Value bias, Value dest) {
  MLIRContext *ctx = b.getContext();
  OpFoldResult rows = getSizes(b, loc, x)[0];
  OpFoldResult outFeatures = getSizes(b, loc, weight)[0];
  Type elementType = cast<RankedTensorType>(x.getType()).getElementType();
  // The product accumulates onto its init (BLAS beta = 1): start from the
  // bias rows, so that no second [rows, out] buffer and pass add it.
  Value init;
  if (bias) {
    AffineMap biasMap = AffineMap::get(2, 0, {getAffineDimExpr(1, ctx)}, ctx);
    Value empty =
        dest ? dest : createEmpty(b, loc, {rows, outFeatures}, elementType);
    init = linalg::GenericOp::create(
               b, loc, TypeRange{empty.getType()}, ValueRange{bias},
               ValueRange{empty}, {biasMap, identityMap(ctx, 2)},
               {utils::IteratorType::parallel, utils::IteratorType::parallel},
               [](OpBuilder &nb, Location l, ValueRange a) {
                 linalg::YieldOp::create(nb, l, ValueRange{a[0]});
               })
               .getResult(0);
  } else if (dest) {
    Value zero = arith::ConstantOp::create(b, loc, b.getFloatAttr(elementType, 0.0));
    init = linalg::FillOp::create(b, loc, ValueRange{zero}, ValueRange{dest})
               .getResult(0);
  } else {
    init = createFilled(b, loc, {rows, outFeatures}, elementType, 0.0);
  }
  return createMatmulOnto(b, loc, x, weight, init, /*transposeLhs=*/false,
                          /*transposeRhs=*/true);
}

namespace {

// txl.linear(x[..., in], w[out, in], b) => collapse, broadcast b, linalg.matmul
// (w transposed) onto it, expand
struct LinearLowering : public OpRewritePattern<LinearOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LinearOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = op.getInput();
    auto inType = cast<RankedTensorType>(input.getType());
    int64_t rank = inType.getRank();
    SmallVector<OpFoldResult> inSizes = getSizes(rewriter, loc, input);

    Value x2 = input;
    SmallVector<ReassociationIndices> reassoc;
    if (rank > 2) {
      ReassociationIndices leading;
      for (int64_t d = 0; d + 1 < rank; ++d)
        leading.push_back(d);
      reassoc = {leading, {rank - 1}};
      x2 = createCollapse(rewriter, loc, input, reassoc);
    }
    Value y = createLinear2d(rewriter, loc, x2, op.getWeight(), op.getBias());

    if (rank > 2) {
      SmallVector<OpFoldResult> outSizes(inSizes);
      outSizes.back() = getSizes(rewriter, loc, op.getWeight())[0];
      y = createExpand(rewriter, loc, y, reassoc, outSizes);
    }
    rewriter.replaceOp(op, castTo(rewriter, loc, y, op.getType()));
    return success();
  }
};

// txl.attn_score(q[i,b,n,d], k[j,b,n,d]) => batch_matmul over (b,n) of q kᵀ
// txl.attn_score(q[i,b,n,d], r[j,n,d])   => batch_matmul over n of q(b·i) rᵀ
struct AttnScoreLowering : public OpRewritePattern<AttnScoreOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AttnScoreOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value q = op.getQuery(), key = op.getKey();
    SmallVector<OpFoldResult> qs = getSizes(rewriter, loc, q);
    OpFoldResult klen = getSizes(rewriter, loc, key)[0];
    Value scores;
    if (cast<RankedTensorType>(key.getType()).getRank() == 4) {
      Value s = createBatchMatmul(rewriter, loc, headsFirst(rewriter, loc, q),
                                  headsFirst(rewriter, loc, key),
                                  /*transposeRhs=*/true);
      scores = scoresRowsFirst(rewriter, loc, s, qs[1], qs[2], qs[0], klen);
    } else {
      Value qT = createCollapse(rewriter, loc,
                                createTranspose(rewriter, loc, q, {2, 1, 0, 3}),
                                {{0}, {1, 2}, {3}});
      Value rT = createTranspose(rewriter, loc, key, {1, 0, 2});
      Value s = createBatchMatmul(rewriter, loc, qT, rT, /*transposeRhs=*/true);
      s = createExpand(rewriter, loc, s, {{0}, {1, 2}, {3}},
                       {qs[2], qs[1], qs[0], klen});
      scores = createTranspose(rewriter, loc, s, {2, 3, 1, 0});
    }
    rewriter.replaceOp(op, castTo(rewriter, loc, scores, op.getType()));
    return success();
  }
};

// txl.attn_apply(p[i,j,b,n], v[j,b,n,d]) => batch_matmul over (b,n) of p v
struct AttnApplyLowering : public OpRewritePattern<AttnApplyOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AttnApplyOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    SmallVector<OpFoldResult> ps = getSizes(rewriter, loc, op.getProbs());
    SmallVector<OpFoldResult> vs = getSizes(rewriter, loc, op.getValue());
    Value o = createBatchMatmul(rewriter, loc,
                                scoresHeadsFirst(rewriter, loc, op.getProbs()),
                                headsFirst(rewriter, loc, op.getValue()),
                                /*transposeRhs=*/false);
    o = createExpand(rewriter, loc, o, {{0, 1}, {2}, {3}},
                     {vs[1], vs[2], ps[0], vs[3]});
    o = createTranspose(rewriter, loc, o, {2, 0, 1, 3});
    rewriter.replaceOp(op, castTo(rewriter, loc, o, op.getType()));
    return success();
  }
};

// txl.attn_score_grad(dS, q, k[j,b,n,d]) => per (b, n): dq = dS k,
// dk = dSᵀ q. With a positional key r[j,n,d], per head over the (b, i)
// rows: dq = dS r, dr = dSᵀ q (the batch summed by the product).
struct AttnScoreGradLowering : public OpRewritePattern<AttnScoreGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AttnScoreGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value q = op.getQuery(), key = op.getKey(), dS = op.getDResult();
    SmallVector<OpFoldResult> qs = getSizes(rewriter, loc, q);
    Value dQ, dKey;
    if (cast<RankedTensorType>(key.getType()).getRank() == 4) {
      Value dS3 = scoresHeadsFirst(rewriter, loc, dS);
      Value dQ3 = createBatchMatmul(rewriter, loc, dS3,
                                    headsFirst(rewriter, loc, key),
                                    /*transposeRhs=*/false);
      Value dK3 = createMatmulTransposedLhs(rewriter, loc, dS3,
                                            headsFirst(rewriter, loc, q));
      dQ = rowsFirst(rewriter, loc, dQ3, qs[1], qs[2]);
      dKey = rowsFirst(rewriter, loc, dK3, qs[1], qs[2]);
    } else {
      // [n, b·i, j] and [n, b·i, d]: one product per head.
      Value dS3 = createCollapse(
          rewriter, loc, createTranspose(rewriter, loc, dS, {3, 2, 0, 1}),
          {{0}, {1, 2}, {3}});
      Value q3 = createCollapse(rewriter, loc,
                                createTranspose(rewriter, loc, q, {2, 1, 0, 3}),
                                {{0}, {1, 2}, {3}});
      Value r3 = createTranspose(rewriter, loc, key, {1, 0, 2});
      Value dQ3 =
          createBatchMatmul(rewriter, loc, dS3, r3, /*transposeRhs=*/false);
      dQ = createExpand(rewriter, loc, dQ3, {{0}, {1, 2}, {3}},
                        {qs[2], qs[1], qs[0], qs[3]});
      dQ = createTranspose(rewriter, loc, dQ, {2, 1, 0, 3});
      dKey = createTranspose(rewriter, loc,
                             createMatmulTransposedLhs(rewriter, loc, dS3, q3),
                             {1, 0, 2});
    }
    rewriter.replaceOp(op, {castTo(rewriter, loc, dQ, q.getType()),
                            castTo(rewriter, loc, dKey, key.getType())});
    return success();
  }
};

// txl.attn_apply_grad(dO, p, v) => per (b, n): dp = dO vᵀ, dv = pᵀ dO
struct AttnApplyGradLowering : public OpRewritePattern<AttnApplyGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AttnApplyGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value probs = op.getProbs(), v = op.getValue();
    SmallVector<OpFoldResult> vs = getSizes(rewriter, loc, v);
    SmallVector<OpFoldResult> ps = getSizes(rewriter, loc, probs);
    Value dO3 = headsFirst(rewriter, loc, op.getDResult());
    Value dP3 = createBatchMatmul(rewriter, loc, dO3,
                                  headsFirst(rewriter, loc, v),
                                  /*transposeRhs=*/true);
    Value dP =
        scoresRowsFirst(rewriter, loc, dP3, vs[1], vs[2], ps[0], vs[0]);
    Value dV3 = createMatmulTransposedLhs(
        rewriter, loc, scoresHeadsFirst(rewriter, loc, probs), dO3);
    Value dV = rowsFirst(rewriter, loc, dV3, vs[1], vs[2]);
    rewriter.replaceOp(op, {castTo(rewriter, loc, dP, probs.getType()),
                            castTo(rewriter, loc, dV, v.getType())});
    return success();
  }
};

} // namespace

void mlir::txl::populateTxlContractionToLinalgPatterns(
    RewritePatternSet &patterns) {
  patterns.add<LinearLowering, AttnScoreLowering, AttnApplyLowering,
               AttnScoreGradLowering, AttnApplyGradLowering>(
      patterns.getContext());
}

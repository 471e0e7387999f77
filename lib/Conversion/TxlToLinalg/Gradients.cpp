//===- Gradients.cpp - Lower the generic backward ops to linalg --*- C++ -*-===//
//
// The adjoints of products, bias broadcasts, ReLU, layer norm, the NLL and
// the embedding lookup (TxlAdjointOps.td). Products are linalg.matmul with
// BLAS-readable maps (dW = dyᵀ x reads dy transposed in place); row
// statistics are recomputed from the forward input rather than stored.
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

/// [..., f] -> [rows, f] (identity for rank 2).
static Value collapseRows(OpBuilder &b, Location loc, Value x) {
  int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
  if (rank == 2)
    return x;
  ReassociationIndices leading;
  for (int64_t d = 0; d + 1 < rank; ++d)
    leading.push_back(d);
  return createCollapse(b, loc, x, {leading, {rank - 1}});
}

static Value floatConst(OpBuilder &b, Location loc, Type type, double v) {
  return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, v));
}

/// One element of txl.nll_grad: (exp(x − lse) − [column == target]) · dy
/// for the logit x of `column` (index) in a row with log-sum-exp `lse`,
/// target id `target` (i64) and cotangent `dy`.
static Value createNllGradElement(OpBuilder &b, Location loc, Value x,
                                  Value lse, Value column, Value target,
                                  Value dy) {
  Type et = x.getType();
  // The column compare in i32 (a vocabulary is far below 2^31), so the loop
  // vectorizes at the width of f32, not of 64-bit indices.
  Value c = arith::IndexCastOp::create(b, loc, b.getI32Type(), column);
  Value t = arith::TruncIOp::create(b, loc, b.getI32Type(), target);
  Value p = math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, x, lse));
  Value isTarget = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, c, t);
  Value onehot =
      arith::SelectOp::create(b, loc, isTarget, floatConst(b, loc, et, 1.0),
                              floatConst(b, loc, et, 0.0));
  return arith::MulFOp::create(b, loc, arith::SubFOp::create(b, loc, p, onehot),
                               dy);
}

namespace {

// txl.linear_input_grad(dy [..., out], w [out, in]) => dy w (sgemm NoTrans)
struct LinearInputGradLowering : public OpRewritePattern<LinearInputGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LinearInputGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value dy = op.getDResult();
    Value dx = createMatmul(rewriter, loc, collapseRows(rewriter, loc, dy),
                            op.getWeight(), /*transposeRhs=*/false);
    int64_t rank = op.getType().getRank();
    if (rank > 2) {
      SmallVector<OpFoldResult> sizes = getSizes(rewriter, loc, dy);
      sizes.back() = getSizes(rewriter, loc, op.getWeight())[1];
      ReassociationIndices leading;
      for (int64_t d = 0; d + 1 < rank; ++d)
        leading.push_back(d);
      dx = createExpand(rewriter, loc, dx, {leading, {rank - 1}}, sizes);
    }
    rewriter.replaceOp(op, castTo(rewriter, loc, dx, op.getType()));
    return success();
  }
};

// txl.linear_weight_grad(dy [..., out], x [..., in]) => dyᵀ x (sgemm TransA)
struct LinearWeightGradLowering : public OpRewritePattern<LinearWeightGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LinearWeightGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value dw = createMatmulTransposedLhs(
        rewriter, loc, collapseRows(rewriter, loc, op.getDResult()),
        collapseRows(rewriter, loc, op.getInput()));
    rewriter.replaceOp(op, castTo(rewriter, loc, dw, op.getType()));
    return success();
  }
};

// txl.sum_leading(x) => linalg.generic reducing the leading dimensions
struct SumLeadingLowering : public OpRewritePattern<SumLeadingOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SumLeadingOp op,
                                PatternRewriter &rewriter) const override {
    Value sum = createSumLeading(rewriter, op.getLoc(), op.getInput(),
                                 op.getType().getRank());
    rewriter.replaceOp(op, castTo(rewriter, op.getLoc(), sum, op.getType()));
    return success();
  }
};

// txl.relu_grad(dy, y) => y > 0 ? dy : 0
struct ReluGradLowering : public OpRewritePattern<ReluGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReluGradOp op,
                                PatternRewriter &rewriter) const override {
    AffineMap id = identityMap(getContext(), op.getType().getRank());
    Type elementType = op.getType().getElementType();
    rewriter.replaceOp(
        op, createPointwise(
                rewriter, op.getLoc(), op.getDResult(),
                ValueRange{op.getDResult(), op.getResult()}, {id, id},
                [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                  Value zero = floatConst(b, l, elementType, 0.0);
                  Value positive = arith::CmpFOp::create(
                      b, l, arith::CmpFPredicate::OGT, a[1], zero);
                  return arith::SelectOp::create(b, l, positive, a[0], zero);
                }));
    return success();
  }
};

// txl.layer_norm_grad(dy, x, w) => recompute mean and rstd per row, then
// dx = rstd (g - mean(g) - xhat mean(g xhat)) with g = dy w,
// dw = sum_rows dy xhat, db = sum_rows dy
struct LayerNormGradLowering : public OpRewritePattern<LayerNormGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LayerNormGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    Value x = op.getInput(), dy = op.getDResult(), w = op.getWeight();
    auto type = cast<RankedTensorType>(x.getType());
    Type et = type.getElementType();
    unsigned rank = type.getRank();
    double invN = 1.0 / static_cast<double>(type.getShape().back());
    double eps = op.getEpsilon().convertToDouble();
    AffineMap id = identityMap(ctx, rank);
    AffineMap rowMap = dropDimMap(ctx, rank, rank - 1);
    AffineMap featureMap =
        AffineMap::get(rank, 0, {getAffineDimExpr(rank - 1, ctx)}, ctx);
    auto add = [](OpBuilder &b, Location l, ValueRange a) -> Value {
      return arith::AddFOp::create(b, l, a[0], a[1]);
    };

    // Row statistics, as the forward lowering computes them.
    Value sum = reduceLastDim(rewriter, loc, ValueRange{x}, 0.0, add);
    Value sqSum = reduceLastDim(
        rewriter, loc, ValueRange{x, sum}, 0.0,
        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          Value mean =
              arith::MulFOp::create(b, l, a[1], floatConst(b, l, et, invN));
          Value d = arith::SubFOp::create(b, l, a[0], mean);
          return arith::AddFOp::create(b, l, arith::MulFOp::create(b, l, d, d),
                                       a[2]);
        });
    Value xhat = createPointwise(
        rewriter, loc, x, ValueRange{x, sum, sqSum}, {id, rowMap, rowMap},
        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          Value n = floatConst(b, l, et, invN);
          Value mean = arith::MulFOp::create(b, l, a[1], n);
          Value var = arith::MulFOp::create(b, l, a[2], n);
          Value rstd = math::RsqrtOp::create(
              b, l, arith::AddFOp::create(b, l, var, floatConst(b, l, et, eps)));
          return arith::MulFOp::create(
              b, l, arith::SubFOp::create(b, l, a[0], mean), rstd);
        });
    auto mul = [](OpBuilder &b, Location l, ValueRange a) -> Value {
      return arith::MulFOp::create(b, l, a[0], a[1]);
    };
    Value g = createPointwise(rewriter, loc, dy, ValueRange{dy, w},
                              {id, featureMap}, mul);
    Value gSum = reduceLastDim(rewriter, loc, ValueRange{g}, 0.0, add);
    Value gx = createPointwise(rewriter, loc, g, ValueRange{g, xhat}, {id, id},
                               mul);
    Value gxSum = reduceLastDim(rewriter, loc, ValueRange{gx}, 0.0, add);
    Value dx = createPointwise(
        rewriter, loc, x, ValueRange{g, xhat, gSum, gxSum, sqSum},
        {id, id, rowMap, rowMap, rowMap},
        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          Value n = floatConst(b, l, et, invN);
          Value var = arith::MulFOp::create(b, l, a[4], n);
          Value rstd = math::RsqrtOp::create(
              b, l, arith::AddFOp::create(b, l, var, floatConst(b, l, et, eps)));
          Value centered = arith::SubFOp::create(
              b, l, a[0], arith::MulFOp::create(b, l, a[2], n));
          Value proj = arith::MulFOp::create(
              b, l, a[1], arith::MulFOp::create(b, l, a[3], n));
          return arith::MulFOp::create(
              b, l, arith::SubFOp::create(b, l, centered, proj), rstd);
        });
    Value dyXhat =
        createPointwise(rewriter, loc, dy, ValueRange{dy, xhat}, {id, id}, mul);
    Value dw = createSumLeading(rewriter, loc, dyXhat, 1);
    Value db = createSumLeading(rewriter, loc, dy, 1);
    rewriter.replaceOp(op, {dx, castTo(rewriter, loc, dw, w.getType()),
                            castTo(rewriter, loc, db, w.getType())});
    return success();
  }
};

// txl.nll_grad(dy, logits, t) => (exp(logits - lse) - onehot(t)) * dy,
// written over the logits (their last reader), so the backward of the
// softmax allocates no second [tokens, n_token] buffer
struct NllGradLowering : public OpRewritePattern<NllGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(NllGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    Value logits = op.getLogits();
    Value lse = createLogSumExp(rewriter, loc, ValueRange{logits});
    AffineMap id = identityMap(ctx, 3);
    AffineMap rowMap = dropDimMap(ctx, 3, 2);
    Value grad = createPointwise(
        rewriter, loc, logits,
        ValueRange{logits, lse, op.getTarget(), op.getDResult()},
        {id, rowMap, rowMap, rowMap},
        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          return createNllGradElement(b, l, a[0], a[1],
                                      linalg::IndexOp::create(b, l, 2), a[2],
                                      a[3]);
        },
        /*dest=*/logits);
    rewriter.replaceOp(op, castTo(rewriter, loc, grad, op.getType()));
    return success();
  }
};

// txl.embedding_grad(dy, tokens [into init]) => init (or zeros), then for
// each position p and feature k: d_table[tokens[p], k] += dy[p, k] (in order,
// so repeated tokens accumulate deterministically); with `into`, the scatter
// updates init's buffer in place when init has no later reader
struct EmbeddingGradLowering : public OpRewritePattern<EmbeddingGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(EmbeddingGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = op.getType();
    Value ids = createCollapse(rewriter, loc, op.getTokens(), {{0, 1}});
    Value dy = createCollapse(rewriter, loc, op.getDResult(), {{0, 1}, {2}});
    Value table = op.getInit();
    if (!table)
      table = castTo(rewriter, loc,
                     createFilled(rewriter, loc,
                                  getSizes(rewriter, loc, op.getResult()),
                                  type.getElementType(), 0.0),
                     type);
    Value grad = createScatterAddRows(
        rewriter, loc, table, dy, [&](OpBuilder &b, Location l, Value p) {
          Value id = tensor::ExtractOp::create(b, l, ids, ValueRange{p});
          return arith::IndexCastOp::create(b, l, b.getIndexType(), id)
              .getResult();
        });
    rewriter.replaceOp(op, grad);
    return success();
  }
};

} // namespace

void mlir::txl::populateTxlGradientToLinalgPatterns(
    RewritePatternSet &patterns) {
  patterns.add<LinearInputGradLowering, LinearWeightGradLowering,
               SumLeadingLowering, ReluGradLowering, LayerNormGradLowering,
               NllGradLowering, EmbeddingGradLowering>(patterns.getContext());
}

//===- Normalization.cpp - Lower layer norm and the NLL to linalg -*- C++ -*-===//
//
// Row reductions over the last dimension: txl.layer_norm (mean, biased
// variance, affine) and txl.nll (max-shifted log-sum-exp minus the target's
// logit, so no probability is materialized).
//
//===----------------------------------------------------------------------===//

#include "Builders.h"
#include "txl/Conversion/Passes.h"
#include "txl/IR/TxlOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

#include <limits>

using namespace mlir;
using namespace mlir::txl;

namespace {

// txl.layer_norm(x, g, b) => mean, variance, (x - mean) * rsqrt(var + eps) * g + b
struct LayerNormLowering : public OpRewritePattern<LayerNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LayerNormOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    Value x = op.getInput();
    auto type = cast<RankedTensorType>(x.getType());
    unsigned rank = type.getRank();
    int64_t features = type.getShape().back();
    if (ShapedType::isDynamic(features))
      return rewriter.notifyMatchFailure(op, "feature dimension must be static");
    // 1 / features rounded once, in the element type (1.0f / n for f32).
    Type elementType = type.getElementType();
    const llvm::fltSemantics &semantics =
        cast<FloatType>(elementType).getFloatSemantics();
    APFloat invNValue(semantics, 1);
    invNValue.divide(APFloat(semantics, features),
                     APFloat::rmNearestTiesToEven);
    FloatAttr invN = rewriter.getFloatAttr(elementType, invNValue);

    Value sum = reduceLastDim(rewriter, loc, ValueRange{x}, 0.0,
                              [](OpBuilder &b, Location l, ValueRange a) -> Value {
                                return arith::AddFOp::create(b, l, a[0], a[1]);
                              });
    Value sqSum = reduceLastDim(
        rewriter, loc, ValueRange{x, sum}, 0.0,
        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          Value mean = arith::MulFOp::create(
              b, l, a[1], arith::ConstantOp::create(b, l, invN));
          Value d = arith::SubFOp::create(b, l, a[0], mean);
          return arith::AddFOp::create(b, l, arith::MulFOp::create(b, l, d, d),
                                       a[2]);
        });

    AffineMap id = identityMap(ctx, rank);
    AffineMap rowMap = dropDimMap(ctx, rank, rank - 1);
    AffineMap featureMap =
        AffineMap::get(rank, 0, {getAffineDimExpr(rank - 1, ctx)}, ctx);
    SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
    FloatAttr eps = castFloatAttr(rewriter, op.getEpsilonAttr(), elementType);
    Value y =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{type},
            ValueRange{x, sum, sqSum, op.getWeight(), op.getBias()},
            ValueRange{createEmpty(rewriter, loc, getSizes(rewriter, loc, x),
                                   type.getElementType())},
            {id, rowMap, rowMap, featureMap, featureMap, id}, iters,
            [&](OpBuilder &b, Location l, ValueRange a) {
              Value n = arith::ConstantOp::create(b, l, invN);
              Value mean = arith::MulFOp::create(b, l, a[1], n);
              Value var = arith::MulFOp::create(b, l, a[2], n);
              Value varEps = arith::AddFOp::create(
                  b, l, var, arith::ConstantOp::create(b, l, eps));
              Value inv = math::RsqrtOp::create(b, l, varEps);
              Value norm = arith::MulFOp::create(
                  b, l, arith::SubFOp::create(b, l, a[0], mean), inv);
              Value out = arith::AddFOp::create(
                  b, l, arith::MulFOp::create(b, l, norm, a[3]), a[4]);
              linalg::YieldOp::create(b, l, ValueRange{out});
            })
            .getResult(0);
    rewriter.replaceOp(op, y);
    return success();
  }
};

// txl.nll(logits, target) => logsumexp(logits) - logits[target]
struct NllLowering : public OpRewritePattern<NllOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(NllOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    Value logits = op.getLogits();
    Value lse = createLogSumExp(rewriter, loc, ValueRange{logits});
    AffineMap id = identityMap(ctx, 2);
    auto resultType = cast<RankedTensorType>(lse.getType());
    Value nll =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{resultType},
            ValueRange{lse, op.getTarget()},
            ValueRange{createEmpty(rewriter, loc, getSizes(rewriter, loc, lse),
                                   resultType.getElementType())},
            {id, id, id},
            {utils::IteratorType::parallel, utils::IteratorType::parallel},
            [&](OpBuilder &b, Location l, ValueRange a) {
              Value i = linalg::IndexOp::create(b, l, 0);
              Value bt = linalg::IndexOp::create(b, l, 1);
              Value t = arith::IndexCastOp::create(b, l, b.getIndexType(), a[1]);
              Value logit =
                  tensor::ExtractOp::create(b, l, logits, ValueRange{i, bt, t});
              linalg::YieldOp::create(
                  b, l, ValueRange{arith::SubFOp::create(b, l, a[0], logit)});
            })
            .getResult(0);
    rewriter.replaceOp(op, castTo(rewriter, loc, nll, op.getType()));
    return success();
  }
};

} // namespace

void mlir::txl::populateTxlNormalizationToLinalgPatterns(
    RewritePatternSet &patterns) {
  patterns.add<LayerNormLowering, NllLowering>(patterns.getContext());
}

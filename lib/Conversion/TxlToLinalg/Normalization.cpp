//===- Normalization.cpp - Lower layer norm and the NLL to linalg -*- C++ -*-===//
//
// Row reductions over the last dimension: txl.layer_norm (mean, biased
// variance, affine) and txl.nll (max-shifted log-sum-exp minus the target's
// logit, so no probability is materialized). A txl.nll whose logits are a
// txl.linear used by nothing else (the output layer of a forward-only
// segment) is lowered together with it, block by block, so that no
// [tokens, n_token] logit matrix exists at all.
//
//===----------------------------------------------------------------------===//

#include "Builders.h"
#include "txl/Conversion/Passes.h"
#include "txl/IR/TxlOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
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

/// Output columns per block of the fused linear + NLL: one block's logits,
/// [rows, kNllColumnBlock] float32, stay in a core's 2 MiB L2 for up to
/// 1024 rows (a 64-token segment of batch 16).
constexpr int64_t kNllColumnBlock = 512;

// txl.nll(txl.linear(h[..., in], w[V, in], bias), target), the linear's only
// use => an scf.for over blocks of kNllColumnBlock of the V columns: the
// block's logits (one BLAS product onto the bias block), then an online
// log-sum-exp update of a running row max m and sum s (Milakov & Gimelshein
// 2018, "Online normalizer calculation for softmax"):
//   m' = max(m, max_j x_j),  s' = s · exp(m − m') + Σ_j exp(x_j − m').
// After the loop lse = log(s) + m, and the target's logit is the gathered
// dot product h · w[t] + bias[t]. Rooted at the linear (visited first) with
// a higher benefit than the separate lowerings.
struct LinearNllLowering : public OpRewritePattern<LinearOp> {
  LinearNllLowering(MLIRContext *ctx)
      : OpRewritePattern<LinearOp>(ctx, /*benefit=*/2) {}
  LogicalResult matchAndRewrite(LinearOp linear,
                                PatternRewriter &rewriter) const override {
    if (!linear->hasOneUse())
      return rewriter.notifyMatchFailure(linear, "logits have other uses");
    auto op = dyn_cast<NllOp>(*linear->getUsers().begin());
    if (!op)
      return rewriter.notifyMatchFailure(linear, "not the logits of txl.nll");
    MLIRContext *ctx = getContext();
    Location loc = op.getLoc();
    rewriter.setInsertionPoint(op);
    Value h = linear.getInput(), w = linear.getWeight(),
          bias = linear.getBias();
    auto hType = cast<RankedTensorType>(h.getType());
    Type et = hType.getElementType();
    int64_t rank = hType.getRank();
    // Rows: every leading dimension of h (and of target) collapsed.
    Value h2 = h, target = op.getTarget();
    if (rank > 2) {
      ReassociationIndices leading;
      for (int64_t d = 0; d + 1 < rank; ++d)
        leading.push_back(d);
      h2 = createCollapse(rewriter, loc, h, {leading, {rank - 1}});
      target = createCollapse(rewriter, loc, target, {leading});
    }
    OpFoldResult rows = getSizes(rewriter, loc, h2)[0];
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    Value block = arith::ConstantIndexOp::create(rewriter, loc, kNllColumnBlock);
    Value vocab = tensor::DimOp::create(rewriter, loc, w, 0);
    Value features = tensor::DimOp::create(rewriter, loc, w, 1);
    Value m0 = createFilled(rewriter, loc, {rows}, et,
                            -std::numeric_limits<double>::infinity());
    Value s0 = createFilled(rewriter, loc, {rows}, et, 0.0);
    AffineMap id1 = identityMap(ctx, 1);

    auto loop = scf::ForOp::create(
        rewriter, loc, zero, vocab, block, ValueRange{m0, s0},
        [&](OpBuilder &b, Location l, Value j, ValueRange acc) {
          Value cols = arith::MinSIOp::create(
              b, l, block, arith::SubIOp::create(b, l, vocab, j));
          Value wBlock = tensor::ExtractSliceOp::create(
              b, l, w, ArrayRef<OpFoldResult>{j, zero},
              ArrayRef<OpFoldResult>{cols, features},
              ArrayRef<OpFoldResult>{one, one});
          Value biasBlock;
          if (bias)
            biasBlock = tensor::ExtractSliceOp::create(
                b, l, bias, ArrayRef<OpFoldResult>{j},
                ArrayRef<OpFoldResult>{cols}, ArrayRef<OpFoldResult>{one});
          Value logits = createLinear2d(b, l, h2, wBlock, biasBlock);
          Value blockMax = reduceLastDim(
              b, l, ValueRange{logits},
              -std::numeric_limits<double>::infinity(),
              [](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                return arith::MaximumFOp::create(nb, nl, a[0], a[1]);
              });
          // Updated in place (the loop carries one buffer each): first the
          // old sum in units of the new max (exp(-inf) = 0 on entry), then
          // the max.
          Value rescaled = createPointwise(
              b, l, acc[1], ValueRange{acc[0], blockMax}, {id1, id1},
              [](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                Value newMax = arith::MaximumFOp::create(nb, nl, a[0], a[1]);
                Value shift = arith::SubFOp::create(nb, nl, a[0], newMax);
                return arith::MulFOp::create(
                    nb, nl, a[2], math::ExpOp::create(nb, nl, shift));
              },
              /*dest=*/acc[1]);
          Value newMax = createPointwise(
              b, l, acc[0], ValueRange{blockMax}, {id1},
              [](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                return arith::MaximumFOp::create(nb, nl, a[1], a[0]);
              },
              /*dest=*/acc[0]);
          Value newSum = reduceLastDimInto(
              b, l, ValueRange{logits, newMax}, rescaled,
              [](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                Value e = math::ExpOp::create(
                    nb, nl, arith::SubFOp::create(nb, nl, a[0], a[1]));
                return arith::AddFOp::create(nb, nl, e, a[2]);
              });
          scf::YieldOp::create(b, l, ValueRange{newMax, newSum});
        });
    Value rowMax = loop.getResult(0), rowSum = loop.getResult(1);

    // The target's logit: Σ_k h[r, k] · w[t_r, k], then + bias[t_r].
    auto targetIndex = [&](OpBuilder &b, Location l, Value t) -> Value {
      return arith::IndexCastOp::create(b, l, b.getIndexType(), t);
    };
    Value dot = reduceLastDim(
        rewriter, loc, ValueRange{h2, target}, 0.0,
        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          Value k = linalg::IndexOp::create(b, l, 1);
          Value wv = tensor::ExtractOp::create(
              b, l, w, ValueRange{targetIndex(b, l, a[1]), k});
          return arith::AddFOp::create(
              b, l, arith::MulFOp::create(b, l, a[0], wv), a[2]);
        });
    Value nll = createPointwise(
        rewriter, loc, dot, ValueRange{rowSum, rowMax, dot, target},
        {id1, id1, id1, id1},
        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          Value lse = arith::AddFOp::create(
              b, l, math::LogOp::create(b, l, a[0]), a[1]);
          Value logit = a[2];
          if (bias)
            logit = arith::AddFOp::create(
                b, l, logit,
                tensor::ExtractOp::create(b, l, bias,
                                          ValueRange{targetIndex(b, l, a[3])}));
          return arith::SubFOp::create(b, l, lse, logit);
        });
    if (rank > 2) {
      SmallVector<OpFoldResult> outSizes = getSizes(rewriter, loc, op.getTarget());
      ReassociationIndices leading;
      for (int64_t d = 0; d + 1 < rank; ++d)
        leading.push_back(d);
      nll = createExpand(rewriter, loc, nll, {leading}, outSizes);
    }
    rewriter.replaceOp(op, castTo(rewriter, loc, nll, op.getType()));
    rewriter.eraseOp(linear);
    return success();
  }
};

} // namespace

void mlir::txl::populateTxlNormalizationToLinalgPatterns(
    RewritePatternSet &patterns) {
  patterns.add<LayerNormLowering, NllLowering, LinearNllLowering>(
      patterns.getContext());
}

//===- Optimizer.cpp - Lower the optimizer updates to linalg -----*- C++ -*-===//
//
// Each update is one elementwise linalg.generic over the parameter and its
// state, with several results, so a step reads and writes every element
// once; its inits are the parameter and states themselves (see
// createUpdate). Step-dependent scalars (Adam's bias corrections) are
// computed once, in f64 as PyTorch computes them in Python floats, then
// rounded to f32.
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

/// The elementwise linalg.generic of one update: `grad` is its input and
/// `updated` (the parameter, then its optimizer states) its inits, so each
/// result is computed in the buffer of the value it replaces wherever that
/// buffer may be written (the in-place `@optimizer_step`). `body` gets the
/// elements (param, grad, states...) and yields (param', states'...).
static SmallVector<Value>
createUpdate(OpBuilder &b, Location loc, ValueRange updated, Value grad,
             function_ref<SmallVector<Value>(OpBuilder &, Location,
                                             ValueRange)> body) {
  auto type = cast<RankedTensorType>(grad.getType());
  AffineMap id = identityMap(b.getContext(), type.getRank());
  SmallVector<AffineMap> maps(1 + updated.size(), id);
  SmallVector<utils::IteratorType> iters(type.getRank(),
                                         utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange(updated), ValueRange{grad}, updated, maps, iters,
      [&](OpBuilder &nb, Location l, ValueRange args) {
        SmallVector<Value> elements = {args[1], args[0]};
        elements.append(args.begin() + 2, args.end());
        linalg::YieldOp::create(nb, l, body(nb, l, elements));
      });
  return SmallVector<Value>(generic.getResults());
}

static Value f32Const(OpBuilder &b, Location loc, double v) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(static_cast<float>(v)));
}

/// `-lr` rounded from f64 to f32, the `alpha=-lr` of PyTorch's updates.
static Value negatedF32(OpBuilder &b, Location loc, Value lr) {
  return arith::TruncFOp::create(b, loc, b.getF32Type(),
                                 arith::NegFOp::create(b, loc, lr));
}

namespace {

// txl.squared_norm(x) => x collapsed to one dimension, then one reduction
// of x * x, each square and sum in f64, into a 0-d f64 tensor whose
// additions may be reassociated (reduceLastDim): LLVM keeps vector partial
// sums instead of a scalar chain of dependent additions, a fixed summation
// order per executable. The f64 accumulator keeps the sum of a gradient's
// millions of squares exact to ~1e-16 whatever the order (an f32 one drifts
// by 1e-4 relative over 2·10^6 terms, so that clipping would depend on how
// the update is split into parts); the result is rounded to f32 once.
struct SquaredNormLowering : public OpRewritePattern<SquaredNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SquaredNormOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = op.getInput();
    unsigned rank = cast<RankedTensorType>(x.getType()).getRank();
    if (rank == 0)
      x = createExpand(rewriter, loc, x, {}, {rewriter.getIndexAttr(1)});
    else if (rank > 1)
      x = createCollapse(rewriter, loc, x,
                         {llvm::to_vector(llvm::seq<int64_t>(0, rank))});
    Type f64 = rewriter.getF64Type();
    Value sum = reduceLastDimInto(
        rewriter, loc, ValueRange{x}, createFilled(rewriter, loc, {}, f64, 0.0),
        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          Value wide = arith::ExtFOp::create(b, l, f64, a[0]);
          return arith::AddFOp::create(b, l, a[1],
                                       arith::MulFOp::create(b, l, wide, wide));
        });
    rewriter.replaceOpWithNewOp<arith::TruncFOp>(
        op, op.getType(),
        tensor::ExtractOp::create(rewriter, loc, sum, ValueRange{}));
    return success();
  }
};

// txl.adam_update => bias corrections once, then one generic:
// m' = m + (1 - b1)(g - m); v' = v b2 + ((1 - b2) g) g;
// p' = p + (-lr / bc1) (m' / (sqrt(v') / sqrt(bc2) + eps))
struct AdamUpdateLowering : public OpRewritePattern<AdamUpdateOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AdamUpdateOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    double beta1 = op.getBeta1().convertToDouble();
    double beta2 = op.getBeta2().convertToDouble();
    Type f64 = rewriter.getF64Type();
    auto d = [&](double v) {
      return arith::ConstantOp::create(rewriter, loc,
                                       rewriter.getF64FloatAttr(v));
    };
    Value t = arith::SIToFPOp::create(rewriter, loc, f64, op.getStep());
    Value one = d(1.0);
    Value bc1 = arith::SubFOp::create(rewriter, loc, one,
                                      math::PowFOp::create(rewriter, loc, d(beta1), t));
    Value bc2 = arith::SubFOp::create(rewriter, loc, one,
                                      math::PowFOp::create(rewriter, loc, d(beta2), t));
    Type f32 = rewriter.getF32Type();
    Value stepSize = arith::DivFOp::create(rewriter, loc, op.getLr(), bc1);
    Value negStepSize = arith::TruncFOp::create(
        rewriter, loc, f32, arith::NegFOp::create(rewriter, loc, stepSize));
    Value bc2Sqrt = arith::TruncFOp::create(
        rewriter, loc, f32, math::SqrtOp::create(rewriter, loc, bc2));
    Value scale = op.getGradScale();
    double eps = op.getEps().convertToDouble();
    SmallVector<Value> results = createUpdate(
        rewriter, loc,
        ValueRange{op.getParam(), op.getExpAvg(), op.getExpAvgSq()},
        op.getGrad(), [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
          Value g = arith::MulFOp::create(b, l, a[1], scale);
          Value m = arith::AddFOp::create(
              b, l, a[2],
              arith::MulFOp::create(b, l, f32Const(b, l, 1.0 - beta1),
                                    arith::SubFOp::create(b, l, g, a[2])));
          Value v = arith::AddFOp::create(
              b, l, arith::MulFOp::create(b, l, a[3], f32Const(b, l, beta2)),
              arith::MulFOp::create(
                  b, l,
                  arith::MulFOp::create(b, l, f32Const(b, l, 1.0 - beta2), g),
                  g));
          Value denom = arith::AddFOp::create(
              b, l,
              arith::DivFOp::create(b, l, math::SqrtOp::create(b, l, v),
                                    bc2Sqrt),
              f32Const(b, l, eps));
          Value p = arith::AddFOp::create(
              b, l, a[0],
              arith::MulFOp::create(b, l, negStepSize,
                                    arith::DivFOp::create(b, l, m, denom)));
          return {p, m, v};
        });
    rewriter.replaceOp(op, results);
    return success();
  }
};

// txl.sgd_update => b' = momentum b + g; p' = p + (-lr) b'
struct SgdUpdateLowering : public OpRewritePattern<SgdUpdateOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SgdUpdateOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value negLr = negatedF32(rewriter, loc, op.getLr());
    Value scale = op.getGradScale();
    double momentum = op.getMomentum().convertToDouble();
    SmallVector<Value> results = createUpdate(
        rewriter, loc, ValueRange{op.getParam(), op.getMomentumBuffer()},
        op.getGrad(), [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
          Value g = arith::MulFOp::create(b, l, a[1], scale);
          Value buf = arith::AddFOp::create(
              b, l, arith::MulFOp::create(b, l, a[2], f32Const(b, l, momentum)),
              g);
          Value p = arith::AddFOp::create(
              b, l, a[0], arith::MulFOp::create(b, l, negLr, buf));
          return {p, buf};
        });
    rewriter.replaceOp(op, results);
    return success();
  }
};

// txl.adagrad_update => s' = s + g g; p' = p + (-lr) (g / (sqrt(s') + eps))
struct AdagradUpdateLowering : public OpRewritePattern<AdagradUpdateOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AdagradUpdateOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value negLr = negatedF32(rewriter, loc, op.getLr());
    Value scale = op.getGradScale();
    double eps = op.getEps().convertToDouble();
    SmallVector<Value> results = createUpdate(
        rewriter, loc, ValueRange{op.getParam(), op.getSum()}, op.getGrad(),
        [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
          Value g = arith::MulFOp::create(b, l, a[1], scale);
          Value s = arith::AddFOp::create(b, l, a[2],
                                          arith::MulFOp::create(b, l, g, g));
          Value std = arith::AddFOp::create(b, l, math::SqrtOp::create(b, l, s),
                                            f32Const(b, l, eps));
          Value p = arith::AddFOp::create(
              b, l, a[0],
              arith::MulFOp::create(b, l, negLr,
                                    arith::DivFOp::create(b, l, g, std)));
          return {p, s};
        });
    rewriter.replaceOp(op, results);
    return success();
  }
};

} // namespace

void mlir::txl::populateTxlOptimizerToLinalgPatterns(
    RewritePatternSet &patterns) {
  patterns.add<SquaredNormLowering, AdamUpdateLowering, SgdUpdateLowering,
               AdagradUpdateLowering>(patterns.getContext());
}

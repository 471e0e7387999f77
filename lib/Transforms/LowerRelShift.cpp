//===- LowerRelShift.cpp - Lower txl.rel_shift to index arithmetic -*- C++ -*-===//
//
// The official _rel_shift pads a zero column, reinterprets [qlen, klen+1] as
// [klen+1, qlen], drops the first row and reads it back as [qlen, klen]. The
// net effect is result[i, j] = input[i, j + qlen - 1 - i]; this pass writes
// exactly that gather, so no padded or reshaped copy is made. Its backward,
// txl.rel_shift_grad, is the transposed gather.
//
//===----------------------------------------------------------------------===//

#include "txl/IR/TxlOps.h"
#include "txl/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace txl {
#define GEN_PASS_DEF_LOWERRELSHIFTPASS
#include "txl/Transforms/Passes.h.inc"
} // namespace txl
} // namespace mlir

using namespace mlir;
using namespace mlir::txl;

namespace {

/// A tensor.generate shaped like `input` [qlen, klen, batch, n_head] whose
/// entry (i, j, b, n) is input[i, src, b, n] when `inBounds`, else 0, where
/// `column(i, j, qlen, klen)` returns (src, inBounds) in index arithmetic.
static Value gatherColumns(
    PatternRewriter &rewriter, Location loc, Value input,
    function_ref<std::pair<Value, Value>(OpBuilder &, Location, Value, Value,
                                         Value, Value)>
        column) {
  auto type = cast<RankedTensorType>(input.getType());
  SmallVector<Value> dynamicDims;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (type.isDynamicDim(d))
      dynamicDims.push_back(tensor::DimOp::create(rewriter, loc, input, d));
  Value qlen = tensor::DimOp::create(rewriter, loc, input, 0);
  Value klen = tensor::DimOp::create(rewriter, loc, input, 1);
  return tensor::GenerateOp::create(
             rewriter, loc, type, dynamicDims,
             [&](OpBuilder &b, Location loc, ValueRange ivs) {
               auto [src, inBounds] =
                   column(b, loc, ivs[0], ivs[1], qlen, klen);
               // Clamped so that the (discarded) read stays inside the tensor.
               Value one = arith::ConstantIndexOp::create(b, loc, 1);
               Value lastCol = arith::SubIOp::create(b, loc, klen, one);
               Value clamped = arith::MinUIOp::create(b, loc, src, lastCol);
               Value elem = tensor::ExtractOp::create(
                   b, loc, input, ValueRange{ivs[0], clamped, ivs[2], ivs[3]});
               Value zero = arith::ConstantOp::create(
                   b, loc, b.getZeroAttr(type.getElementType()));
               Value result =
                   arith::SelectOp::create(b, loc, inBounds, elem, zero);
               tensor::YieldOp::create(b, loc, result);
             })
      .getResult();
}

// rel_shift(x)[i, j, b, n] => j + qlen - 1 - i < klen ? x[i, j + qlen - 1 - i, b, n] : 0
struct RelShiftLowering : public OpRewritePattern<RelShiftOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(RelShiftOp op,
                                PatternRewriter &rewriter) const override {
    Value result = gatherColumns(
        rewriter, op.getLoc(), op.getInput(),
        [](OpBuilder &b, Location loc, Value i, Value j, Value qlen,
           Value klen) {
          Value one = arith::ConstantIndexOp::create(b, loc, 1);
          Value lastRow = arith::SubIOp::create(b, loc, qlen, one);
          Value src = arith::SubIOp::create(
              b, loc, arith::AddIOp::create(b, loc, j, lastRow), i);
          Value inBounds = arith::CmpIOp::create(
              b, loc, arith::CmpIPredicate::ult, src, klen);
          return std::pair(src, inBounds);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

// rel_shift_grad(dy)[i, c, b, n] =>
//   c + i + 1 >= qlen ? dy[i, c + i + 1 - qlen, b, n] : 0
// (the transpose of the gather above: each input column is read by at most
// one shifted entry of its row)
struct RelShiftGradLowering : public OpRewritePattern<RelShiftGradOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(RelShiftGradOp op,
                                PatternRewriter &rewriter) const override {
    Value result = gatherColumns(
        rewriter, op.getLoc(), op.getDResult(),
        [](OpBuilder &b, Location loc, Value i, Value c, Value qlen, Value) {
          Value one = arith::ConstantIndexOp::create(b, loc, 1);
          Value end = arith::AddIOp::create(
              b, loc, arith::AddIOp::create(b, loc, c, i), one);
          Value inBounds = arith::CmpIOp::create(
              b, loc, arith::CmpIPredicate::uge, end, qlen);
          Value src = arith::SubIOp::create(b, loc, end, qlen);
          return std::pair(src, inBounds);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct LowerRelShiftPass
    : public txl::impl::LowerRelShiftPassBase<LowerRelShiftPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<RelShiftLowering, RelShiftGradLowering>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace

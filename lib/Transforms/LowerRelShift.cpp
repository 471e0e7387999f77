//===- LowerRelShift.cpp - Lower txl.rel_shift to index arithmetic -*- C++ -*-===//
//
// The official _rel_shift pads a zero column, reinterprets [qlen, klen+1] as
// [klen+1, qlen], drops the first row and reads it back as [qlen, klen]. The
// net effect is result[i, j] = input[i, j + qlen - 1 - i]; this pass writes
// exactly that gather, so no padded or reshaped copy is made.
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

// rel_shift(x)[i, j, b, n] => j + qlen - 1 - i < klen ? x[i, j + qlen - 1 - i, b, n] : 0
struct RelShiftLowering : public OpRewritePattern<RelShiftOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(RelShiftOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = op.getInput();
    auto type = cast<RankedTensorType>(input.getType());
    SmallVector<Value> dynamicDims;
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (type.isDynamicDim(d))
        dynamicDims.push_back(tensor::DimOp::create(rewriter, loc, input, d));
    Value qlen = tensor::DimOp::create(rewriter, loc, input, 0);
    Value klen = tensor::DimOp::create(rewriter, loc, input, 1);

    auto generate = tensor::GenerateOp::create(
        rewriter, loc, type, dynamicDims,
        [&](OpBuilder &b, Location loc, ValueRange ivs) {
          Value one = arith::ConstantIndexOp::create(b, loc, 1);
          Value lastRow = arith::SubIOp::create(b, loc, qlen, one);
          Value shifted = arith::AddIOp::create(b, loc, ivs[1], lastRow);
          Value src = arith::SubIOp::create(b, loc, shifted, ivs[0]);
          Value inBounds = arith::CmpIOp::create(
              b, loc, arith::CmpIPredicate::ult, src, klen);
          Value lastCol = arith::SubIOp::create(b, loc, klen, one);
          Value clamped = arith::MinUIOp::create(b, loc, src, lastCol);
          Value elem = tensor::ExtractOp::create(
              b, loc, input, ValueRange{ivs[0], clamped, ivs[2], ivs[3]});
          Value zero = arith::ConstantOp::create(
              b, loc, b.getZeroAttr(type.getElementType()));
          Value result =
              arith::SelectOp::create(b, loc, inBounds, elem, zero);
          tensor::YieldOp::create(b, loc, result);
        });
    rewriter.replaceOp(op, generate.getResult());
    return success();
  }
};

struct LowerRelShiftPass
    : public txl::impl::LowerRelShiftPassBase<LowerRelShiftPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<RelShiftLowering>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace

//===- ExpandStridedCopies.cpp - Strided memref.copy => linalg.copy -*- C++ -*-===//
//
// Keeps generated objects free of MLIR runtime symbols: only contiguous
// copies stay memref.copy (they become llvm.memcpy).
//
//===----------------------------------------------------------------------===//

#include "txl/Conversion/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace txl {
#define GEN_PASS_DEF_EXPANDSTRIDEDCOPIESPASS
#include "txl/Conversion/Passes.h.inc"
} // namespace txl
} // namespace mlir

using namespace mlir;
using namespace mlir::txl;

namespace {

// memref.copy(strided src or dst) => linalg.copy
struct StridedCopyLowering : public OpRewritePattern<memref::CopyOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(memref::CopyOp op,
                                PatternRewriter &rewriter) const override {
    auto src = cast<MemRefType>(op.getSource().getType());
    auto dst = cast<MemRefType>(op.getTarget().getType());
    if (src.getLayout().isIdentity() && dst.getLayout().isIdentity())
      return rewriter.notifyMatchFailure(op, "contiguous copy becomes memcpy");
    rewriter.replaceOpWithNewOp<linalg::CopyOp>(op, op.getSource(),
                                                op.getTarget());
    return success();
  }
};

/// Whether `a` and `b` are the same memory: one value, or two subviews of
/// one buffer with the same offsets, sizes and strides.
static bool isSameView(Value a, Value b) {
  if (a == b)
    return true;
  auto va = a.getDefiningOp<memref::SubViewOp>();
  auto vb = b.getDefiningOp<memref::SubViewOp>();
  return va && vb && va.getSource() == vb.getSource() &&
         va.getType() == vb.getType() &&
         isEqualConstantIntOrValueArray(va.getMixedOffsets(),
                                        vb.getMixedOffsets()) &&
         isEqualConstantIntOrValueArray(va.getMixedSizes(),
                                        vb.getMixedSizes()) &&
         isEqualConstantIntOrValueArray(va.getMixedStrides(),
                                        vb.getMixedStrides());
}

// memref.copy of a buffer onto itself => erased. Bufferizing an in-place
// update (a slice computed in place and inserted back where it came from,
// the result materialized into its own argument) leaves such copies; they
// must not become a memcpy, which would also race with another thread
// updating another part of the same buffer.
struct SelfCopyErasure : public OpRewritePattern<memref::CopyOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(memref::CopyOp op,
                                PatternRewriter &rewriter) const override {
    if (!isSameView(op.getSource(), op.getTarget()))
      return rewriter.notifyMatchFailure(op, "not a copy onto itself");
    rewriter.eraseOp(op);
    return success();
  }
};

struct ExpandStridedCopiesPass
    : public txl::impl::ExpandStridedCopiesPassBase<ExpandStridedCopiesPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<SelfCopyErasure>(&getContext(), /*benefit=*/2);
    patterns.add<StridedCopyLowering>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace

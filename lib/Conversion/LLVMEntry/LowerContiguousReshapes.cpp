//===- LowerContiguousReshapes.cpp - expand_shape => reinterpret_cast -*- C++ -*-===//
//
// Works around an LLVM 22 crash in --expand-strided-metadata on expansion
// groups with two dynamic sizes: contiguous expansions are rewritten here,
// first, as a reinterpret_cast with row-major strides.
//
//===----------------------------------------------------------------------===//

#include "txl/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace txl {
#define GEN_PASS_DEF_LOWERCONTIGUOUSRESHAPESPASS
#include "txl/Conversion/Passes.h.inc"
} // namespace txl
} // namespace mlir

using namespace mlir;
using namespace mlir::txl;

namespace {

// memref.expand_shape(identity-layout src) => reinterpret_cast(base, 0, sizes, row-major strides)
struct ContiguousExpandLowering
    : public OpRewritePattern<memref::ExpandShapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(memref::ExpandShapeOp op,
                                PatternRewriter &rewriter) const override {
    MemRefType srcType = op.getSrcType();
    MemRefType resultType = op.getResultType();
    if (!srcType.getLayout().isIdentity() ||
        !resultType.getLayout().isIdentity())
      return rewriter.notifyMatchFailure(op, "not a contiguous expansion");
    Location loc = op.getLoc();
    SmallVector<OpFoldResult> sizes = op.getMixedOutputShape();
    SmallVector<OpFoldResult> strides(sizes.size());
    OpFoldResult stride = rewriter.getIndexAttr(1);
    for (int64_t d = sizes.size() - 1; d >= 0; --d) {
      strides[d] = stride;
      std::optional<int64_t> s = getConstantIntValue(stride);
      std::optional<int64_t> n = getConstantIntValue(sizes[d]);
      if (s && n) {
        stride = rewriter.getIndexAttr(*s * *n);
        continue;
      }
      Value sv = getValueOrCreateConstantIndexOp(rewriter, loc, stride);
      Value nv = getValueOrCreateConstantIndexOp(rewriter, loc, sizes[d]);
      stride = arith::MulIOp::create(rewriter, loc, sv, nv).getResult();
    }
    auto meta = memref::ExtractStridedMetadataOp::create(rewriter, loc, op.getSrc());
    rewriter.replaceOpWithNewOp<memref::ReinterpretCastOp>(
        op, resultType, meta.getBaseBuffer(), rewriter.getIndexAttr(0), sizes,
        strides);
    return success();
  }
};

struct LowerContiguousReshapesPass
    : public txl::impl::LowerContiguousReshapesPassBase<
          LowerContiguousReshapesPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ContiguousExpandLowering>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace

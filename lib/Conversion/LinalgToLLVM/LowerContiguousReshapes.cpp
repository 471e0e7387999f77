//===- LowerContiguousReshapes.cpp - expand_shape => reinterpret_cast -*- C++ -*-===//
//
// Works around an LLVM 22 crash in --expand-strided-metadata on expansion
// groups with two dynamic sizes: expansions of strided buffers (contiguous
// ones, and views such as the shifted positional scores) are rewritten here,
// first, as a reinterpret_cast of the same base, offset and group strides.
//
//===----------------------------------------------------------------------===//

#include "txl/Conversion/IndexArithmetic.h"
#include "txl/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
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

/// `x` as an OpFoldResult that is an attribute exactly when `dynamic` is
/// false, as a memref type with that static or dynamic entry requires.
static OpFoldResult matchType(OpBuilder &b, Location loc, OpFoldResult x,
                              bool dynamic, int64_t staticValue) {
  if (!dynamic)
    return b.getIndexAttr(staticValue);
  return getValueOrCreateConstantIndexOp(b, loc, x);
}

// memref.expand_shape(strided src) => reinterpret_cast(base, src offset, sizes,
// src stride of each group times the sizes inside it)
struct StridedExpandLowering : public OpRewritePattern<memref::ExpandShapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(memref::ExpandShapeOp op,
                                PatternRewriter &rewriter) const override {
    MemRefType srcType = op.getSrcType();
    MemRefType resultType = op.getResultType();
    SmallVector<int64_t> srcStrides, resultStrides;
    int64_t srcOffset, resultOffset;
    if (failed(srcType.getStridesAndOffset(srcStrides, srcOffset)) ||
        failed(resultType.getStridesAndOffset(resultStrides, resultOffset)))
      return rewriter.notifyMatchFailure(op, "not a strided layout");
    Location loc = op.getLoc();
    auto meta =
        memref::ExtractStridedMetadataOp::create(rewriter, loc, op.getSrc());
    // Static strides and offset of the source are used as such, so that a
    // contiguous source gets offset 0 and constant strides where it can.
    auto srcStride = [&](int64_t d) -> OpFoldResult {
      if (!ShapedType::isDynamic(srcStrides[d]))
        return rewriter.getIndexAttr(srcStrides[d]);
      return meta.getStrides()[d];
    };
    SmallVector<OpFoldResult> sizes = op.getMixedOutputShape();
    SmallVector<OpFoldResult> strides(sizes.size());
    for (auto [g, group] : llvm::enumerate(op.getReassociationIndices())) {
      OpFoldResult stride = srcStride(g);
      for (int64_t d : llvm::reverse(group)) {
        strides[d] = matchType(rewriter, loc, stride,
                               ShapedType::isDynamic(resultStrides[d]),
                               resultStrides[d]);
        stride = mulFolded(rewriter, loc, stride, sizes[d]);
      }
    }
    OpFoldResult offset = ShapedType::isDynamic(srcOffset)
                              ? OpFoldResult(meta.getOffset())
                              : rewriter.getIndexAttr(srcOffset);
    offset = matchType(rewriter, loc, offset,
                       ShapedType::isDynamic(resultOffset), resultOffset);
    rewriter.replaceOpWithNewOp<memref::ReinterpretCastOp>(
        op, resultType, meta.getBaseBuffer(), offset, sizes, strides);
    return success();
  }
};

struct LowerContiguousReshapesPass
    : public txl::impl::LowerContiguousReshapesPassBase<
          LowerContiguousReshapesPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<StridedExpandLowering>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace

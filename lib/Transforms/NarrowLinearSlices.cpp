//===- NarrowLinearSlices.cpp - Compute only the used rows/columns -*- C++ -*-===//
//
// The official attention projects the whole concatenation [mem; h] with
// qkv_net and then keeps q only for the rows of h (w_head_q[-qlen:]), so a
// third of the projection of the memory rows is computed and dropped; its
// backward then also forms the input gradient of the memory rows, which the
// stop-gradient drops. The patterns here move the slice before the product
// (a row-wise op commutes with a slice of its rows; a linear's output
// columns are its weight's rows), so only the kept rows and columns are
// computed. The result is the same function with fewer products.
//
//===----------------------------------------------------------------------===//

#include "txl/IR/TxlOps.h"
#include "txl/Transforms/Passes.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir {
namespace txl {
#define GEN_PASS_DEF_NARROWLINEARSLICESPASS
#include "txl/Transforms/Passes.h.inc"
} // namespace txl
} // namespace mlir

using namespace mlir;
using namespace mlir::txl;

namespace {

/// A unit-stride tensor.extract_slice that keeps the rank: its offsets and
/// sizes over the leading dimensions, and the range [colOffset, colOffset +
/// colSize) of the last one (static).
struct LeadingSlice {
  SmallVector<OpFoldResult> offsets, sizes; ///< leading dimensions only
  int64_t colOffset = 0, colSize = 0;
};

static std::optional<LeadingSlice> matchLeadingSlice(tensor::ExtractSliceOp op) {
  auto type = cast<RankedTensorType>(op.getSource().getType());
  int64_t rank = type.getRank();
  if (!op.hasUnitStride() || op.getResultType().getRank() != rank ||
      rank < 2 || type.isDynamicDim(rank - 1))
    return std::nullopt;
  std::optional<int64_t> colOffset =
      getConstantIntValue(op.getMixedOffsets().back());
  std::optional<int64_t> colSize =
      getConstantIntValue(op.getMixedSizes().back());
  if (!colOffset || !colSize)
    return std::nullopt;
  LeadingSlice s{op.getMixedOffsets(), op.getMixedSizes(), *colOffset,
                 *colSize};
  s.offsets.pop_back();
  s.sizes.pop_back();
  return s;
}

/// Whether `size` is dimension d of `t`: its static size, `tensor.dim %t, d`,
/// or the dim of a tensor that dimension is known to equal (the batch of a
/// txl.concat_mem and of its hidden; a leading dimension of a txl.linear or
/// txl.linear_input_grad and of its row operand).
static bool isDimOf(OpFoldResult size, Value t, int64_t d) {
  auto type = cast<RankedTensorType>(t.getType());
  if (!type.isDynamicDim(d))
    return isConstantIntValue(size, type.getDimSize(d));
  auto value = dyn_cast_if_present<Value>(size);
  auto dim = value ? value.getDefiningOp<tensor::DimOp>() : nullptr;
  if (dim && dim.getSource() == t && dim.getConstantIndex() == d)
    return true;
  bool leading = d + 1 < type.getRank();
  if (auto cat = t.getDefiningOp<ConcatMemOp>(); cat && d >= 1)
    return isDimOf(size, cat.getHidden(), d);
  if (auto linear = t.getDefiningOp<LinearOp>(); linear && leading)
    return isDimOf(size, linear.getInput(), d);
  if (auto grad = t.getDefiningOp<LinearInputGradOp>(); grad && leading)
    return isDimOf(size, grad.getDResult(), d);
  return false;
}

/// The leading dimensions [offsets, offsets + sizes) of `x` with its last
/// dimension whole: `hidden` when x = txl.concat_mem(memory, hidden) and
/// they are exactly hidden's rows (offset dim(memory, 0), every other
/// dimension hidden's), `x` itself when every offset is 0 and every size
/// x's, else a tensor.extract_slice.
static Value sliceLeading(PatternRewriter &rewriter, Location loc, Value x,
                          ArrayRef<OpFoldResult> offsets,
                          ArrayRef<OpFoldResult> sizes) {
  int64_t lead = static_cast<int64_t>(offsets.size());
  auto wholeFrom = [&](Value t, int64_t first) {
    for (int64_t d = first; d < lead; ++d)
      if (!isZeroInteger(offsets[d]) || !isDimOf(sizes[d], t, d))
        return false;
    return true;
  };
  if (isZeroInteger(offsets[0]) && isDimOf(sizes[0], x, 0) && wholeFrom(x, 1))
    return x;
  if (auto cat = x.getDefiningOp<ConcatMemOp>()) {
    Value hidden = cat.getHidden();
    auto value = dyn_cast_if_present<Value>(offsets[0]);
    auto dim = value ? value.getDefiningOp<tensor::DimOp>() : nullptr;
    bool atMemoryEnd = dim && dim.getSource() == cat.getMemory() &&
                       dim.getConstantIndex() == 0;
    if (atMemoryEnd && isDimOf(sizes[0], hidden, 0) &&
        (wholeFrom(hidden, 1) || wholeFrom(x, 1)))
      return hidden;
  }
  SmallVector<OpFoldResult> allOffsets(offsets), allSizes(sizes);
  allOffsets.push_back(rewriter.getIndexAttr(0));
  allSizes.push_back(tensor::getMixedSize(rewriter, loc, x, lead));
  SmallVector<OpFoldResult> strides(lead + 1, rewriter.getIndexAttr(1));
  return tensor::ExtractSliceOp::create(rewriter, loc, x, allOffsets, allSizes,
                                        strides);
}

/// Rows [offset, offset + size) of a [rows] bias or [rows, in] weight.
static Value sliceRows(PatternRewriter &rewriter, Location loc, Value t,
                       int64_t offset, int64_t size) {
  auto type = cast<RankedTensorType>(t.getType());
  if (offset == 0 && size == type.getDimSize(0))
    return t;
  SmallVector<OpFoldResult> offsets(type.getRank(), rewriter.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(rewriter, loc, t);
  SmallVector<OpFoldResult> strides(type.getRank(), rewriter.getIndexAttr(1));
  offsets[0] = rewriter.getIndexAttr(offset);
  sizes[0] = rewriter.getIndexAttr(size);
  return tensor::ExtractSliceOp::create(rewriter, loc, t, offsets, sizes,
                                        strides);
}

// y = txl.linear(x, w, bias) read only through slices =>
// one txl.linear per distinct range of the leading (row) dimensions, over
// those rows of x and over the rows of w (and bias) spanning the columns
// its slices read; each slice then reads the narrowed product. A linear
// whose slices all share one range at offset 0 and read every column is
// left alone.
//
//   %y = txl.linear %cat, %w        // cat = txl.concat_mem %mem, %h
//   %q = tensor.extract_slice %y[%mlen, 0, 0] [%qlen, %b, 128]
//   %k = tensor.extract_slice %y[0, 0, 128] [%klen, %b, 128]
// =>
//   %q = txl.linear %h, (tensor.extract_slice %w[0, 0] [128, 128])
//   %kv = txl.linear %cat, (tensor.extract_slice %w[128, 0] [128, 128])
struct NarrowLinear : public OpRewritePattern<LinearOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LinearOp op,
                                PatternRewriter &rewriter) const override {
    struct Group {
      LeadingSlice range; ///< the leading offsets and sizes
      int64_t colBegin, colEnd;
      SmallVector<std::pair<tensor::ExtractSliceOp, LeadingSlice>, 2> users;
    };
    SmallVector<Group, 2> groups;
    if (op->use_empty())
      return rewriter.notifyMatchFailure(op, "no users");
    for (Operation *user : op->getUsers()) {
      auto slice = dyn_cast<tensor::ExtractSliceOp>(user);
      std::optional<LeadingSlice> s =
          slice ? matchLeadingSlice(slice) : std::nullopt;
      if (!s)
        return rewriter.notifyMatchFailure(op, "a user is not a slice");
      if (slice->getBlock() != op->getBlock())
        return rewriter.notifyMatchFailure(op, "a slice in another block");
      auto *it = llvm::find_if(groups, [&](const Group &g) {
        return isEqualConstantIntOrValueArray(g.range.offsets, s->offsets) &&
               isEqualConstantIntOrValueArray(g.range.sizes, s->sizes);
      });
      if (it == groups.end()) {
        groups.push_back({*s, s->colOffset, s->colOffset + s->colSize, {}});
        it = std::prev(groups.end());
      }
      it->colBegin = std::min(it->colBegin, s->colOffset);
      it->colEnd = std::max(it->colEnd, s->colOffset + s->colSize);
      it->users.push_back({slice, *s});
    }
    int64_t out = op.getWeight().getType().getDimSize(0);
    if (groups.size() == 1 && groups[0].colBegin == 0 &&
        groups[0].colEnd == out &&
        llvm::all_of(groups[0].range.offsets, isZeroInteger))
      return rewriter.notifyMatchFailure(op, "every row and column is used");

    Location loc = op.getLoc();
    for (Group &g : groups) {
      // At the group's first slice, where its offsets and sizes are defined.
      Operation *first = g.users.front().first;
      for (auto &[slice, s] : g.users)
        if (slice->isBeforeInBlock(first))
          first = slice;
      rewriter.setInsertionPoint(first);
      int64_t cols = g.colEnd - g.colBegin;
      Value rows = sliceLeading(rewriter, loc, op.getInput(), g.range.offsets,
                                g.range.sizes);
      Value w = sliceRows(rewriter, loc, op.getWeight(), g.colBegin, cols);
      Value bias = op.getBias()
                       ? sliceRows(rewriter, loc, op.getBias(), g.colBegin, cols)
                       : Value();
      auto rowsType = cast<RankedTensorType>(rows.getType());
      SmallVector<int64_t> shape(rowsType.getShape());
      shape.back() = cols;
      Value narrowed = LinearOp::create(
          rewriter, loc,
          RankedTensorType::get(shape, rowsType.getElementType()), rows, w,
          bias);
      for (auto &[slice, s] : g.users) {
        // A slice reading every column of the narrowed product is it.
        if (s.colSize == cols && slice.getResultType() == narrowed.getType()) {
          rewriter.replaceOp(slice, narrowed);
          continue;
        }
        rewriter.setInsertionPoint(slice);
        int64_t rank = rowsType.getRank();
        SmallVector<OpFoldResult> offsets(rank, rewriter.getIndexAttr(0));
        offsets.back() = rewriter.getIndexAttr(s.colOffset - g.colBegin);
        SmallVector<OpFoldResult> sizes =
            tensor::getMixedSizes(rewriter, loc, narrowed);
        sizes.back() = rewriter.getIndexAttr(s.colSize);
        SmallVector<OpFoldResult> strides(rank, rewriter.getIndexAttr(1));
        rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
            slice, slice.getResultType(), narrowed, offsets, sizes, strides);
      }
    }
    rewriter.eraseOp(op);
    return success();
  }
};

// tensor.extract_slice of the leading dimensions of
// txl.linear_input_grad(dy, w) (its only reader; the last dimension whole)
// => txl.linear_input_grad(the same slice of dy, w): the input gradient is
// formed only where it is read (the hidden rows of d[mem; h]).
struct NarrowLinearInputGrad
    : public OpRewritePattern<tensor::ExtractSliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tensor::ExtractSliceOp slice,
                                PatternRewriter &rewriter) const override {
    auto grad = slice.getSource().getDefiningOp<LinearInputGradOp>();
    if (!grad || !grad->hasOneUse())
      return rewriter.notifyMatchFailure(
          slice, "not the only reader of a txl.linear_input_grad");
    std::optional<LeadingSlice> s = matchLeadingSlice(slice);
    int64_t in = grad.getType().getShape().back();
    if (!s || s->colOffset != 0 || s->colSize != in)
      return rewriter.notifyMatchFailure(slice, "the features are sliced");
    Value dy = sliceLeading(rewriter, slice.getLoc(), grad.getDResult(),
                            s->offsets, s->sizes);
    if (dy == grad.getDResult())
      return rewriter.notifyMatchFailure(slice, "the slice is whole");
    rewriter.replaceOpWithNewOp<LinearInputGradOp>(
        slice, slice.getResultType(), dy, grad.getWeight());
    return success();
  }
};

struct NarrowLinearSlicesPass
    : public txl::impl::NarrowLinearSlicesPassBase<NarrowLinearSlicesPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<NarrowLinear, NarrowLinearInputGrad>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

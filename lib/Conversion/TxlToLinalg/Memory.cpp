//===- Memory.cpp - Lower embedding and segment-memory ops -------*- C++ -*-===//
//
// txl.embedding is a gather, txl.concat_mem two insert_slices into one
// [klen, batch, d] tensor, txl.take_last an extract_slice of the last
// min(count, len) rows (official _update_mems with ext_len = 0), and
// txl.take_last of a txl.concat_mem (the new memory) the two row ranges it
// keeps inserted into the result, without the concatenation.
//
//===----------------------------------------------------------------------===//

#include "Builders.h"
#include "txl/Conversion/Passes.h"
#include "txl/IR/TxlOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::txl;

namespace {

// txl.embedding(table, tokens)[i, b, e] => table[tokens[i, b], e]
struct EmbeddingLowering : public OpRewritePattern<EmbeddingOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(EmbeddingOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    Value table = op.getTable();
    SmallVector<OpFoldResult> sizes = getSizes(rewriter, loc, op.getTokens());
    sizes.push_back(getSizes(rewriter, loc, table)[1]);
    Type elementType = op.getType().getElementType();
    AffineMap tokenMap = AffineMap::get(
        3, 0, {getAffineDimExpr(0, ctx), getAffineDimExpr(1, ctx)}, ctx);
    Value init = createEmpty(rewriter, loc, sizes, elementType);
    Value out =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{init.getType()}, ValueRange{op.getTokens()},
            ValueRange{init}, {tokenMap, identityMap(ctx, 3)},
            SmallVector<utils::IteratorType>(3, utils::IteratorType::parallel),
            [&](OpBuilder &b, Location l, ValueRange a) {
              Value row = arith::IndexCastOp::create(b, l, b.getIndexType(), a[0]);
              Value col = linalg::IndexOp::create(b, l, 2);
              linalg::YieldOp::create(
                  b, l,
                  ValueRange{tensor::ExtractOp::create(b, l, table,
                                                       ValueRange{row, col})});
            })
            .getResult(0);
    rewriter.replaceOp(op, castTo(rewriter, loc, out, op.getType()));
    return success();
  }
};

// txl.concat_mem(mem, h) => insert_slice mem at row 0, h at row mlen
struct ConcatMemLowering : public OpRewritePattern<ConcatMemOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConcatMemOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    SmallVector<OpFoldResult> memSizes = getSizes(rewriter, loc, op.getMemory());
    SmallVector<OpFoldResult> hidSizes = getSizes(rewriter, loc, op.getHidden());
    Value mlen = tensor::DimOp::create(rewriter, loc, op.getMemory(), 0);
    Value qlen = tensor::DimOp::create(rewriter, loc, op.getHidden(), 0);
    Value klen = arith::AddIOp::create(rewriter, loc, mlen, qlen);
    SmallVector<OpFoldResult> sizes = {klen, hidSizes[1], hidSizes[2]};
    Value init =
        createEmpty(rewriter, loc, sizes, op.getType().getElementType());
    OpFoldResult zero = rewriter.getIndexAttr(0), one = rewriter.getIndexAttr(1);
    SmallVector<OpFoldResult> strides(3, one);
    Value withMem = tensor::InsertSliceOp::create(
        rewriter, loc, op.getMemory(), init,
        SmallVector<OpFoldResult>{zero, zero, zero}, memSizes, strides);
    Value full = tensor::InsertSliceOp::create(
        rewriter, loc, op.getHidden(), withMem,
        SmallVector<OpFoldResult>{mlen, zero, zero}, hidSizes, strides);
    rewriter.replaceOp(op, castTo(rewriter, loc, full, op.getType()));
    return success();
  }
};

// txl.take_last(x, n) => extract_slice x[len - min(n, len) :]
struct TakeLastLowering : public OpRewritePattern<TakeLastOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TakeLastOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = op.getInput();
    SmallVector<OpFoldResult> sizes = getSizes(rewriter, loc, input);
    Value len = tensor::DimOp::create(rewriter, loc, input, 0);
    Value count = arith::MinUIOp::create(rewriter, loc, op.getCount(), len);
    Value offset = arith::SubIOp::create(rewriter, loc, len, count);
    OpFoldResult zero = rewriter.getIndexAttr(0), one = rewriter.getIndexAttr(1);
    sizes[0] = count;
    Value slice = tensor::ExtractSliceOp::create(
        rewriter, loc, input, SmallVector<OpFoldResult>{offset, zero, zero},
        sizes, SmallVector<OpFoldResult>(3, one));
    rewriter.replaceOp(op, castTo(rewriter, loc, slice, op.getType()));
    return success();
  }
};

} // namespace

void mlir::txl::populateTxlMemoryToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<EmbeddingLowering, ConcatMemLowering, TakeLastLowering>(
      patterns.getContext());
}

// txl.take_last(txl.concat_mem(mem, h), n): the new memory, as the official
// _update_mems computes it, without the concatenation: of the last
// count = min(n, mlen + qlen) rows of [mem; h], the rows of mem from
// start = mlen + qlen - count on, then the last count - (those) rows of h,
// each inserted into the result. After bufferization the memory's rows are
// copied once, into the result's buffer (the caller's, for a segment's new
// memory), where the concatenation copied them into a [klen, batch, d]
// buffer first. Run before the conversion, which would lower the
// concatenation first (it precedes its users).
static void lowerTakeLastOfConcat(RewriterBase &rewriter, TakeLastOp op,
                                  ConcatMemOp concat) {
  rewriter.setInsertionPoint(op);
  Location loc = op.getLoc();
  Value mem = concat.getMemory(), h = concat.getHidden();
  SmallVector<OpFoldResult> hidSizes = getSizes(rewriter, loc, h);
  Value mlen = tensor::DimOp::create(rewriter, loc, mem, 0);
  Value qlen = tensor::DimOp::create(rewriter, loc, h, 0);
  Value klen = arith::AddIOp::create(rewriter, loc, mlen, qlen);
  Value count = arith::MinUIOp::create(rewriter, loc, op.getCount(), klen);
  Value start = arith::SubIOp::create(rewriter, loc, klen, count);
  // Rows [memStart, mlen) of mem, then rows [qlen - fromH, qlen) of h.
  Value memStart = arith::MinUIOp::create(rewriter, loc, start, mlen);
  Value fromMem = arith::SubIOp::create(rewriter, loc, mlen, memStart);
  Value fromH = arith::SubIOp::create(rewriter, loc, count, fromMem);
  Value hStart = arith::SubIOp::create(rewriter, loc, qlen, fromH);
  OpFoldResult zero = rewriter.getIndexAttr(0), one = rewriter.getIndexAttr(1);
  SmallVector<OpFoldResult> strides(3, one);
  auto rowsOf = [&](Value n) {
    return SmallVector<OpFoldResult>{n, hidSizes[1], hidSizes[2]};
  };
  auto slice = [&](Value x, Value first, Value n) {
    return tensor::ExtractSliceOp::create(
        rewriter, loc, x, SmallVector<OpFoldResult>{first, zero, zero},
        rowsOf(n), strides);
  };
  Value init =
      createEmpty(rewriter, loc, rowsOf(count), op.getType().getElementType());
  Value withMem = tensor::InsertSliceOp::create(
      rewriter, loc, slice(mem, memStart, fromMem), init,
      SmallVector<OpFoldResult>{zero, zero, zero}, rowsOf(fromMem), strides);
  Value full = tensor::InsertSliceOp::create(
      rewriter, loc, slice(h, hStart, fromH), withMem,
      SmallVector<OpFoldResult>{fromMem, zero, zero}, rowsOf(fromH), strides);
  rewriter.replaceOp(op, castTo(rewriter, loc, full, op.getType()));
  if (concat->use_empty())
    rewriter.eraseOp(concat);
}

void mlir::txl::lowerNewMemories(Operation *root) {
  IRRewriter rewriter(root->getContext());
  SmallVector<TakeLastOp> ops;
  root->walk([&](TakeLastOp op) { ops.push_back(op); });
  for (TakeLastOp op : ops)
    if (auto concat = op.getInput().getDefiningOp<ConcatMemOp>())
      lowerTakeLastOfConcat(rewriter, op, concat);
}

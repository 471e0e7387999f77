//===- Dropout.cpp - Lower txl.dropout to Philox4x32-10 bits -----*- C++
//-*-===//
//
// Counter-based dropout: the random word of every element is Philox4x32-10
// (Salmon, Moraes, Dror, Shaw, "Parallel Random Numbers: As Easy as 1, 2,
// 3", SC 2011) of a counter built from the element's index, the site's
// stream and the call's offset, under the 64-bit seed as key. Nothing is
// stored and nothing is sequential: the backward pass recomputes the mask
// from the same operands, and any evaluation order (loops, threads, a GPU)
// draws the same bits.
//
//===----------------------------------------------------------------------===//

#include "Builders.h"
#include "txl/Conversion/Passes.h"
#include "txl/Conversion/Philox.h"
#include "txl/IR/TxlOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"

#include <array>
#include <cmath>

using namespace mlir;
using namespace mlir::txl;

using namespace mlir::txl::philox;

/// The element `x` kept and scaled, or zeroed, by word `word` (i32 in
/// [0, 4)) of the block `words`.
static Value applyWord(OpBuilder &b, Location loc, std::array<Value, 4> words,
                       Value word, Value x, Value minKept, Value scale,
                       Value zero) {
  Value keep = isKept(b, loc, selectWord(b, loc, words, word), minKept);
  Value scaled = arith::MulFOp::create(b, loc, x, scale);
  return arith::SelectOp::create(b, loc, keep, scaled, zero);
}

/// Row-major index of the current iteration over the dimensions `dims`
/// (outermost first) of sizes `sizes`, the iteration index of dimension d
/// being `linalg.index indexDims[d]`, plus `column` (index) for dimension
/// `batchDim` when `column` is not null. The batch dimension comes first in
/// `dims` then, so its size never enters the index.
static Value rowMajorIndex(OpBuilder &b, Location loc, ArrayRef<int64_t> dims,
                           ArrayRef<Value> sizes, ArrayRef<int64_t> indexDims,
                           Value column, int64_t batchDim) {
  Value e = arith::ConstantIndexOp::create(b, loc, 0);
  for (int64_t d : dims) {
    Value scaled = arith::MulIOp::create(b, loc, e, sizes[d]);
    Value i = linalg::IndexOp::create(b, loc, indexDims[d]);
    if (column && d == batchDim)
      i = arith::AddIOp::create(b, loc, i, column);
    e = arith::AddIOp::create(b, loc, scaled, i);
  }
  return e;
}

// The generic writes over x: with scf.if yielding x in eval mode, a fresh
// result buffer in the training branch makes One-Shot Bufferize treat that
// write as conflicting with the read of x (both alias the if's result) and
// copy x first. Written in place, both branches yield x's buffer; x is
// copied only when it is read after the dropout.
Value mlir::txl::createDropout(OpBuilder &b, Location loc, Value x,
                               const DropoutSite &site,
                               ArrayRef<int64_t> logicalDims) {
  if (site.rate == 0.0)
    return x;
  auto type = cast<RankedTensorType>(x.getType());
  Type et = type.getElementType();
  int64_t rank = type.getRank();
  assert(static_cast<int64_t>(logicalDims.size()) == rank &&
         "one logical position per dimension");
  assert((!site.column || logicalDims.front() == site.batchDim) &&
         "the batch dimension counts outermost");
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  // The four elements of a block are consecutive along the innermost logical
  // dimension when its size is a static multiple of 4 (and it is not the
  // batch dimension, whose index the column shifts): then one Philox call
  // serves them all.
  int64_t inner = logicalDims.back();
  int64_t innerSize = type.getDimSize(inner);
  bool blocked = !ShapedType::isDynamic(innerSize) && innerSize > 0 &&
                 innerSize % 4 == 0 && !(site.column && inner == site.batchDim);

  auto dropped = [&](OpBuilder &tb, Location l) -> Value {
    // Loop-invariant parts of the key and counter, hoisted out of the body.
    SmallVector<std::pair<Value, Value>> keys =
        roundKeys(tb, l, splitWords(tb, l, site.seed));
    Value stream = arith::ConstantIntOp::create(tb, l, site.stream, 64);
    if (site.streamBase)
      stream = arith::AddIOp::create(tb, l, site.streamBase, stream);
    Value c1 = arith::TruncIOp::create(tb, l, i32, stream);
    std::pair<Value, Value> offset = splitWords(tb, l, site.offset);
    Value column =
        site.column
            ? arith::IndexCastOp::create(tb, l, tb.getIndexType(), site.column)
                  .getResult()
            : Value();
    SmallVector<OpFoldResult> sizeOfrs = getSizes(tb, l, x);
    SmallVector<Value> sizes = getValueOrCreateConstantIndexOp(tb, l, sizeOfrs);
    Value minKept = constantI32(tb, l, keepThreshold(site.rate));
    Value scale = arith::ConstantOp::create(
        tb, l, tb.getFloatAttr(et, 1.0 / (1.0 - site.rate)));
    Value zero = arith::ConstantOp::create(tb, l, tb.getFloatAttr(et, 0.0));
    auto philoxAt = [&](OpBuilder &nb, Location bl, Value block) {
      Value c0 = arith::TruncIOp::create(
          nb, bl, i32, arith::IndexCastUIOp::create(nb, bl, i64, block));
      return philox4x32(nb, bl, {c0, c1, offset.first, offset.second}, keys);
    };
    SmallVector<int64_t> sameDims =
        llvm::to_vector(llvm::seq<int64_t>(0, rank));

    if (!blocked) {
      AffineMap id = identityMap(tb.getContext(), rank);
      return createPointwise(
          tb, l, x, ValueRange{x}, {id},
          [&](OpBuilder &nb, Location bl, ValueRange a) -> Value {
            // e: the row-major index in the logical layout; block e / 4,
            // word e mod 4.
            Value e = rowMajorIndex(nb, bl, logicalDims, sizes, sameDims,
                                    column, site.batchDim);
            Value four = arith::ConstantIndexOp::create(nb, bl, 4);
            Value word = arith::TruncIOp::create(
                nb, bl, i32,
                arith::IndexCastUIOp::create(
                    nb, bl, i64, arith::RemUIOp::create(nb, bl, e, four)));
            return applyWord(
                nb, bl,
                philoxAt(nb, bl, arith::DivUIOp::create(nb, bl, e, four)), word,
                a[0], minKept, scale, zero);
          },
          /*dest=*/x);
    }

    // x with its innermost logical dimension split into [blocks, 4]; the
    // generic iterates over x's dimensions (that one counting blocks) and,
    // innermost, the word w, so the Philox call is invariant in the w loop.
    MLIRContext *ctx = tb.getContext();
    SmallVector<ReassociationIndices> reassoc;
    SmallVector<OpFoldResult> splitSizes;
    SmallVector<AffineExpr> exprs;
    AffineExpr w = getAffineDimExpr(rank, ctx);
    for (int64_t d = 0; d < rank; ++d) {
      int64_t at = static_cast<int64_t>(splitSizes.size());
      exprs.push_back(getAffineDimExpr(d, ctx));
      if (d != inner) {
        reassoc.push_back({at});
        splitSizes.push_back(sizeOfrs[d]);
        continue;
      }
      reassoc.push_back({at, at + 1});
      splitSizes.push_back(tb.getIndexAttr(innerSize / 4));
      splitSizes.push_back(tb.getIndexAttr(4));
      exprs.push_back(w);
    }
    SmallVector<Value> blockSizes = sizes;
    blockSizes[inner] = arith::ConstantIndexOp::create(tb, l, innerSize / 4);
    Value split = createExpand(tb, l, x, reassoc, splitSizes);
    AffineMap map = AffineMap::get(rank + 1, 0, exprs, ctx);
    Value result =
        linalg::GenericOp::create(
            tb, l, TypeRange{split.getType()}, ValueRange{split},
            ValueRange{split}, {map, map},
            SmallVector<utils::IteratorType>(rank + 1,
                                             utils::IteratorType::parallel),
            [&](OpBuilder &nb, Location bl, ValueRange a) {
              Value block = rowMajorIndex(nb, bl, logicalDims, blockSizes,
                                          sameDims, column, site.batchDim);
              Value word = arith::IndexCastUIOp::create(
                  nb, bl, i32, linalg::IndexOp::create(nb, bl, rank));
              linalg::YieldOp::create(
                  nb, bl,
                  ValueRange{applyWord(nb, bl, philoxAt(nb, bl, block), word,
                                       a[0], minKept, scale, zero)});
            })
            .getResult(0);
    return castTo(tb, l, createCollapse(tb, l, result, reassoc), x.getType());
  };
  auto ifOp = scf::IfOp::create(
      b, loc, site.training,
      [&](OpBuilder &tb, Location l) {
        scf::YieldOp::create(tb, l, dropped(tb, l));
      },
      [&](OpBuilder &eb, Location l) { scf::YieldOp::create(eb, l, x); });
  return ifOp.getResult(0);
}

namespace {

// txl.dropout(x) => scf.if training { keep(e) ? x / (1 - rate) : 0 } else { x }
// (e: the element's row-major index, by global batch column with a column)
struct DropoutLowering : public OpRewritePattern<DropoutOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(DropoutOp op,
                                PatternRewriter &rewriter) const override {
    DropoutSite site{op.getSeed(),
                     op.getOffset(),
                     op.getTraining(),
                     op.getStreamBase(),
                     op.getRate().convertToDouble(),
                     static_cast<int64_t>(op.getStream())};
    // Row-major over the tensor; with a column, the batch dimension
    // outermost and the others in order.
    SmallVector<int64_t> order;
    if (std::optional<uint64_t> batchDim = op.getBatchDim()) {
      site.column = op.getColumn();
      site.batchDim = static_cast<int64_t>(*batchDim);
      order.push_back(site.batchDim);
    }
    for (int64_t d = 0, e = op.getType().getRank(); d < e; ++d)
      if (d != site.batchDim)
        order.push_back(d);
    rewriter.replaceOp(
        op, createDropout(rewriter, op.getLoc(), op.getInput(), site, order));
    return success();
  }
};

} // namespace

void mlir::txl::populateTxlDropoutToLinalgPatterns(
    RewritePatternSet &patterns) {
  patterns.add<DropoutLowering>(patterns.getContext());
}

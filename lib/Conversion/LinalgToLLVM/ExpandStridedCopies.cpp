//===- ExpandStridedCopies.cpp - Strided copies => row copies -*- C++ -*-===//
//
// Keeps generated objects free of MLIR runtime symbols (only contiguous
// copies stay memref.copy; they become llvm.memcpy) and moves layout copies
// and transposes a contiguous row at a time.
//
//===----------------------------------------------------------------------===//

#include "txl/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
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

/// Smallest row, in bytes, worth a memcpy of its own: below it the loop
/// over rows costs more than the scalar copy it replaces.
constexpr int64_t kMinRowBytes = 16;

/// Number of trailing dimensions of `type` that are static and laid out
/// contiguously (the last has stride 1, each one's stride is the next one's
/// stride times its size): one row of that many dimensions is one run of
/// memory. 0 when the innermost stride is not a static 1.
static unsigned contiguousTrailingDims(MemRefType type) {
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) || strides.empty() ||
      strides.back() != 1)
    return 0;
  unsigned rank = type.getRank(), n = 0;
  int64_t expected = 1;
  for (unsigned i = rank; i-- > 0;) {
    if (type.isDynamicDim(i) || strides[i] != expected)
      break;
    expected *= type.getDimSize(i);
    ++n;
  }
  return n;
}

/// Copies `src` into `dst` where dimension i of `dst` is dimension
/// `perm[i]` of `src` (the identity for a plain copy), as a loop nest over
/// the leading dimensions of `dst` with one `memref.copy` per row: the
/// trailing dimensions that the permutation keeps in place and that are
/// static and contiguous in both buffers. Each row copy is a static,
/// contiguous `memref.copy`, which `--finalize-memref-to-llvm` turns into an
/// `llvm.memcpy` of constant size (inlined as vector moves), instead of the
/// scalar element loop of `linalg.copy`/`linalg.transpose`, which LLVM
/// cannot vectorize when it cannot prove the buffers apart. Fails (emitting
/// nothing) when the row is shorter than kMinRowBytes.
static LogicalResult emitRowCopies(RewriterBase &b, Location loc, Value src,
                                   Value dst, ArrayRef<int64_t> perm) {
  auto srcType = cast<MemRefType>(src.getType());
  auto dstType = cast<MemRefType>(dst.getType());
  unsigned rank = dstType.getRank();
  if (rank == 0 || !srcType.getElementType().isIntOrFloat())
    return failure();
  unsigned kept = 0;
  while (kept < rank && perm[rank - 1 - kept] == int64_t(rank - 1 - kept))
    ++kept;
  unsigned rowDims = std::min({kept, contiguousTrailingDims(srcType),
                               contiguousTrailingDims(dstType)});
  int64_t rowElements = 1;
  for (unsigned i = rank - rowDims; i < rank; ++i)
    rowElements *= dstType.getDimSize(i);
  int64_t elementBytes = srcType.getElementTypeBitWidth() / 8;
  if (rowDims == 0 || rowElements * elementBytes < kMinRowBytes)
    return failure();

  unsigned outer = rank - rowDims;
  SmallVector<Value> ivs;
  OpBuilder::InsertionGuard guard(b);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  SmallVector<Value> bounds;
  for (unsigned i = 0; i < outer; ++i)
    bounds.push_back(memref::DimOp::create(b, loc, dst, i));
  for (Value bound : bounds) {
    auto loop = scf::ForOp::create(b, loc, zero, bound, one);
    b.setInsertionPoint(loop.getBody()->getTerminator());
    ivs.push_back(loop.getInductionVar());
  }
  SmallVector<int64_t> rowShape(dstType.getShape().drop_front(outer));
  auto rowView = [&](Value buffer, MemRefType type,
                     ArrayRef<OpFoldResult> offsets) -> Value {
    SmallVector<OpFoldResult> sizes(rank, b.getIndexAttr(1));
    for (unsigned i = outer; i < rank; ++i)
      sizes[i] = b.getIndexAttr(type.getDimSize(i));
    SmallVector<OpFoldResult> strides(rank, b.getIndexAttr(1));
    auto rowType = memref::SubViewOp::inferRankReducedResultType(
        rowShape, type, offsets, sizes, strides);
    return memref::SubViewOp::create(b, loc, cast<MemRefType>(rowType),
                                     buffer, offsets, sizes, strides);
  };
  SmallVector<OpFoldResult> dstOffsets(rank, b.getIndexAttr(0));
  SmallVector<OpFoldResult> srcOffsets(rank, b.getIndexAttr(0));
  for (unsigned i = 0; i < outer; ++i) {
    dstOffsets[i] = ivs[i];
    srcOffsets[perm[i]] = ivs[i];
  }
  memref::CopyOp::create(b, loc, rowView(src, srcType, srcOffsets),
                         rowView(dst, dstType, dstOffsets));
  return success();
}

// memref.copy(strided src or dst) => loops of contiguous row copies, or
// linalg.copy when the rows are short or not contiguous.
struct StridedCopyLowering : public OpRewritePattern<memref::CopyOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(memref::CopyOp op,
                                PatternRewriter &rewriter) const override {
    auto src = cast<MemRefType>(op.getSource().getType());
    auto dst = cast<MemRefType>(op.getTarget().getType());
    if (src.getLayout().isIdentity() && dst.getLayout().isIdentity())
      return rewriter.notifyMatchFailure(op, "contiguous copy becomes memcpy");
    if (isStaticContiguousRow(src, dst))
      return rewriter.notifyMatchFailure(op, "already one row");
    SmallVector<int64_t> identity =
        llvm::to_vector(llvm::seq<int64_t>(0, dst.getRank()));
    if (succeeded(emitRowCopies(rewriter, op.getLoc(), op.getSource(),
                                op.getTarget(), identity))) {
      rewriter.eraseOp(op);
      return success();
    }
    rewriter.replaceOpWithNewOp<linalg::CopyOp>(op, op.getSource(),
                                                op.getTarget());
    return success();
  }

  /// Whether both sides are one static contiguous run (the row copies this
  /// pattern emits, which become llvm.memcpy as they are).
  static bool isStaticContiguousRow(MemRefType src, MemRefType dst) {
    return src.hasStaticShape() &&
           contiguousTrailingDims(src) == src.getRank() &&
           dst.hasStaticShape() &&
           contiguousTrailingDims(dst) == dst.getRank();
  }
};

// linalg.transpose on buffers that keeps the innermost dimension in place
// (the attention layouts, [len, b, n, d] <-> heads first) => loops of
// contiguous row copies.
struct TransposeRowCopies : public OpRewritePattern<linalg::TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(linalg::TransposeOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.hasPureBufferSemantics())
      return rewriter.notifyMatchFailure(op, "not on buffers");
    if (failed(emitRowCopies(rewriter, op.getLoc(), op.getInput(),
                             op.getInit(), op.getPermutation())))
      return rewriter.notifyMatchFailure(op, "no contiguous row to copy");
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

bool mlir::txl::isSameView(Value a, Value b) {
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

namespace {

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
    patterns.add<StridedCopyLowering, TransposeRowCopies>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace

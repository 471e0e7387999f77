//===- Normalization.cpp - Lower layer norm and the NLL to linalg -*- C++ -*-===//
//
// Row reductions over the last dimension: txl.layer_norm (mean, biased
// variance, affine) and txl.nll (max-shifted log-sum-exp minus the target's
// logit, so no probability is materialized). The output layer, a txl.nll
// of a txl.linear, is lowered together with the linear block by block of
// output columns: in a forward-only segment no [tokens, n_token] logit
// matrix exists at all; in a backward segment (with txl.nll_grad and the
// linear's adjoints) the logits are written once and read once.
//
//===----------------------------------------------------------------------===//

#include "Builders.h"
#include "txl/Conversion/Passes.h"
#include "txl/IR/TxlOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"

#include <limits>

using namespace mlir;
using namespace mlir::txl;

namespace {

// txl.layer_norm(x, g, b) => mean, variance, (x - mean) * rsqrt(var + eps) * g + b
struct LayerNormLowering : public OpRewritePattern<LayerNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LayerNormOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    Value x = op.getInput();
    auto type = cast<RankedTensorType>(x.getType());
    unsigned rank = type.getRank();
    int64_t features = type.getShape().back();
    if (ShapedType::isDynamic(features))
      return rewriter.notifyMatchFailure(op, "feature dimension must be static");
    // 1 / features rounded once, in the element type (1.0f / n for f32).
    Type elementType = type.getElementType();
    const llvm::fltSemantics &semantics =
        cast<FloatType>(elementType).getFloatSemantics();
    APFloat invNValue(semantics, 1);
    invNValue.divide(APFloat(semantics, features),
                     APFloat::rmNearestTiesToEven);
    FloatAttr invN = rewriter.getFloatAttr(elementType, invNValue);

    Value sum = reduceLastDim(rewriter, loc, ValueRange{x}, 0.0,
                              [](OpBuilder &b, Location l, ValueRange a) -> Value {
                                return arith::AddFOp::create(b, l, a[0], a[1]);
                              });
    Value sqSum = reduceLastDim(
        rewriter, loc, ValueRange{x, sum}, 0.0,
        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          Value mean = arith::MulFOp::create(
              b, l, a[1], arith::ConstantOp::create(b, l, invN));
          Value d = arith::SubFOp::create(b, l, a[0], mean);
          return arith::AddFOp::create(b, l, arith::MulFOp::create(b, l, d, d),
                                       a[2]);
        });

    AffineMap id = identityMap(ctx, rank);
    AffineMap rowMap = dropDimMap(ctx, rank, rank - 1);
    AffineMap featureMap =
        AffineMap::get(rank, 0, {getAffineDimExpr(rank - 1, ctx)}, ctx);
    SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
    FloatAttr eps = castFloatAttr(rewriter, op.getEpsilonAttr(), elementType);
    Value y =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{type},
            ValueRange{x, sum, sqSum, op.getWeight(), op.getBias()},
            ValueRange{createEmpty(rewriter, loc, getSizes(rewriter, loc, x),
                                   type.getElementType())},
            {id, rowMap, rowMap, featureMap, featureMap, id}, iters,
            [&](OpBuilder &b, Location l, ValueRange a) {
              Value n = arith::ConstantOp::create(b, l, invN);
              Value mean = arith::MulFOp::create(b, l, a[1], n);
              Value var = arith::MulFOp::create(b, l, a[2], n);
              Value varEps = arith::AddFOp::create(
                  b, l, var, arith::ConstantOp::create(b, l, eps));
              Value inv = math::RsqrtOp::create(b, l, varEps);
              Value norm = arith::MulFOp::create(
                  b, l, arith::SubFOp::create(b, l, a[0], mean), inv);
              Value out = arith::AddFOp::create(
                  b, l, arith::MulFOp::create(b, l, norm, a[3]), a[4]);
              linalg::YieldOp::create(b, l, ValueRange{out});
            })
            .getResult(0);
    rewriter.replaceOp(op, y);
    return success();
  }
};

// txl.nll(logits, target) => logsumexp(logits) - logits[target]
struct NllLowering : public OpRewritePattern<NllOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(NllOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    Value logits = op.getLogits();
    Value lse = createLogSumExp(rewriter, loc, ValueRange{logits});
    AffineMap id = identityMap(ctx, 2);
    auto resultType = cast<RankedTensorType>(lse.getType());
    Value nll =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{resultType},
            ValueRange{lse, op.getTarget()},
            ValueRange{createEmpty(rewriter, loc, getSizes(rewriter, loc, lse),
                                   resultType.getElementType())},
            {id, id, id},
            {utils::IteratorType::parallel, utils::IteratorType::parallel},
            [&](OpBuilder &b, Location l, ValueRange a) {
              Value i = linalg::IndexOp::create(b, l, 0);
              Value bt = linalg::IndexOp::create(b, l, 1);
              Value t = arith::IndexCastOp::create(b, l, b.getIndexType(), a[1]);
              Value logit =
                  tensor::ExtractOp::create(b, l, logits, ValueRange{i, bt, t});
              linalg::YieldOp::create(
                  b, l, ValueRange{arith::SubFOp::create(b, l, a[0], logit)});
            })
            .getResult(0);
    rewriter.replaceOp(op, castTo(rewriter, loc, nll, op.getType()));
    return success();
  }
};

// txl.log_softmax(logits) => logits - logsumexp(logits), the log-sum-exp
// of each row broadcast over its columns.
struct LogSoftmaxLowering : public OpRewritePattern<LogSoftmaxOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LogSoftmaxOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    Value logits = op.getLogits();
    Value lse = createLogSumExp(rewriter, loc, ValueRange{logits});
    AffineMap id = identityMap(ctx, 3);
    AffineMap rowMap = dropDimMap(ctx, 3, 2);
    rewriter.replaceOp(
        op, createPointwise(
                rewriter, loc, logits, ValueRange{logits, lse}, {id, rowMap},
                [](OpBuilder &b, Location l, ValueRange a) -> Value {
                  return arith::SubFOp::create(b, l, a[0], a[1]);
                }));
    return success();
  }
};

/// Output columns per block of the fused output layer: one block's logits,
/// [rows, kNllColumnBlock] float32, are 1 MiB for 512 rows (a 64-token
/// segment of batch 8, one training slice of ptb_small), a Zen 4 core's L2.
/// 256 (a ptb_small train step) and 1024 or 2048 (its eval) measured the
/// same within noise; one block of all 10,000 columns made eval slower (the
/// log-sum-exp passes then stream from L3).
constexpr int64_t kNllColumnBlock = 512;

/// The rows of an output layer: h [..., in] and target [...] with every
/// leading dimension collapsed into one (h2 [R, in], target1 [R]).
struct OutputRows {
  Value h2, target1;
  ReassociationIndices leading; ///< empty when h is already 2-D
};

static OutputRows collapseRows(OpBuilder &b, Location loc, Value h,
                               Value target) {
  OutputRows rows{h, target, {}};
  int64_t rank = cast<RankedTensorType>(h.getType()).getRank();
  if (rank > 2) {
    for (int64_t d = 0; d + 1 < rank; ++d)
      rows.leading.push_back(d);
    rows.h2 = createCollapse(b, loc, h, {rows.leading, {rank - 1}});
    rows.target1 = createCollapse(b, loc, target, {rows.leading});
  }
  return rows;
}

/// The loop over blocks of kNllColumnBlock output columns of w [V, in]
/// shared by the forward and backward sweeps, and the slices of a block.
struct ColumnBlocks {
  ColumnBlocks(OpBuilder &b, Location loc, Value w,
               int64_t blockSize = kNllColumnBlock)
      : blockSize(blockSize) {
    zero = arith::ConstantIndexOp::create(b, loc, 0);
    one = arith::ConstantIndexOp::create(b, loc, 1);
    block = arith::ConstantIndexOp::create(b, loc, blockSize);
    SmallVector<OpFoldResult> sizes = getSizes(b, loc, w);
    vocabSize = sizes[0];
    features = sizes[1];
    vocab = getValueOrCreateConstantIndexOp(b, loc, vocabSize);
  }

  /// scf.for over the blocks carrying `inits`; `body(b, loc, j, cols, acc)`
  /// gets the block's first column j and width cols and returns the yields.
  /// `reverse` visits the blocks last first: j = lastStart − iv, where
  /// lastStart = ⌊(V − 1) / block⌋ · block (a backward sweep then reads
  /// first the blocks of logits the forward sweep wrote last, which are
  /// still in cache).
  scf::ForOp build(OpBuilder &b, Location loc, ValueRange inits,
                   function_ref<SmallVector<Value>(OpBuilder &, Location, Value,
                                                   Value, ValueRange)>
                       body,
                   bool reverse = false) const {
    Value lastStart;
    if (reverse)
      lastStart = arith::MulIOp::create(
          b, loc,
          arith::DivSIOp::create(b, loc,
                                 arith::SubIOp::create(b, loc, vocab, one),
                                 block),
          block);
    return scf::ForOp::create(
        b, loc, zero, vocab, block, inits,
        [&](OpBuilder &nb, Location l, Value iv, ValueRange acc) {
          Value j = reverse ? arith::SubIOp::create(nb, l, lastStart, iv)
                            : iv;
          Value cols = arith::MinSIOp::create(
              nb, l, block, arith::SubIOp::create(nb, l, vocab, j));
          scf::YieldOp::create(nb, l, body(nb, l, j, cols, acc));
        });
  }

  /// Offsets, sizes and unit strides of rows [j, j + cols) of a [V] or
  /// [V, features] tensor.
  struct Slice {
    SmallVector<OpFoldResult> offsets, sizes, strides;
  };
  Slice rows(Value j, Value cols, bool withFeatures) const {
    if (withFeatures)
      return {{j, zero}, {cols, features}, {one, one}};
    return {{j}, {cols}, {one}};
  }
  /// The [rows, cols] block starting at column j of a block-major
  /// [nBlocks, rows, block] tensor (see blockMajorSizes).
  Slice blockOf(OpBuilder &b, Location loc, OpFoldResult rowCount, Value j,
                Value cols) const {
    Value k = arith::DivSIOp::create(b, loc, j, block);
    return {{k, zero, zero}, {b.getIndexAttr(1), rowCount, cols},
            {one, one, one}};
  }
  /// Sizes [⌈V / block⌉, rows, block] of a block-major tensor: block k of
  /// the columns of a [rows, V] matrix is one contiguous [rows, block]
  /// slab (the last one partly used).
  SmallVector<OpFoldResult> blockMajorSizes(OpBuilder &b, Location loc,
                                            OpFoldResult rowCount) const {
    OpFoldResult blockCount;
    if (std::optional<int64_t> v = getConstantIntValue(vocabSize))
      blockCount = b.getIndexAttr(llvm::divideCeil(*v, blockSize));
    else
      blockCount = arith::CeilDivSIOp::create(b, loc, vocab, block).getResult();
    return {blockCount, rowCount, b.getIndexAttr(blockSize)};
  }
  /// Rank-reducing extract of a block-major block as [rows, cols].
  static Value extractBlock(OpBuilder &b, Location loc, Value t,
                            const Slice &s) {
    auto type = tensor::ExtractSliceOp::inferCanonicalRankReducedResultType(
        2, cast<RankedTensorType>(t.getType()), s.sizes);
    return tensor::ExtractSliceOp::create(b, loc, type, t, s.offsets, s.sizes,
                                          s.strides);
  }
  static Value extract(OpBuilder &b, Location loc, Value t, const Slice &s) {
    return tensor::ExtractSliceOp::create(b, loc, t, s.offsets, s.sizes,
                                          s.strides);
  }
  static Value insert(OpBuilder &b, Location loc, Value part, Value into,
                      const Slice &s) {
    return tensor::InsertSliceOp::create(b, loc, part, into, s.offsets,
                                         s.sizes, s.strides);
  }

  int64_t blockSize;
  Value zero, one, block, vocab;
  OpFoldResult vocabSize, features;
};

/// The forward sweep over column blocks of `w` [V, in]: per block the logits
/// h2 · w_jᵀ + bias_j (one BLAS product) and the online log-sum-exp update
/// (Milakov & Gimelshein 2018, "Online normalizer calculation for softmax")
///   m' = max(m, max_j x_j),  s' = s · exp(m − m') + Σ_j exp(x_j − m').
/// Returns lse [R] = log(s) + m; with `logits` non-null, each block's
/// logits are also written into a block-major [⌈V / block⌉, R, block]
/// tensor returned there (for the backward sweep): each block is one
/// contiguous slab, which the backward sweep streams through page by page.
static Value buildBlockedLogSumExp(OpBuilder &b, Location loc, Value h2,
                                   Value w, Value bias, Value *logits,
                                   int64_t blockSize = kNllColumnBlock) {
  MLIRContext *ctx = b.getContext();
  Type et = cast<RankedTensorType>(h2.getType()).getElementType();
  OpFoldResult rows = getSizes(b, loc, h2)[0];
  ColumnBlocks blocks(b, loc, w, blockSize);
  const double negInf = -std::numeric_limits<double>::infinity();
  SmallVector<Value> inits = {createFilled(b, loc, {rows}, et, negInf),
                              createFilled(b, loc, {rows}, et, 0.0)};
  if (logits)
    inits.push_back(
        createEmpty(b, loc, blocks.blockMajorSizes(b, loc, rows), et));
  AffineMap id1 = identityMap(ctx, 1);

  auto loop = blocks.build(
      b, loc, inits,
      [&](OpBuilder &nb, Location l, Value j, Value cols,
          ValueRange acc) -> SmallVector<Value> {
        Value wBlock =
            ColumnBlocks::extract(nb, l, w, blocks.rows(j, cols, true));
        Value biasBlock;
        if (bias)
          biasBlock =
              ColumnBlocks::extract(nb, l, bias, blocks.rows(j, cols, false));
        // With stored logits, the block is computed in place in its slab
        // of the block-major tensor (no copy of the block).
        Value dest;
        ColumnBlocks::Slice slab;
        if (logits) {
          slab = blocks.blockOf(nb, l, rows, j, cols);
          dest = ColumnBlocks::extractBlock(nb, l, acc[2], slab);
        }
        Value x = createLinear2d(nb, l, h2, wBlock, biasBlock, dest);
        Value blockMax = reduceLastDim(
            nb, l, ValueRange{x}, negInf,
            [](OpBuilder &ob, Location ol, ValueRange a) -> Value {
              return createRunningMax(ob, ol, a[0], a[1]);
            });
        // Updated in place (the loop carries one buffer each): first the
        // old sum in units of the new max (exp(-inf) = 0 on entry), then
        // the max.
        Value rescaled = createPointwise(
            nb, l, acc[1], ValueRange{acc[0], blockMax}, {id1, id1},
            [](OpBuilder &ob, Location ol, ValueRange a) -> Value {
              Value newMax = arith::MaximumFOp::create(ob, ol, a[0], a[1]);
              Value shift = arith::SubFOp::create(ob, ol, a[0], newMax);
              return arith::MulFOp::create(
                  ob, ol, a[2], math::ExpOp::create(ob, ol, shift));
            },
            /*dest=*/acc[1]);
        Value newMax = createPointwise(
            nb, l, acc[0], ValueRange{blockMax}, {id1},
            [](OpBuilder &ob, Location ol, ValueRange a) -> Value {
              return arith::MaximumFOp::create(ob, ol, a[1], a[0]);
            },
            /*dest=*/acc[0]);
        Value newSum = reduceLastDimInto(
            nb, l, ValueRange{x, newMax}, rescaled,
            [](OpBuilder &ob, Location ol, ValueRange a) -> Value {
              Value e = math::ExpOp::create(
                  ob, ol, arith::SubFOp::create(ob, ol, a[0], a[1]));
              return arith::AddFOp::create(ob, ol, e, a[2]);
            });
        SmallVector<Value> yields = {newMax, newSum};
        if (logits)
          yields.push_back(ColumnBlocks::insert(nb, l, x, acc[2], slab));
        return yields;
      });
  if (logits)
    *logits = loop.getResult(2);
  return createPointwise(
      b, loc, loop.getResult(0), ValueRange{loop.getResult(1), loop.getResult(0)},
      {id1, id1},
      [](OpBuilder &ob, Location ol, ValueRange a) -> Value {
        return arith::AddFOp::create(ob, ol, math::LogOp::create(ob, ol, a[0]),
                                     a[1]);
      });
}

/// NLL [R] = lse − (h2 · w[t] + bias[t]): the target's logit as a gathered
/// dot product, so it needs no logit matrix.
static Value buildNllFromLse(OpBuilder &b, Location loc, Value lse,
                             const OutputRows &rows, Value w, Value bias) {
  AffineMap id1 = identityMap(b.getContext(), 1);
  auto targetIndex = [](OpBuilder &nb, Location l, Value t) -> Value {
    return arith::IndexCastOp::create(nb, l, nb.getIndexType(), t);
  };
  Value dot = reduceLastDim(
      b, loc, ValueRange{rows.h2, rows.target1}, 0.0,
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value k = linalg::IndexOp::create(nb, l, 1);
        Value wv = tensor::ExtractOp::create(
            nb, l, w, ValueRange{targetIndex(nb, l, a[1]), k});
        return arith::AddFOp::create(
            nb, l, arith::MulFOp::create(nb, l, a[0], wv), a[2]);
      });
  return createPointwise(
      b, loc, dot, ValueRange{lse, dot, rows.target1}, {id1, id1, id1},
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value logit = a[1];
        if (bias)
          logit = arith::AddFOp::create(
              nb, l, logit,
              tensor::ExtractOp::create(nb, l, bias,
                                        ValueRange{targetIndex(nb, l, a[2])}));
        return arith::SubFOp::create(nb, l, a[0], logit);
      });
}

/// `v` [R] (or [R, n]) back to the leading shape of `like`.
static Value expandRows(OpBuilder &b, Location loc, Value v,
                        const OutputRows &rows, Value like, int64_t keep) {
  if (rows.leading.empty())
    return v;
  SmallVector<OpFoldResult> sizes = getSizes(b, loc, like);
  sizes.resize(rows.leading.size());
  SmallVector<ReassociationIndices> reassoc = {rows.leading};
  if (keep) {
    sizes.push_back(getSizes(b, loc, v)[1]);
    reassoc.push_back({static_cast<int64_t>(rows.leading.size())});
  }
  return createExpand(b, loc, v, reassoc, sizes);
}

// txl.linear_nll(h, w, target, bias) => the forward sweep over column
// blocks (buildBlockedLogSumExp) without keeping any logits, then the NLL
// from the gathered target logit.
struct LinearNllLowering : public OpRewritePattern<LinearNllOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LinearNllOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value w = op.getWeight(), bias = op.getBias();
    OutputRows rows = collapseRows(rewriter, loc, op.getInput(), op.getTarget());
    Value lse =
        buildBlockedLogSumExp(rewriter, loc, rows.h2, w, bias, nullptr);
    Value nll = buildNllFromLse(rewriter, loc, lse, rows, w, bias);
    nll = expandRows(rewriter, loc, nll, rows, op.getTarget(), 0);
    rewriter.replaceOp(op, castTo(rewriter, loc, nll, op.getType()));
    return success();
  }
};

// txl.linear_nll_fwd => the same forward sweep, also writing each block of
// logits into the block-major [⌈V / block⌉, R, block] result, then the NLL.
struct LinearNllFwdLowering : public OpRewritePattern<LinearNllFwdOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LinearNllFwdOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value w = op.getWeight(), bias = op.getBias();
    OutputRows rows = collapseRows(rewriter, loc, op.getInput(), op.getTarget());
    Value logits;
    Value lse = buildBlockedLogSumExp(rewriter, loc, rows.h2, w, bias, &logits,
                                      op.getBlock());
    Value nll = buildNllFromLse(rewriter, loc, lse, rows, w, bias);
    nll = expandRows(rewriter, loc, nll, rows, op.getTarget(), 0);
    rewriter.replaceOp(
        op, {castTo(rewriter, loc, nll, op.getResult().getType()),
             castTo(rewriter, loc, lse, op.getLse().getType()),
             castTo(rewriter, loc, logits, op.getLogits().getType())});
    return success();
  }
};

/// The backward sweep of a softmax cross-entropy over column blocks, last
/// block first, per block of columns j with the block's d_logits in a
/// [R, block] tensor that stays in L2:
///   dl_j = (exp(x_j − lse) − onehot(t)) · g
///   dh  += dl_j · w_j       dW[j] = dl_jᵀ · h       db[j] = Σ_rows dl_j
/// for h2 [R, in], w [V, in], lse and g [R], target1 [R] (i64; a row whose
/// target is outside [0, V) gets no one-hot). x_j is read from the
/// block-major `logits` the forward sweep stored, or, when `logits` is
/// null, recomputed as h2 · w_jᵀ + bias_j. No [R, V] d_logits exist.
/// Returns {dh [R, in], dW [V, in], db [V]}.
static std::array<Value, 3>
buildBlockedSoftmaxGrad(OpBuilder &rewriter, Location loc, Value h2, Value w,
                        Value bias, Value lse, Value g, Value target1,
                        Value logits, int64_t blockSize) {
  MLIRContext *ctx = rewriter.getContext();
  Type et = cast<RankedTensorType>(h2.getType()).getElementType();
  OpFoldResult nRows = getSizes(rewriter, loc, h2)[0];
  ColumnBlocks blocks(rewriter, loc, w, blockSize);
  SmallVector<Value> inits = {
      createFilled(rewriter, loc, {nRows, blocks.features}, et, 0.0),
      createEmpty(rewriter, loc, {blocks.vocabSize, blocks.features}, et),
      createEmpty(rewriter, loc, {blocks.vocabSize}, et)};
  AffineMap id2 = identityMap(ctx, 2);
  AffineMap rowMap = dropDimMap(ctx, 2, 1);
  Value zero = blocks.zero;
  auto loop = blocks.build(
      rewriter, loc, inits,
      [&](OpBuilder &b, Location l, Value j, Value cols,
          ValueRange acc) -> SmallVector<Value> {
        Value wBlock =
            ColumnBlocks::extract(b, l, w, blocks.rows(j, cols, true));
        Value x;
        if (logits) {
          x = ColumnBlocks::extractBlock(
              b, l, logits, blocks.blockOf(b, l, nRows, j, cols));
        } else {
          Value biasBlock;
          if (bias)
            biasBlock =
                ColumnBlocks::extract(b, l, bias, blocks.rows(j, cols, false));
          x = createLinear2d(b, l, h2, wBlock, biasBlock, Value());
        }
        // softmax · g for every column (no index in the loop, so it
        // vectorizes at the width of f32), then − g at each row's target
        // when it falls in this block.
        Value dl = createPointwise(
            b, l, x, ValueRange{x, lse, g}, {id2, rowMap, rowMap},
            [&](OpBuilder &ob, Location ol, ValueRange a) -> Value {
              Value p = math::ExpOp::create(
                  ob, ol, arith::SubFOp::create(ob, ol, a[0], a[1]));
              return arith::MulFOp::create(ob, ol, p, a[2]);
            },
            /*dest=*/createEmpty(b, l, {nRows, OpFoldResult(cols)}, et));
        // Each row's own target column: one scf.forall over the rows (a
        // kernel on the GPU targets). A row whose target is outside the
        // block rewrites its column 0 unchanged.
        auto fix = scf::ForallOp::create(b, l, ArrayRef<OpFoldResult>{nRows},
                                         ValueRange{dl}, std::nullopt, nullptr);
        {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(fix.getBody());
          Value r = fix.getInductionVar(0);
          Value t = arith::IndexCastOp::create(
              b, l, b.getIndexType(),
              tensor::ExtractOp::create(b, l, target1, ValueRange{r}));
          Value c = arith::SubIOp::create(b, l, t, j);
          Value inBlock = arith::AndIOp::create(
              b, l,
              arith::CmpIOp::create(b, l, arith::CmpIPredicate::sge, t, j),
              arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, c, cols));
          Value col = arith::SelectOp::create(b, l, inBlock, c, zero);
          Value gr = tensor::ExtractOp::create(b, l, g, ValueRange{r});
          updateForallElement(
              b, l, fix, {r, col}, [&](OpBuilder &ub, Value old) -> Value {
                return arith::SelectOp::create(
                    ub, l, inBlock, arith::SubFOp::create(ub, l, old, gr), old);
              });
        }
        dl = fix.getResult(0);
        // dh += dl_j · w_j (accumulates onto the carried dh: beta = 1).
        Value dh = createMatmulOnto(b, l, dl, wBlock, acc[0],
                                    /*transposeLhs=*/false,
                                    /*transposeRhs=*/false);
        // dw_j and db_j are computed into their slices of the carried
        // gradients (extract → fill → product → insert of the same slice
        // bufferizes in place: no block temporary, no copy).
        ColumnBlocks::Slice wRows = blocks.rows(j, cols, true);
        ColumnBlocks::Slice bRows = blocks.rows(j, cols, false);
        Value dwBlock = createMatmulTransposedLhs(
            b, l, dl, h2, ColumnBlocks::extract(b, l, acc[1], wRows));
        Value dw = ColumnBlocks::insert(b, l, dwBlock, acc[1], wRows);
        Value dbBlock = createSumLeading(
            b, l, dl, 1, ColumnBlocks::extract(b, l, acc[2], bRows));
        Value db = ColumnBlocks::insert(b, l, dbBlock, acc[2], bRows);
        return {dh, dw, db};
      },
      /*reverse=*/true);
  return {loop.getResult(0), loop.getResult(1), loop.getResult(2)};
}

// txl.linear_nll_grad => the backward sweep over the blocks
// (buildBlockedSoftmaxGrad) from the logits the forward sweep stored: the
// [R, V] logits are read once (the op-by-op lowerings pass over [R, V]
// about ten times).
struct LinearNllGradLowering : public OpRewritePattern<LinearNllGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LinearNllGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value h = op.getInput();
    OutputRows rows = collapseRows(rewriter, loc, h, op.getTarget());
    Value g = op.getDResult();
    if (!rows.leading.empty())
      g = createCollapse(rewriter, loc, g, {rows.leading});
    std::array<Value, 3> grads = buildBlockedSoftmaxGrad(
        rewriter, loc, rows.h2, op.getWeight(), Value(), op.getLse(), g,
        rows.target1, op.getLogits(), op.getBlock());
    Value dh = expandRows(rewriter, loc, grads[0], rows, h, 1);
    rewriter.replaceOp(
        op, {castTo(rewriter, loc, dh, op.getDInput().getType()),
             castTo(rewriter, loc, grads[1], op.getDWeight().getType()),
             castTo(rewriter, loc, grads[2], op.getDBias().getType())});
    return success();
  }
};

} // namespace

void mlir::txl::populateTxlNormalizationToLinalgPatterns(
    RewritePatternSet &patterns) {
  patterns.add<LayerNormLowering, NllLowering, LogSoftmaxLowering,
               LinearNllLowering, LinearNllFwdLowering, LinearNllGradLowering>(
      patterns.getContext());
}

std::array<Value, 3>
mlir::txl::createBlockedSoftmaxGrad(OpBuilder &b, Location loc, Value h2,
                                    Value w, Value bias, Value lse, Value g,
                                    Value target1) {
  return buildBlockedSoftmaxGrad(b, loc, h2, w, bias, lse, g, target1,
                                 /*logits=*/Value(), kNllColumnBlock);
}

Value mlir::txl::createBlockedLogSumExp(OpBuilder &b, Location loc, Value h2,
                                       Value w, Value bias) {
  return buildBlockedLogSumExp(b, loc, h2, w, bias, nullptr);
}

Value mlir::txl::createGatheredLogit(OpBuilder &b, Location loc, Value h2,
                                     Value w, Value bias, Value cols) {
  AffineMap id1 = identityMap(b.getContext(), 1);
  Value dot = reduceLastDim(
      b, loc, ValueRange{h2, cols}, 0.0,
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value k = linalg::IndexOp::create(nb, l, 1);
        Value wv = tensor::ExtractOp::create(nb, l, w, ValueRange{a[1], k});
        return arith::AddFOp::create(
            nb, l, arith::MulFOp::create(nb, l, a[0], wv), a[2]);
      });
  if (!bias)
    return dot;
  return createPointwise(
      b, loc, dot, ValueRange{dot, cols}, {id1, id1},
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        return arith::AddFOp::create(
            nb, l, a[0],
            tensor::ExtractOp::create(nb, l, bias, ValueRange{a[1]}));
      });
}

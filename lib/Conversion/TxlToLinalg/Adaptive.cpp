//===- Adaptive.cpp - Lower adaptive input and softmax -----------*- C++
//-*-===//
//
// txl.adaptive_embedding and txl.adaptive_nll visit the tokens one cluster at
// a time, as the official AdaptiveEmbedding / ProjectedAdaptiveLogSoftmax do:
// the positions whose id falls in the cluster are compacted into an index
// list (a blocked stream compaction), their rows are gathered, projected and,
// for the loss, scored against that cluster's tail only. No [tokens, n_token]
// logit matrix exists; the forward sweeps the head's shortlist and each tail in
// column blocks (online log-sum-exp), and only the backward computes the head's
// logits whole. txl.adaptive_log_softmax, the distribution `generate`
// samples from, is the [tokens, n_token] matrix by definition: it computes
// every cluster over every position. Products are txl.linear or
// linalg.matmul so that
// --txl-linalg-to-blas hands them to cblas_sgemm (or the GPU libraries).
//
//===----------------------------------------------------------------------===//

#include "Builders.h"
#include "txl/Conversion/Passes.h"
#include "txl/IR/TxlOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::txl;

namespace {

Value indexConst(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

/// Loads `ids[pos]` (i64) as an index.
Value loadId(OpBuilder &b, Location loc, Value ids, Value pos) {
  Value id = tensor::ExtractOp::create(b, loc, ids, ValueRange{pos});
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), id);
}

/// result[i] = element(b, i) for i < size, as one scf.forall over a new
/// tensor<?xindex> (a kernel of one work-item per element on the GPU
/// targets); the builder continues after it.
Value indexForall(OpBuilder &b, Location loc, Value size,
                  function_ref<Value(OpBuilder &, Value)> element) {
  Value init = tensor::EmptyOp::create(b, loc, SmallVector<OpFoldResult>{size},
                                       b.getIndexType());
  auto forall = scf::ForallOp::create(b, loc, SmallVector<OpFoldResult>{size},
                                      ValueRange{init}, std::nullopt, nullptr);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(forall.getBody());
  Value i = forall.getInductionVar(0);
  Value value = element(b, i);
  updateForallElement(b, loc, forall, {i},
                      [&](OpBuilder &, Value) { return value; });
  return forall.getResult(0);
}

/// Positions per block of createClusterRows' compaction: a work-item of the
/// GPU targets' count and write kernels walks at most 64 loop steps (the
/// run counters' serial-launch budget, txl/device.h).
constexpr int64_t kCompactionBlock = 64;

/// The positions n of the 1-D i64 tensor `ids` with lo <= ids[n] < hi, in
/// increasing order, as a tensor<?xindex> (official `mask_i.nonzero()`).
/// A blocked stream compaction, so that on the GPU targets only a scan over
/// ceil(N / 4096) group sums is sequential: (1) one scf.forall over the
/// blocks of 64 positions counts each block's positions in the cluster,
/// (2) a blocked scan (group sums, their scan, the offsets within each
/// group) turns the counts into each block's first output slot (exclusive
/// prefix sum) and the total, (3) one scf.forall over the blocks writes
/// each block's positions, in order, into its contiguous slice of the
/// output.
Value createClusterRows(OpBuilder &b, Location loc, Value ids, int64_t lo,
                        int64_t hi) {
  OpBuilder::InsertionGuard guard(b);
  Value zero = indexConst(b, loc, 0), one = indexConst(b, loc, 1);
  Value block = indexConst(b, loc, kCompactionBlock);
  Value n = tensor::DimOp::create(b, loc, ids, 0);
  Value blocks = arith::CeilDivUIOp::create(b, loc, n, block);
  Value loV = indexConst(b, loc, lo), hiV = indexConst(b, loc, hi);
  auto inside = [&](OpBuilder &ib, Location l, Value pos) {
    Value id = loadId(ib, l, ids, pos);
    return arith::AndIOp::create(
        ib, l, arith::CmpIOp::create(ib, l, arith::CmpIPredicate::sge, id, loV),
        arith::CmpIOp::create(ib, l, arith::CmpIPredicate::slt, id, hiV));
  };
  // The positions [begin, end) of block `blk`.
  auto blockRange = [&](OpBuilder &ib, Value blk) {
    Value begin = arith::MulIOp::create(ib, loc, blk, block);
    Value end = arith::MinUIOp::create(
        ib, loc, arith::AddIOp::create(ib, loc, begin, block), n);
    return std::make_pair(begin, end);
  };

  // (1) counts[blk].
  Value counts = indexForall(b, loc, blocks, [&](OpBuilder &fb, Value blk) {
    auto [begin, end] = blockRange(fb, blk);
    return scf::ForOp::create(
               fb, loc, begin, end, one, ValueRange{zero},
               [&](OpBuilder &lb, Location l, Value pos, ValueRange iter) {
                 Value add = arith::SelectOp::create(lb, l, inside(lb, l, pos),
                                                     one, zero);
                 scf::YieldOp::create(
                     lb, l,
                     ValueRange{arith::AddIOp::create(lb, l, iter[0], add)});
               })
        .getResult(0);
  });

  // (2) offsets[blk] = counts[0] + ... + counts[blk - 1], and the total, as
  // a blocked scan over groups of 64 blocks: (2a) one scf.forall sums each
  // group's counts, (2b) an scf.for scans the groups' sums (ceil(blocks /
  // 64) steps: at most 64 up to 4,096 blocks, 262,144 positions), (2c) one
  // scf.forall adds, to its group's offset, the counts of the blocks before
  // each block in its group. No work-item walks more than 64 steps there.
  Value groups = arith::CeilDivUIOp::create(b, loc, blocks, block);
  // Σ counts[begin .. end).
  auto sumCounts = [&](OpBuilder &ib, Value begin, Value end) {
    return scf::ForOp::create(
               ib, loc, begin, end, one, ValueRange{zero},
               [&](OpBuilder &lb, Location l, Value blk, ValueRange iter) {
                 Value c =
                     tensor::ExtractOp::create(lb, l, counts, ValueRange{blk});
                 scf::YieldOp::create(
                     lb, l,
                     ValueRange{arith::AddIOp::create(lb, l, iter[0], c)});
               })
        .getResult(0);
  };
  // (2a) The blocks [g · 64, min(g · 64 + 64, blocks)) of group g.
  Value groupSums = indexForall(b, loc, groups, [&](OpBuilder &fb, Value g) {
    Value begin = arith::MulIOp::create(fb, loc, g, block);
    Value end = arith::MinUIOp::create(
        fb, loc, arith::AddIOp::create(fb, loc, begin, block), blocks);
    return sumCounts(fb, begin, end);
  });
  // (2b)
  auto groupScan = scf::ForOp::create(
      b, loc, zero, groups, one,
      ValueRange{tensor::EmptyOp::create(b, loc,
                                         SmallVector<OpFoldResult>{groups},
                                         b.getIndexType()),
                 zero},
      [&](OpBuilder &lb, Location l, Value g, ValueRange iter) {
        Value offsets =
            tensor::InsertOp::create(lb, l, iter[1], iter[0], ValueRange{g});
        Value c = tensor::ExtractOp::create(lb, l, groupSums, ValueRange{g});
        scf::YieldOp::create(
            lb, l,
            ValueRange{offsets, arith::AddIOp::create(lb, l, iter[1], c)});
      });
  Value groupOffsets = groupScan.getResult(0), total = groupScan.getResult(1);
  // (2c)
  Value offsets = indexForall(b, loc, blocks, [&](OpBuilder &fb, Value blk) {
    Value g = arith::DivUIOp::create(fb, loc, blk, block);
    Value first = arith::MulIOp::create(fb, loc, g, block);
    // min(first + 64, blk) is blk: the bound in that form states the loop's
    // most steps, 63, to the GPU targets' serial-launch count
    // (txl-parallel-loops-to-gpu's SerialSteps).
    Value before = sumCounts(
        fb, first,
        arith::MinUIOp::create(
            fb, loc, arith::AddIOp::create(fb, loc, first, block), blk));
    return arith::AddIOp::create(
               fb, loc,
               tensor::ExtractOp::create(fb, loc, groupOffsets, ValueRange{g}),
               before)
        .getResult();
  });

  // (3) each block's positions into rows[offsets[blk], + counts[blk]).
  Value rowsInit = tensor::EmptyOp::create(b, loc, SmallVector<OpFoldResult>{n},
                                           b.getIndexType());
  auto write =
      scf::ForallOp::create(b, loc, SmallVector<OpFoldResult>{blocks},
                            ValueRange{rowsInit}, std::nullopt, nullptr);
  {
    b.setInsertionPointToStart(write.getBody());
    Value blk = write.getInductionVar(0);
    auto [begin, end] = blockRange(b, blk);
    Value first = tensor::ExtractOp::create(b, loc, offsets, ValueRange{blk});
    Value size = tensor::ExtractOp::create(b, loc, counts, ValueRange{blk});
    Value out = write.getRegionIterArgs()[0];
    SmallVector<OpFoldResult> offset = {first}, sizes = {size},
                              strides = {b.getIndexAttr(1)};
    Value slice =
        tensor::ExtractSliceOp::create(b, loc, out, offset, sizes, strides);
    auto loop = scf::ForOp::create(
        b, loc, begin, end, one, ValueRange{slice, zero},
        [&](OpBuilder &lb, Location l, Value pos, ValueRange iter) {
          auto ifOp = scf::IfOp::create(
              lb, l, inside(lb, l, pos),
              [&](OpBuilder &tb, Location tl) {
                Value rows = tensor::InsertOp::create(tb, tl, pos, iter[0],
                                                      ValueRange{iter[1]});
                Value next = arith::AddIOp::create(tb, tl, iter[1], one);
                scf::YieldOp::create(tb, tl, ValueRange{rows, next});
              },
              [&](OpBuilder &eb, Location el) {
                scf::YieldOp::create(eb, el, iter);
              });
          scf::YieldOp::create(lb, l, ifOp.getResults());
        });
    b.setInsertionPointToStart(write.getTerminator().getBody());
    tensor::ParallelInsertSliceOp::create(b, loc, loop.getResult(0), out,
                                          offset, sizes, strides);
  }
  b.setInsertionPointAfter(write);
  // total <= n always: the minimum changes nothing, but it states the
  // count's bound, which the GPU targets' device-memory dry run takes as
  // the count (txl-parallel-loops-to-gpu, txl_device_count_bound).
  Value bounded = arith::MinUIOp::create(b, loc, total, n);
  return tensor::ExtractSliceOp::create(
      b, loc, write.getResult(0), SmallVector<OpFoldResult>{b.getIndexAttr(0)},
      SmallVector<OpFoldResult>{bounded},
      SmallVector<OpFoldResult>{b.getIndexAttr(1)});
}

/// result[m, k] = src[rowOf(m), k] for m < size(rows), where `rowOf` maps the
/// compacted index rows[m] to a row of `src` [R, d].
Value gatherRows(OpBuilder &b, Location loc, Value src, Value rows,
                 function_ref<Value(OpBuilder &, Location, Value)> rowOf) {
  MLIRContext *ctx = b.getContext();
  auto srcType = cast<RankedTensorType>(src.getType());
  OpFoldResult count = getSizes(b, loc, rows)[0];
  OpFoldResult width = getSizes(b, loc, src)[1];
  Value init = createEmpty(b, loc, {count, width}, srcType.getElementType());
  AffineMap rowMap = AffineMap::get(2, 0, {getAffineDimExpr(0, ctx)}, ctx);
  return linalg::GenericOp::create(
             b, loc, TypeRange{init.getType()}, ValueRange{rows},
             ValueRange{init}, {rowMap, identityMap(ctx, 2)},
             {utils::IteratorType::parallel, utils::IteratorType::parallel},
             [&](OpBuilder &nb, Location l, ValueRange a) {
               Value k = linalg::IndexOp::create(nb, l, 1);
               Value row = rowOf(nb, l, a[0]);
               linalg::YieldOp::create(
                   nb, l,
                   ValueRange{tensor::ExtractOp::create(nb, l, src,
                                                        ValueRange{row, k})});
             })
      .getResult(0);
}

/// Writes (or, with `add`, adds) row m of `rows [M, d]` into row index[m]
/// of `dest [N, d]`. The index rows are distinct (createClusterRows), so
/// every (m, k) is an independent element: one scf.forall (a kernel on the
/// GPU targets), where the general createScatterAddRows is sequential.
Value scatterRows(OpBuilder &b, Location loc, Value dest, Value index,
                  Value rows, bool add = false) {
  OpBuilder::InsertionGuard guard(b);
  SmallVector<OpFoldResult> sizes = {getSizes(b, loc, index)[0],
                                     getSizes(b, loc, rows)[1]};
  auto forall = scf::ForallOp::create(b, loc, sizes, ValueRange{dest},
                                      std::nullopt, nullptr);
  b.setInsertionPointToStart(forall.getBody());
  Value m = forall.getInductionVar(0), k = forall.getInductionVar(1);
  Value at = tensor::ExtractOp::create(b, loc, index, ValueRange{m});
  Value v = tensor::ExtractOp::create(b, loc, rows, ValueRange{m, k});
  updateForallElement(b, loc, forall, {at, k}, [&](OpBuilder &nb, Value old) {
    return add ? arith::AddFOp::create(nb, loc, old, v).getResult() : v;
  });
  return forall.getResult(0);
}

/// dest[index[m]] += values[m] for 1-D `dest` and `values`; the index rows
/// are distinct (createClusterRows), so one scf.forall.
Value scatterAdd(OpBuilder &b, Location loc, Value dest, Value index,
                 Value values) {
  OpBuilder::InsertionGuard guard(b);
  SmallVector<OpFoldResult> sizes = {getSizes(b, loc, index)[0]};
  auto forall = scf::ForallOp::create(b, loc, sizes, ValueRange{dest},
                                      std::nullopt, nullptr);
  b.setInsertionPointToStart(forall.getBody());
  Value m = forall.getInductionVar(0);
  Value at = tensor::ExtractOp::create(b, loc, index, ValueRange{m});
  Value v = tensor::ExtractOp::create(b, loc, values, ValueRange{m});
  updateForallElement(b, loc, forall, {at}, [&](OpBuilder &nb, Value old) {
    return arith::AddFOp::create(nb, loc, old, v).getResult();
  });
  return forall.getResult(0);
}

/// result[m] = src[index[m]] for 1-D `src` and `index` (tensor<?xindex>).
Value gatherElements(OpBuilder &b, Location loc, Value src, Value index) {
  MLIRContext *ctx = b.getContext();
  Value init = createEmpty(b, loc, getSizes(b, loc, index),
                           cast<RankedTensorType>(src.getType()).getElementType());
  AffineMap id = identityMap(ctx, 1);
  return linalg::GenericOp::create(
             b, loc, TypeRange{init.getType()}, ValueRange{index},
             ValueRange{init}, {id, id}, {utils::IteratorType::parallel},
             [&](OpBuilder &nb, Location l, ValueRange a) {
               linalg::YieldOp::create(
                   nb, l,
                   ValueRange{tensor::ExtractOp::create(nb, l, src, a[0])});
             })
      .getResult(0);
}

/// `(softmax(logits) - onehot) * scale` row by row for logits [M, C], with
/// `lse` [M] the rows' log-sum-exp, `scale` [M], and the one-hot column of
/// row m given by `targetCol(m)` (an index; no column matches when it is
/// out of range).
Value softmaxMinusOneHot(
    OpBuilder &b, Location loc, Value logits, Value lse, Value scale,
    function_ref<Value(OpBuilder &, Location, Value)> targetCol) {
  MLIRContext *ctx = b.getContext();
  Type et = cast<RankedTensorType>(logits.getType()).getElementType();
  AffineMap id = identityMap(ctx, 2), rowMap = dropDimMap(ctx, 2, 1);
  return createPointwise(
      b, loc, logits, ValueRange{logits, lse, scale}, {id, rowMap, rowMap},
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value m = linalg::IndexOp::create(nb, l, 0);
        Value c = linalg::IndexOp::create(nb, l, 1);
        Value p = math::ExpOp::create(nb, l,
                                      arith::SubFOp::create(nb, l, a[0], a[1]));
        Value hit = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq, c,
                                          targetCol(nb, l, m));
        Value one = arith::ConstantOp::create(nb, l, nb.getFloatAttr(et, 1.0));
        Value zero = arith::ConstantOp::create(nb, l, nb.getFloatAttr(et, 0.0));
        Value onehot = arith::SelectOp::create(nb, l, hit, one, zero);
        return arith::MulFOp::create(nb, l, arith::SubFOp::create(nb, l, p, onehot),
                                     a[2]);
      });
}

/// The cluster of token id `t` (0 for the head): the number of tail cluster
/// starts `ends[1..tails]` at or below t.
Value clusterOf(OpBuilder &b, Location l, Value t, ArrayRef<int64_t> ends,
                int64_t tails) {
  Value zero = indexConst(b, l, 0), one = indexConst(b, l, 1);
  Value cluster = zero;
  for (int64_t c = 1; c <= tails; ++c) {
    Value ge = arith::CmpIOp::create(b, l, arith::CmpIPredicate::sge, t,
                                     indexConst(b, l, ends[c]));
    // index_cast would sign-extend the i1 to -1.
    cluster = arith::AddIOp::create(b, l, cluster,
                                    arith::SelectOp::create(b, l, ge, one, zero));
  }
  return cluster;
}

/// Rows [lo, hi) of a 1-D or 2-D parameter (the div_val = 1 output layer
/// sliced by cluster).
Value sliceRows(OpBuilder &b, Location loc, Value v, int64_t lo, int64_t hi) {
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getDimSize(0) == hi - lo && lo == 0)
    return v;
  SmallVector<OpFoldResult> offsets = {b.getIndexAttr(lo)};
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(hi - lo)};
  SmallVector<OpFoldResult> strides = {b.getIndexAttr(1)};
  if (type.getRank() == 2) {
    offsets.push_back(b.getIndexAttr(0));
    sizes.push_back(b.getIndexAttr(type.getDimSize(1)));
    strides.push_back(b.getIndexAttr(1));
  }
  return tensor::ExtractSliceOp::create(b, loc, v, offsets, sizes, strides);
}

/// The output layers of txl.adaptive_nll or its backward op, cluster by
/// cluster: cluster i's weight and bias (rows of the one sliced layer when
/// div_val = 1), and its input projection (`h @ projs[i]`, or h itself when
/// there are no projections).
template <typename OpT>
class ClusterLayers {
public:
  ClusterLayers(OpT op, OpBuilder &b, Location loc)
      : op(op), b(b), loc(loc), ends(op.getCutoffEnds()) {}
  bool sliced() { return op.getWeights().size() == 1; }
  bool projected() { return !op.getProjs().empty(); }
  Value weight(int64_t i) { return rows(op.getWeights(), i); }
  Value bias(int64_t i) { return rows(op.getBiases(), i); }
  Value project(Value h, int64_t i) {
    return projected() ? createMatmul(b, loc, h, op.getProjs()[i],
                                      /*transposeRhs=*/false)
                       : h;
  }

private:
  Value rows(ValueRange layers, int64_t i) {
    return sliced() ? sliceRows(b, loc, layers[0], ends[i], ends[i + 1])
                    : layers[i];
  }
  OpT op;
  OpBuilder &b;
  Location loc;
  ArrayRef<int64_t> ends;
};

/// txl.linear(x [M, in], w [out, in], bias), left to the linear lowering.
Value linearRows(OpBuilder &b, Location loc, Value x, Value w, Value bias) {
  auto wType = cast<RankedTensorType>(w.getType());
  auto type = RankedTensorType::get({ShapedType::kDynamic, wType.getDimSize(0)},
                                    wType.getElementType());
  return LinearOp::create(b, loc, type, x, w, bias);
}

Value flattenTokens(OpBuilder &b, Location loc, Value tokens) {
  return createCollapse(b, loc, tokens, {{0, 1}});
}

// txl.adaptive_embedding => per cluster: compact, gather, project, scatter.
struct AdaptiveEmbeddingLowering
    : public OpRewritePattern<AdaptiveEmbeddingOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AdaptiveEmbeddingOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    ArrayRef<int64_t> ends = op.getCutoffEnds();
    Value ids = flattenTokens(rewriter, loc, op.getTokens());
    SmallVector<OpFoldResult> tokenSizes = getSizes(rewriter, loc, op.getTokens());
    OpFoldResult n = getSizes(rewriter, loc, ids)[0];
    int64_t dModel = op.getType().getDimSize(2);
    Value out = createFilled(rewriter, loc, {n, rewriter.getIndexAttr(dModel)},
                             op.getType().getElementType(), 0.0);
    for (size_t i = 0; i + 1 < ends.size(); ++i) {
      int64_t lo = ends[i];
      Value rows = createClusterRows(rewriter, loc, ids, lo, ends[i + 1]);
      Value loV = indexConst(rewriter, loc, lo);
      Value emb = gatherRows(
          rewriter, loc, op.getTables()[i], rows,
          [&](OpBuilder &b, Location l, Value pos) -> Value {
            return arith::SubIOp::create(b, l, loadId(b, l, ids, pos), loV);
          });
      Value projected =
          linearRows(rewriter, loc, emb, op.getProjs()[i], Value());
      out = scatterRows(rewriter, loc, out, rows, projected);
    }
    Value result = createExpand(rewriter, loc, out, {{0, 1}, {2}},
                                {tokenSizes[0], tokenSizes[1],
                                 rewriter.getIndexAttr(dModel)});
    rewriter.replaceOp(op, castTo(rewriter, loc, result, op.getType()));
    return success();
  }
};

/// An index tensor [n] from the i64 tensor `source` [n]: col(b, loc, n,
/// source[n]) per position n.
static Value createColumns(
    OpBuilder &b, Location loc, Value source,
    function_ref<Value(OpBuilder &, Location, Value, Value)> col) {
  AffineMap id = identityMap(b.getContext(), 1);
  Value init = createEmpty(b, loc, getSizes(b, loc, source), b.getIndexType());
  return linalg::GenericOp::create(
             b, loc, TypeRange{init.getType()}, ValueRange{source},
             ValueRange{init}, {id, id}, {utils::IteratorType::parallel},
             [&](OpBuilder &nb, Location l, ValueRange a) {
               Value n = linalg::IndexOp::create(nb, l, 0);
               linalg::YieldOp::create(nb, l, ValueRange{col(nb, l, n, a[0])});
             })
      .getResult(0);
}

// txl.adaptive_nll => the head's log-sum-exp over the shortlist swept in
// column blocks (no [tokens, shortlist] logits) and the few cluster
// columns, the target's head logit as a gathered dot product; then per
// tail cluster: compact, gather, project, the tail's blocked log-sum-exp
// and gathered target logit, scatter-add. No logit matrix wider than the
// cluster columns or a column block exists.
struct AdaptiveNllLowering : public OpRewritePattern<AdaptiveNllOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AdaptiveNllOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    ArrayRef<int64_t> ends = op.getCutoffEnds();
    int64_t tails = static_cast<int64_t>(ends.size()) - 2;
    ClusterLayers<AdaptiveNllOp> layers(op, rewriter, loc);

    Value hidden = createCollapse(rewriter, loc, op.getHidden(), {{0, 1}, {2}});
    Value target = flattenTokens(rewriter, loc, op.getTarget());
    SmallVector<OpFoldResult> tokenSizes =
        getSizes(rewriter, loc, op.getTarget());

    // Head: the shortlist in column blocks, the cluster columns whole.
    Value headIn = layers.project(hidden, 0);
    Value lse = createBlockedLogSumExp(rewriter, loc, headIn, layers.weight(0),
                                       layers.bias(0));
    // The target's shortlist column (0 for tail tokens: read, not used).
    Value headCols = createColumns(
        rewriter, loc, target,
        [&](OpBuilder &b, Location l, Value, Value t) -> Value {
          Value ti = arith::IndexCastOp::create(b, l, b.getIndexType(), t);
          Value inHead = arith::CmpIOp::create(
              b, l, arith::CmpIPredicate::slt, ti, indexConst(b, l, ends[1]));
          return arith::SelectOp::create(b, l, inHead, ti,
                                         indexConst(b, l, 0));
        });
    Value shortLogit =
        createGatheredLogit(rewriter, loc, headIn, layers.weight(0),
                            layers.bias(0), headCols);
    Value clusterLogits;
    if (tails > 0) {
      clusterLogits = linearRows(rewriter, loc, headIn, op.getClusterWeight(),
                                 op.getClusterBias());
      // log(exp(lse_shortlist) + Σ exp(cluster logits)).
      SmallVector<OpFoldResult> rows = getSizes(rewriter, loc, lse);
      Value lse2 = createExpand(rewriter, loc, lse, {{0, 1}},
                                {rows[0], rewriter.getIndexAttr(1)});
      lse = createLogSumExp(rewriter, loc, ValueRange{lse2, clusterLogits});
    }

    // nll = lse - head logit of the target (shortlist) or of its cluster
    // column: tail cluster c reads cluster row tails - c (head column -c).
    auto nllType = cast<RankedTensorType>(lse.getType());
    AffineMap id = identityMap(ctx, 1);
    Value nll =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{nllType},
            ValueRange{lse, target, shortLogit},
            ValueRange{createEmpty(rewriter, loc, getSizes(rewriter, loc, lse),
                                   nllType.getElementType())},
            {id, id, id, id}, {utils::IteratorType::parallel},
            [&](OpBuilder &b, Location l, ValueRange a) {
              Value logit = a[2];
              if (tails > 0) {
                Value n = linalg::IndexOp::create(b, l, 0);
                Value t =
                    arith::IndexCastOp::create(b, l, b.getIndexType(), a[1]);
                Value zero = indexConst(b, l, 0);
                Value inHead =
                    arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, t,
                                          indexConst(b, l, ends[1]));
                // c = number of cluster starts at or below t.
                Value cluster = zero;
                for (int64_t c = 1; c <= tails; ++c) {
                  Value ge = arith::CmpIOp::create(b, l, arith::CmpIPredicate::sge,
                                                   t, indexConst(b, l, ends[c]));
                  // index_cast would sign-extend the i1 to -1.
                  cluster = arith::AddIOp::create(
                      b, l, cluster,
                      arith::SelectOp::create(b, l, ge, indexConst(b, l, 1),
                                              zero));
                }
                Value row = arith::SelectOp::create(
                    b, l, inHead, zero,
                    arith::SubIOp::create(b, l, indexConst(b, l, tails),
                                          cluster));
                Value clusterLogit = tensor::ExtractOp::create(
                    b, l, clusterLogits, ValueRange{n, row});
                logit = arith::SelectOp::create(b, l, inHead, logit,
                                                clusterLogit);
              }
              linalg::YieldOp::create(
                  b, l, ValueRange{arith::SubFOp::create(b, l, a[0], logit)});
            })
            .getResult(0);

    // Tails: only the tokens of cluster c are scored against it.
    for (int64_t c = 1; c <= tails; ++c) {
      int64_t lo = ends[c];
      Value rows = createClusterRows(rewriter, loc, target, lo, ends[c + 1]);
      Value h = gatherRows(rewriter, loc, hidden, rows,
                           [](OpBuilder &, Location, Value pos) { return pos; });
      Value hp = layers.project(h, c);
      Value tailLse = createBlockedLogSumExp(rewriter, loc, hp,
                                             layers.weight(c), layers.bias(c));
      // The target's column in the tail: target[rows[m]] - lo.
      AffineMap id1 = identityMap(ctx, 1);
      Value initCols = createEmpty(rewriter, loc, getSizes(rewriter, loc, rows),
                                   rewriter.getIndexType());
      Value tailCols =
          linalg::GenericOp::create(
              rewriter, loc, TypeRange{initCols.getType()}, ValueRange{rows},
              ValueRange{initCols}, {id1, id1},
              {utils::IteratorType::parallel},
              [&](OpBuilder &b, Location l, ValueRange a) {
                Value col = arith::SubIOp::create(
                    b, l, loadId(b, l, target, a[0]), indexConst(b, l, lo));
                linalg::YieldOp::create(b, l, ValueRange{col});
              })
              .getResult(0);
      Value tailLogit = createGatheredLogit(rewriter, loc, hp, layers.weight(c),
                                            layers.bias(c), tailCols);
      Value tailNll = createPointwise(
          rewriter, loc, tailLse, ValueRange{tailLse, tailLogit}, {id1, id1},
          [](OpBuilder &b, Location l, ValueRange a) -> Value {
            return arith::SubFOp::create(b, l, a[0], a[1]);
          });
      nll = scatterAdd(rewriter, loc, nll, rows, tailNll);
    }

    Value result = createExpand(rewriter, loc, nll, {{0, 1}},
                                {tokenSizes[0], tokenSizes[1]});
    rewriter.replaceOp(op, castTo(rewriter, loc, result, op.getType()));
    return success();
  }
};

// txl.adaptive_log_softmax => the head's logits [tokens, shortlist] and
// cluster logits [tokens, tails] with their joint log-sum-exp; the shortlist
// columns are the head's log-probabilities, and each tail cluster c adds its
// head column (cluster row tails - c, official column -c) to the log-softmax
// of its own logits over every position. Each part is written into its
// columns of one [tokens, n_token] result, the distribution itself.
struct AdaptiveLogSoftmaxLowering
    : public OpRewritePattern<AdaptiveLogSoftmaxOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AdaptiveLogSoftmaxOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    ArrayRef<int64_t> ends = op.getCutoffEnds();
    int64_t tails = static_cast<int64_t>(ends.size()) - 2;
    ClusterLayers<AdaptiveLogSoftmaxOp> layers(op, rewriter, loc);

    Value hidden = createCollapse(rewriter, loc, op.getHidden(), {{0, 1}, {2}});
    SmallVector<OpFoldResult> sizes = getSizes(rewriter, loc, op.getHidden());
    OpFoldResult tokens = getSizes(rewriter, loc, hidden)[0];
    Type elementType = op.getType().getElementType();
    Value out = createEmpty(rewriter, loc,
                            {tokens, rewriter.getIndexAttr(ends.back())},
                            elementType);
    OpFoldResult zero = rewriter.getIndexAttr(0), one = rewriter.getIndexAttr(1);
    auto writeColumns = [&](Value part, int64_t lo) {
      OpFoldResult width = getSizes(rewriter, loc, part)[1];
      out = tensor::InsertSliceOp::create(
          rewriter, loc, part, out, {zero, rewriter.getIndexAttr(lo)},
          {tokens, width}, {one, one});
    };

    Value headIn = layers.project(hidden, 0);
    Value head =
        linearRows(rewriter, loc, headIn, layers.weight(0), layers.bias(0));
    SmallVector<Value> headParts = {head};
    Value clusterLogits;
    if (tails > 0) {
      clusterLogits = linearRows(rewriter, loc, headIn, op.getClusterWeight(),
                                 op.getClusterBias());
      headParts.push_back(clusterLogits);
    }
    Value lse = createLogSumExp(rewriter, loc, headParts);
    AffineMap id = identityMap(ctx, 2);
    AffineMap row = dropDimMap(ctx, 2, 1);
    writeColumns(createPointwise(rewriter, loc, head, ValueRange{head, lse},
                                 {id, row},
                                 [](OpBuilder &b, Location l, ValueRange a) {
                                   return arith::SubFOp::create(b, l, a[0],
                                                                a[1])
                                       .getResult();
                                 }),
                 0);
    for (int64_t c = 1; c <= tails; ++c) {
      Value hp = layers.project(hidden, c);
      Value tail = linearRows(rewriter, loc, hp, layers.weight(c),
                              layers.bias(c));
      Value tailLse = createLogSumExp(rewriter, loc, ValueRange{tail});
      Value column = tensor::ExtractSliceOp::create(
          rewriter, loc, clusterLogits, {zero, rewriter.getIndexAttr(tails - c)},
          {tokens, one}, {one, one});
      column = createCollapse(rewriter, loc, column, {{0, 1}});
      // (head column - head lse) + (tail logit - tail lse).
      writeColumns(
          createPointwise(
              rewriter, loc, tail, ValueRange{tail, tailLse, column, lse},
              {id, row, row, row},
              [](OpBuilder &b, Location l, ValueRange a) {
                Value headLp = arith::SubFOp::create(b, l, a[2], a[3]);
                Value tailLp = arith::SubFOp::create(b, l, a[0], a[1]);
                return arith::AddFOp::create(b, l, headLp, tailLp).getResult();
              }),
          ends[c]);
    }
    Value result =
        createExpand(rewriter, loc, out, {{0, 1}, {2}},
                     {sizes[0], sizes[1], rewriter.getIndexAttr(ends.back())});
    rewriter.replaceOp(op, castTo(rewriter, loc, result, op.getType()));
    return success();
  }
};

// txl.adaptive_embedding_grad => per cluster: compact, gather the rows of
// dy and of the table, d_proj = dyᵀ emb, scatter-add dy proj into the table.
struct AdaptiveEmbeddingGradLowering
    : public OpRewritePattern<AdaptiveEmbeddingGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AdaptiveEmbeddingGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    ArrayRef<int64_t> ends = op.getCutoffEnds();
    Value ids = flattenTokens(rewriter, loc, op.getTokens());
    Value dy = createCollapse(rewriter, loc, op.getDResult(), {{0, 1}, {2}});
    auto samePos = [](OpBuilder &, Location, Value pos) { return pos; };
    SmallVector<Value> dTables, dProjs;
    for (size_t i = 0; i + 1 < ends.size(); ++i) {
      int64_t lo = ends[i];
      Value table = op.getTables()[i], proj = op.getProjs()[i];
      Value rows = createClusterRows(rewriter, loc, ids, lo, ends[i + 1]);
      Value loV = indexConst(rewriter, loc, lo);
      Value emb = gatherRows(
          rewriter, loc, table, rows,
          [&](OpBuilder &b, Location l, Value pos) -> Value {
            return arith::SubIOp::create(b, l, loadId(b, l, ids, pos), loV);
          });
      Value dyRows = gatherRows(rewriter, loc, dy, rows, samePos);
      dProjs.push_back(castTo(rewriter, loc,
                              createMatmulTransposedLhs(rewriter, loc, dyRows, emb),
                              proj.getType()));
      Value dEmb = createMatmul(rewriter, loc, dyRows, proj,
                                /*transposeRhs=*/false);
      Value dTable = createFilled(rewriter, loc, getSizes(rewriter, loc, table),
                                  cast<RankedTensorType>(table.getType())
                                      .getElementType(),
                                  0.0);
      dTable = createScatterAddRows(
          rewriter, loc, dTable, dEmb,
          [&](OpBuilder &b, Location l, Value m) -> Value {
            Value pos = tensor::ExtractOp::create(b, l, rows, ValueRange{m});
            return arith::SubIOp::create(b, l, loadId(b, l, ids, pos), loV);
          });
      dTables.push_back(castTo(rewriter, loc, dTable, table.getType()));
    }
    SmallVector<Value> results(dTables);
    llvm::append_range(results, dProjs);
    rewriter.replaceOp(op, results);
    return success();
  }
};

// txl.adaptive_nll_grad => head: softmax minus the one-hot of the target's
// shortlist or cluster column, scaled by dnll, back through the head layer
// and projection; each tail: compact its tokens, recompute their tail
// log-softmax, back through the tail layer and projection, scatter-add into
// d_hidden.
struct AdaptiveNllGradLowering : public OpRewritePattern<AdaptiveNllGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AdaptiveNllGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    ArrayRef<int64_t> ends = op.getCutoffEnds();
    int64_t tails = static_cast<int64_t>(ends.size()) - 2;
    ClusterLayers<AdaptiveNllGradOp> layers(op, rewriter, loc);
    bool sliced = layers.sliced(), projected = layers.projected();

    Value hidden = createCollapse(rewriter, loc, op.getHidden(), {{0, 1}, {2}});
    Value target = flattenTokens(rewriter, loc, op.getTarget());
    Value dNll = flattenTokens(rewriter, loc, op.getDResult());
    Type et = cast<RankedTensorType>(hidden.getType()).getElementType();
    SmallVector<Value> dWeights, dBiases, dProjs;

    // Head: the shortlist's softmax gradient in column blocks, recomputed
    // from headIn (the [tokens, shortlist] logits never exist whole); the
    // cluster columns whole.
    Value headIn = layers.project(hidden, 0);
    Value lse = createBlockedLogSumExp(rewriter, loc, headIn, layers.weight(0),
                                       layers.bias(0));
    Value clusterLogits;
    if (tails > 0) {
      clusterLogits = linearRows(rewriter, loc, headIn, op.getClusterWeight(),
                                 op.getClusterBias());
      // log(exp(lse_shortlist) + Σ exp(cluster logits)).
      SmallVector<OpFoldResult> rows = getSizes(rewriter, loc, lse);
      Value lse2 = createExpand(rewriter, loc, lse, {{0, 1}},
                                {rows[0], rewriter.getIndexAttr(1)});
      lse = createLogSumExp(rewriter, loc, ValueRange{lse2, clusterLogits});
    }
    auto targetAt = [&](OpBuilder &b, Location l, Value m) {
      return loadId(b, l, target, m);
    };
    // The target's shortlist column; tail tokens (t >= ends[1]) get -1,
    // which matches no column.
    AffineMap id1 = identityMap(getContext(), 1);
    Value shortTarget = createPointwise(
        rewriter, loc, target, ValueRange{target}, {id1},
        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          Value inHead = arith::CmpIOp::create(
              b, l, arith::CmpIPredicate::slt, a[0],
              arith::ConstantIntOp::create(b, l, ends[1], 64));
          return arith::SelectOp::create(
              b, l, inHead, a[0], arith::ConstantIntOp::create(b, l, -1, 64));
        });
    std::array<Value, 3> headGrads =
        createBlockedSoftmaxGrad(rewriter, loc, headIn, layers.weight(0),
                                 layers.bias(0), lse, dNll, shortTarget);
    Value dHeadIn = headGrads[0];
    Value dW0 = headGrads[1];
    Value dB0 = headGrads[2];
    Value dClusterWeight, dClusterBias;
    if (tails > 0) {
      // Tail cluster c is head column -c, i.e. cluster row tails - c; head
      // tokens match no cluster row (row tails is out of range).
      Value dClus = softmaxMinusOneHot(
          rewriter, loc, clusterLogits, lse, dNll,
          [&](OpBuilder &b, Location l, Value m) -> Value {
            Value t = targetAt(b, l, m);
            return arith::SubIOp::create(b, l, indexConst(b, l, tails),
                                         clusterOf(b, l, t, ends, tails));
          });
      Value fromClusters = createMatmul(rewriter, loc, dClus,
                                        op.getClusterWeight(),
                                        /*transposeRhs=*/false);
      AffineMap id = identityMap(getContext(), 2);
      dHeadIn = createPointwise(
          rewriter, loc, dHeadIn, ValueRange{dHeadIn, fromClusters}, {id, id},
          [](OpBuilder &b, Location l, ValueRange a) -> Value {
            return arith::AddFOp::create(b, l, a[0], a[1]);
          });
      dClusterWeight = createMatmulTransposedLhs(rewriter, loc, dClus, headIn);
      dClusterBias = createSumLeading(rewriter, loc, dClus, 1);
    }
    Value dHidden = dHeadIn;
    if (projected) {
      dProjs.push_back(
          createMatmulTransposedLhs(rewriter, loc, hidden, dHeadIn));
      dHidden = createMatmul(rewriter, loc, dHeadIn, op.getProjs()[0],
                             /*transposeRhs=*/true);
    }
    dWeights.push_back(dW0);
    dBiases.push_back(dB0);

    // Tails.
    for (int64_t c = 1; c <= tails; ++c) {
      int64_t lo = ends[c];
      Value rows = createClusterRows(rewriter, loc, target, lo, ends[c + 1]);
      Value h = gatherRows(rewriter, loc, hidden, rows,
                           [](OpBuilder &, Location, Value pos) { return pos; });
      Value hp = layers.project(h, c);
      Value logits =
          linearRows(rewriter, loc, hp, layers.weight(c), layers.bias(c));
      Value tailLse = createLogSumExp(rewriter, loc, ValueRange{logits});
      Value loV = indexConst(rewriter, loc, lo);
      Value dL = softmaxMinusOneHot(
          rewriter, loc, logits, tailLse,
          gatherElements(rewriter, loc, dNll, rows),
          [&](OpBuilder &b, Location l, Value m) -> Value {
            Value pos = tensor::ExtractOp::create(b, l, rows, ValueRange{m});
            return arith::SubIOp::create(b, l, targetAt(b, l, pos), loV);
          });
      dWeights.push_back(createMatmulTransposedLhs(rewriter, loc, dL, hp));
      dBiases.push_back(createSumLeading(rewriter, loc, dL, 1));
      Value dHp = createMatmul(rewriter, loc, dL, layers.weight(c),
                               /*transposeRhs=*/false);
      Value dH = dHp;
      if (projected) {
        dProjs.push_back(createMatmulTransposedLhs(rewriter, loc, h, dHp));
        dH = createMatmul(rewriter, loc, dHp, op.getProjs()[c],
                          /*transposeRhs=*/true);
      }
      dHidden = scatterRows(rewriter, loc, dHidden, rows, dH, /*add=*/true);
    }

    // A sliced (div_val = 1) layer gets its clusters' rows back in place.
    auto assemble = [&](ArrayRef<Value> parts, Value full) -> Value {
      auto type = cast<RankedTensorType>(full.getType());
      Value out = createFilled(rewriter, loc, getSizes(rewriter, loc, full), et,
                               0.0);
      for (auto [i, part] : llvm::enumerate(parts)) {
        SmallVector<OpFoldResult> offsets(type.getRank(),
                                          rewriter.getIndexAttr(0));
        offsets[0] = rewriter.getIndexAttr(ends[i]);
        SmallVector<OpFoldResult> strides(type.getRank(),
                                          rewriter.getIndexAttr(1));
        out = tensor::InsertSliceOp::create(rewriter, loc, part, out, offsets,
                                            getSizes(rewriter, loc, part),
                                            strides);
      }
      return castTo(rewriter, loc, out, type);
    };
    SmallVector<Value> results = {castTo(
        rewriter, loc,
        createExpand(rewriter, loc, dHidden, {{0, 1}, {2}},
                     getSizes(rewriter, loc, op.getHidden())),
        op.getHidden().getType())};
    if (sliced) {
      results.push_back(assemble(dWeights, op.getWeights()[0]));
      results.push_back(assemble(dBiases, op.getBiases()[0]));
    } else {
      for (auto [g, w] : llvm::zip(dWeights, op.getWeights()))
        results.push_back(castTo(rewriter, loc, g, w.getType()));
      for (auto [g, bias] : llvm::zip(dBiases, op.getBiases()))
        results.push_back(castTo(rewriter, loc, g, bias.getType()));
    }
    for (auto [g, p] : llvm::zip(dProjs, op.getProjs()))
      results.push_back(castTo(rewriter, loc, g, p.getType()));
    if (tails > 0) {
      results.push_back(castTo(rewriter, loc, dClusterWeight,
                               op.getClusterWeight().getType()));
      results.push_back(
          castTo(rewriter, loc, dClusterBias, op.getClusterBias().getType()));
    }
    rewriter.replaceOp(op, results);
    return success();
  }
};

} // namespace

void mlir::txl::populateTxlAdaptiveToLinalgPatterns(
    RewritePatternSet &patterns) {
  patterns.add<AdaptiveEmbeddingLowering, AdaptiveNllLowering,
               AdaptiveLogSoftmaxLowering, AdaptiveEmbeddingGradLowering,
               AdaptiveNllGradLowering>(
      patterns.getContext());
}

//===- Attention.cpp - Lower positions and attention to linalg ---*- C++ -*-===//
//
// txl.pos_emb (sinusoids of distances klen-1 ... 0), txl.masked_softmax, and
// the fused txl.rel_attention and its backward op. The fused lowering
// computes AC = (q + u) kᵀ with a batched product into the score buffer, then
// accumulates BD[i, j] = (q_i + v) · r[j + qlen - 1 - i] onto it at its
// shifted position: the unshifted positional scores never exist, in the
// forward or in the backward direction.
//
//===----------------------------------------------------------------------===//

#include "Builders.h"
#include "txl/Conversion/Passes.h"
#include "txl/IR/TxlOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::txl;

/// `x[i, b, n, d] + bias[n, d]`.
static Value addHeadBias(OpBuilder &b, Location loc, Value x, Value bias) {
  MLIRContext *ctx = b.getContext();
  auto type = cast<RankedTensorType>(x.getType());
  AffineMap id = identityMap(ctx, 4);
  AffineMap biasMap = AffineMap::get(
      4, 0, {getAffineDimExpr(2, ctx), getAffineDimExpr(3, ctx)}, ctx);
  return linalg::GenericOp::create(
             b, loc, TypeRange{type}, ValueRange{x, bias},
             ValueRange{createEmpty(b, loc, getSizes(b, loc, x),
                                    type.getElementType())},
             {id, biasMap, id},
             SmallVector<utils::IteratorType>(4, utils::IteratorType::parallel),
             [](OpBuilder &nb, Location l, ValueRange a) {
               linalg::YieldOp::create(
                   nb, l, ValueRange{arith::AddFOp::create(nb, l, a[0], a[1])});
             })
      .getResult(0);
}

/// [len, b, n, d] -> [b·n, len, d], contiguous.
static Value headsFirst(OpBuilder &b, Location loc, Value x) {
  return createCollapse(b, loc, createTranspose(b, loc, x, {1, 2, 0, 3}),
                        {{0, 1}, {2}, {3}});
}

/// Row `x` of a klen-row tensor when 0 <= x < klen (`one` is the index 1):
/// `inBounds`, and `index` clamped into range so that a load is always legal (its value is then
/// discarded by a select).
struct BoundedRow {
  Value inBounds;
  Value index;
};
static BoundedRow boundRow(OpBuilder &b, Location l, Value x, Value klen,
                           Value one) {
  Value inBounds =
      arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult, x, klen);
  Value index =
      arith::MinUIOp::create(b, l, x, arith::SubIOp::create(b, l, klen, one));
  return {inBounds, index};
}

/// `j + qlen - 1 - i`: the row of the positional keys that score (i, j)
/// reads after the official rel_shift.
static Value shiftedRow(OpBuilder &b, Location l, Value i, Value j, Value qlen,
                        Value one) {
  return arith::SubIOp::create(
      b, l, arith::AddIOp::create(b, l, j, arith::SubIOp::create(b, l, qlen, one)),
      i);
}

/// The attention probabilities of txl.rel_attention, [b, n, i, j], from the
/// queries q and `qu` = q + u ([qlen, b, n, d]); `qv` receives q + v: AC = qu kᵀ
/// by a batched product into the score buffer, then
/// BD[i, j] = qv_i · r[j + qlen - 1 - i] accumulated onto it at its shifted
/// position (the unshifted positional scores never exist), then the scaled,
/// masked softmax over j.
static Value createRelAttentionProbs(OpBuilder &rewriter, Location loc,
                                     Value q, Value qu, Value rRBias, Value k,
                                     Value r, Value memLen, Value sameLength,
                                     double scale, Value &qv) {
  MLIRContext *ctx = rewriter.getContext();
  SmallVector<OpFoldResult> qs = getSizes(rewriter, loc, q);
  OpFoldResult klenOfr = getSizes(rewriter, loc, k)[0];
  Value qlen = tensor::DimOp::create(rewriter, loc, q, 0);
  Value klen = tensor::DimOp::create(rewriter, loc, k, 0);
  Type et = cast<RankedTensorType>(q.getType()).getElementType();

  // AC = (q + u) kᵀ per (batch, head): [b, n, i, j].
  Value ac = createBatchMatmul(rewriter, loc, headsFirst(rewriter, loc, qu),
                               headsFirst(rewriter, loc, k),
                               /*transposeRhs=*/true);
  ac = createExpand(rewriter, loc, ac, {{0, 1}, {2}, {3}},
                    {qs[1], qs[2], qs[0], klenOfr});

  // scores[b, n, i, j] += sum_d (q + v)[i, b, n, d] * r[j + qlen - 1 - i, n, d]
  qv = addHeadBias(rewriter, loc, q, rRBias);
  AffineExpr db, dn, di, dj, dd;
  bindDims(ctx, db, dn, di, dj, dd);
  SmallVector<utils::IteratorType> iters(4, utils::IteratorType::parallel);
  iters.push_back(utils::IteratorType::reduction);
  Value scores =
      linalg::GenericOp::create(
          rewriter, loc, TypeRange{ac.getType()}, ValueRange{qv},
          ValueRange{ac},
          {AffineMap::get(5, 0, {di, db, dn, dd}, ctx),
           AffineMap::get(5, 0, {db, dn, di, dj}, ctx)},
          iters,
          [&](OpBuilder &b, Location l, ValueRange a) {
            Value i = linalg::IndexOp::create(b, l, 2);
            Value j = linalg::IndexOp::create(b, l, 3);
            Value n = linalg::IndexOp::create(b, l, 1);
            Value d = linalg::IndexOp::create(b, l, 4);
            Value one = arith::ConstantIndexOp::create(b, l, 1);
            BoundedRow row =
                boundRow(b, l, shiftedRow(b, l, i, j, qlen, one), klen, one);
            Value rv =
                tensor::ExtractOp::create(b, l, r, ValueRange{row.index, n, d});
            Value prod = arith::MulFOp::create(b, l, a[0], rv);
            Value zero = arith::ConstantOp::create(b, l, b.getFloatAttr(et, 0.0));
            Value term = arith::SelectOp::create(b, l, row.inBounds, prod, zero);
            linalg::YieldOp::create(
                b, l, ValueRange{arith::AddFOp::create(b, l, a[1], term)});
          })
          .getResult(0);

  return createMaskedSoftmax(rewriter, loc, scores,
                             ScoreLayout{/*queryDim=*/2, /*keyDim=*/3}, memLen,
                             sameLength, scale);
}

/// The dropatt of a fused attention op (txl.rel_attention or its backward),
/// when it has one.
template <typename OpTy>
static std::optional<DropoutSite> getDropattSite(OpTy op) {
  std::optional<APFloat> rate = op.getDropatt();
  if (!rate)
    return std::nullopt;
  return DropoutSite{
      op.getDropattSeed(),     op.getDropattOffset(),
      op.getDropattTraining(), op.getDropattStreamBase(),
      rate->convertToDouble(), static_cast<int64_t>(*op.getDropattStream())};
}

/// Probabilities [b, n, i, j] through dropatt, their counters numbered in
/// the [qlen, klen, batch, n_head] order of the decomposed form's scores.
static Value dropProbs(OpBuilder &b, Location loc, Value probs,
                       const std::optional<DropoutSite> &site) {
  if (!site)
    return probs;
  return createDropout(b, loc, probs, *site, {2, 3, 0, 1});
}

namespace {

// txl.pos_emb(inv_freq, klen, clamp)[k, c] => sin/cos(min(klen-1-k, clamp) * inv_freq[c mod half])
struct PosEmbLowering : public OpRewritePattern<PosEmbOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PosEmbOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    if (type.isDynamicDim(1))
      return rewriter.notifyMatchFailure(op, "feature dimension must be static");
    int64_t half = type.getDimSize(1) / 2;
    Value invFreq = op.getInvFreq(), klen = op.getKlen();
    Value clamp = op.getClampLen();
    SmallVector<Value> dynamicDims;
    if (type.isDynamicDim(0))
      dynamicDims.push_back(klen);
    Value generated = tensor::GenerateOp::create(
        rewriter, loc, type, dynamicDims,
        [&](OpBuilder &b, Location l, ValueRange ivs) {
          Value one = arith::ConstantIndexOp::create(b, l, 1);
          Value dist = arith::SubIOp::create(
              b, l, arith::SubIOp::create(b, l, klen, one), ivs[0]);
          Value pos = arith::IndexCastOp::create(b, l, b.getI64Type(), dist);
          Value zero64 = arith::ConstantIntOp::create(b, l, 0, 64);
          Value clamped = arith::MinSIOp::create(b, l, pos, clamp);
          Value doClamp = arith::CmpIOp::create(
              b, l, arith::CmpIPredicate::sgt, clamp, zero64);
          pos = arith::SelectOp::create(b, l, doClamp, clamped, pos);
          Value posF =
              arith::SIToFPOp::create(b, l, type.getElementType(), pos);
          Value halfC = arith::ConstantIndexOp::create(b, l, half);
          Value isSin = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult,
                                              ivs[1], halfC);
          Value freqIdx = arith::SelectOp::create(
              b, l, isSin, ivs[1], arith::SubIOp::create(b, l, ivs[1], halfC));
          Value freq = tensor::ExtractOp::create(b, l, invFreq, freqIdx);
          Value angle = arith::MulFOp::create(b, l, posF, freq);
          Value value = arith::SelectOp::create(
              b, l, isSin, math::SinOp::create(b, l, angle),
              math::CosOp::create(b, l, angle));
          tensor::YieldOp::create(b, l, value);
        });
    rewriter.replaceOp(op, generated);
    return success();
  }
};

// txl.masked_softmax(s[i, j, b, n]) => mask, max, exp, sum, divide over j
struct MaskedSoftmaxLowering : public OpRewritePattern<MaskedSoftmaxOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MaskedSoftmaxOp op,
                                PatternRewriter &rewriter) const override {
    Value probs = createMaskedSoftmax(
        rewriter, op.getLoc(), op.getScores(),
        ScoreLayout{/*queryDim=*/0, /*keyDim=*/1}, op.getMemLen(),
        op.getSameLength(), op.getScale().convertToDouble());
    rewriter.replaceOp(op, probs);
    return success();
  }
};

// txl.rel_attention => AC = bmm(q + u, k), += BD at r[j + qlen - 1 - i], softmax, bmm(p, v)
struct RelAttentionLowering : public OpRewritePattern<RelAttentionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(RelAttentionOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value q = op.getQuery();
    SmallVector<OpFoldResult> qs = getSizes(rewriter, loc, q);
    Value qv;
    Value probs = createRelAttentionProbs(
        rewriter, loc, q, addHeadBias(rewriter, loc, q, op.getRWBias()),
        op.getRRBias(), op.getKey(), op.getPosKey(), op.getMemLen(),
        op.getSameLength(), op.getScale().convertToDouble(), qv);
    probs = dropProbs(rewriter, loc, probs, getDropattSite(op));
    Value out = createBatchMatmul(
        rewriter, loc, createCollapse(rewriter, loc, probs, {{0, 1}, {2}, {3}}),
        headsFirst(rewriter, loc, op.getValue()), /*transposeRhs=*/false);
    out = createExpand(rewriter, loc, out, {{0, 1}, {2}, {3}},
                       {qs[1], qs[2], qs[0], qs[3]});
    out = createTranspose(rewriter, loc, out, {2, 0, 1, 3});
    rewriter.replaceOp(op, castTo(rewriter, loc, out, op.getType()));
    return success();
  }
};

/// x [b, n, i, d] summed over b and i: [n, d].
static Value sumOverBatchAndQuery(OpBuilder &b, Location loc, Value x) {
  MLIRContext *ctx = b.getContext();
  SmallVector<OpFoldResult> sizes = getSizes(b, loc, x);
  auto type = cast<RankedTensorType>(x.getType());
  Value init =
      createFilled(b, loc, {sizes[1], sizes[3]}, type.getElementType(), 0.0);
  AffineExpr db, dn, di, dd;
  bindDims(ctx, db, dn, di, dd);
  using utils::IteratorType;
  return linalg::GenericOp::create(
             b, loc, TypeRange{init.getType()}, ValueRange{x}, ValueRange{init},
             {identityMap(ctx, 4), AffineMap::get(4, 0, {dn, dd}, ctx)},
             {IteratorType::reduction, IteratorType::parallel,
              IteratorType::reduction, IteratorType::parallel},
             [](OpBuilder &nb, Location l, ValueRange a) {
               linalg::YieldOp::create(
                   nb, l, ValueRange{arith::AddFOp::create(nb, l, a[0], a[1])});
             })
      .getResult(0);
}

// txl.rel_attention_grad => recompute P; dV = (P ⊙ M)ᵀ dO; dP = (dO Vᵀ) ⊙ M
// (M: the dropatt mask / (1 - rate), 1 without dropatt);
// dS = scale P (dP - rowsum(P dP)); dQu = dS K, dK = dSᵀ (q + u);
// dQv[i] = sum_j dS[i, j] r[j + qlen - 1 - i];
// dR[m] = sum_{b, i} dS[i, m - qlen + 1 + i] (q + v)[i]
struct RelAttentionGradLowering : public OpRewritePattern<RelAttentionGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(RelAttentionGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    Value q = op.getQuery(), k = op.getKey(), v = op.getValue();
    Value r = op.getPosKey(), dOut = op.getDResult();
    Type et = cast<RankedTensorType>(q.getType()).getElementType();
    double scale = op.getScale().convertToDouble();
    SmallVector<OpFoldResult> qs = getSizes(rewriter, loc, q);
    OpFoldResult klenOfr = getSizes(rewriter, loc, k)[0];
    Value qlen = tensor::DimOp::create(rewriter, loc, q, 0);
    Value klen = tensor::DimOp::create(rewriter, loc, k, 0);

    Value qu = addHeadBias(rewriter, loc, q, op.getRWBias());
    Value qv;
    Value probs = createRelAttentionProbs(rewriter, loc, q, qu, op.getRRBias(),
                                          k, r, op.getMemLen(),
                                          op.getSameLength(), scale, qv);
    Value p3 = createCollapse(rewriter, loc, probs, {{0, 1}, {2}, {3}});
    Value dO3 = headsFirst(rewriter, loc, dOut);
    auto toBatchHeads = [&](Value x3, OpFoldResult rows) {
      return createExpand(rewriter, loc, x3, {{0, 1}, {2}, {3}},
                          {qs[1], qs[2], rows, qs[3]});
    };
    auto toRowsFirst = [&](Value x4, Type type) {
      return castTo(rewriter, loc, createTranspose(rewriter, loc, x4, {2, 0, 1, 3}),
                    type);
    };

    // Values and probabilities; dropatt is linear, so its adjoint is the
    // same mask applied to dP.
    std::optional<DropoutSite> dropatt = getDropattSite(op);
    Value dropped3 =
        dropatt ? createCollapse(rewriter, loc,
                                 dropProbs(rewriter, loc, probs, dropatt),
                                 {{0, 1}, {2}, {3}})
                : p3;
    Value dV = createMatmulTransposedLhs(rewriter, loc, dropped3, dO3);
    Value dP = createBatchMatmul(rewriter, loc, dO3,
                                 headsFirst(rewriter, loc, v),
                                 /*transposeRhs=*/true);
    if (dropatt) {
      Value dP4 = createExpand(rewriter, loc, dP, {{0, 1}, {2}, {3}},
                               {qs[1], qs[2], qs[0], klenOfr});
      dP = createCollapse(rewriter, loc, dropProbs(rewriter, loc, dP4, dropatt),
                          {{0, 1}, {2}, {3}});
    }
    AffineMap id3 = identityMap(ctx, 3);
    auto mul = [](OpBuilder &b, Location l, ValueRange a) -> Value {
      return arith::MulFOp::create(b, l, a[0], a[1]);
    };
    Value pdP = createPointwise(rewriter, loc, p3, ValueRange{p3, dP},
                                {id3, id3}, mul);
    Value rowDot = reduceLastDim(
        rewriter, loc, ValueRange{pdP}, 0.0,
        [](OpBuilder &b, Location l, ValueRange a) -> Value {
          return arith::AddFOp::create(b, l, a[0], a[1]);
        });
    Value dS3 = createPointwise(
        rewriter, loc, p3, ValueRange{p3, dP, rowDot},
        {id3, id3, dropDimMap(ctx, 3, 2)},
        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
          Value centered = arith::SubFOp::create(b, l, a[1], a[2]);
          Value s = arith::ConstantOp::create(b, l, b.getFloatAttr(et, scale));
          return arith::MulFOp::create(
              b, l, arith::MulFOp::create(b, l, a[0], centered), s);
        });
    Value dS = createExpand(rewriter, loc, dS3, {{0, 1}, {2}, {3}},
                            {qs[1], qs[2], qs[0], klenOfr});

    // Content term AC = (q + u) kᵀ.
    Value qu3 = headsFirst(rewriter, loc, qu);
    Value dQu = toBatchHeads(
        createBatchMatmul(rewriter, loc, dS3, headsFirst(rewriter, loc, k),
                          /*transposeRhs=*/false),
        qs[0]);
    Value dK = createMatmulTransposedLhs(rewriter, loc, dS3, qu3);

    // Positional term BD[i, j] = (q + v)_i · r[j + qlen - 1 - i], by index.
    Value zeroF = arith::ConstantOp::create(rewriter, loc,
                                            rewriter.getFloatAttr(et, 0.0));
    AffineExpr e0, e1, e2, e3, e4;
    bindDims(ctx, e0, e1, e2, e3, e4);
    using utils::IteratorType;
    // dQv[b, n, i, d] = sum_j dS[b, n, i, j] r[j + qlen - 1 - i, n, d]
    Value dQvInit = createFilled(rewriter, loc, {qs[1], qs[2], qs[0], qs[3]},
                                 et, 0.0);
    Value dQv =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{dQvInit.getType()}, ValueRange{dS},
            ValueRange{dQvInit},
            {AffineMap::get(5, 0, {e0, e1, e2, e4}, ctx),
             AffineMap::get(5, 0, {e0, e1, e2, e3}, ctx)},
            {IteratorType::parallel, IteratorType::parallel,
             IteratorType::parallel, IteratorType::parallel,
             IteratorType::reduction},
            [&](OpBuilder &b, Location l, ValueRange a) {
              Value n = linalg::IndexOp::create(b, l, 1);
              Value i = linalg::IndexOp::create(b, l, 2);
              Value d = linalg::IndexOp::create(b, l, 3);
              Value j = linalg::IndexOp::create(b, l, 4);
              Value one = arith::ConstantIndexOp::create(b, l, 1);
              BoundedRow row =
                  boundRow(b, l, shiftedRow(b, l, i, j, qlen, one), klen, one);
              Value rv = tensor::ExtractOp::create(b, l, r,
                                                   ValueRange{row.index, n, d});
              Value term = arith::SelectOp::create(
                  b, l, row.inBounds, arith::MulFOp::create(b, l, a[0], rv),
                  zeroF);
              linalg::YieldOp::create(
                  b, l, ValueRange{arith::AddFOp::create(b, l, a[1], term)});
            })
            .getResult(0);
    // dR[m, n, d] = sum_{b, i} dS[b, n, i, m - qlen + 1 + i] (q + v)[i, b, n, d]
    Value dRInit = createFilled(rewriter, loc, {klenOfr, qs[2], qs[3]}, et, 0.0);
    Value dR =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{dRInit.getType()}, ValueRange{qv},
            ValueRange{dRInit},
            {AffineMap::get(5, 0, {e4, e3, e1, e2}, ctx),
             AffineMap::get(5, 0, {e0, e1, e2}, ctx)},
            {IteratorType::parallel, IteratorType::parallel,
             IteratorType::parallel, IteratorType::reduction,
             IteratorType::reduction},
            [&](OpBuilder &b, Location l, ValueRange a) {
              Value m = linalg::IndexOp::create(b, l, 0);
              Value n = linalg::IndexOp::create(b, l, 1);
              Value bt = linalg::IndexOp::create(b, l, 3);
              Value i = linalg::IndexOp::create(b, l, 4);
              // The inverse of the shift: j = m - (qlen - 1 - i).
              Value one = arith::ConstantIndexOp::create(b, l, 1);
              Value j = arith::SubIOp::create(
                  b, l, arith::AddIOp::create(b, l, m, i),
                  arith::SubIOp::create(b, l, qlen, one));
              BoundedRow col = boundRow(b, l, j, klen, one);
              Value g = tensor::ExtractOp::create(
                  b, l, dS, ValueRange{bt, n, i, col.index});
              Value term = arith::SelectOp::create(
                  b, l, col.inBounds, arith::MulFOp::create(b, l, g, a[0]),
                  zeroF);
              linalg::YieldOp::create(
                  b, l, ValueRange{arith::AddFOp::create(b, l, a[1], term)});
            })
            .getResult(0);

    AffineMap id4 = identityMap(ctx, 4);
    Value dQ = createPointwise(
        rewriter, loc, dQu, ValueRange{dQu, dQv}, {id4, id4},
        [](OpBuilder &b, Location l, ValueRange a) -> Value {
          return arith::AddFOp::create(b, l, a[0], a[1]);
        });
    Value bias = op.getRWBias();
    rewriter.replaceOp(
        op, {toRowsFirst(dQ, q.getType()),
             toRowsFirst(toBatchHeads(dK, klenOfr), k.getType()),
             toRowsFirst(toBatchHeads(dV, klenOfr), v.getType()),
             castTo(rewriter, loc, dR, r.getType()),
             castTo(rewriter, loc, sumOverBatchAndQuery(rewriter, loc, dQu),
                    bias.getType()),
             castTo(rewriter, loc, sumOverBatchAndQuery(rewriter, loc, dQv),
                    bias.getType())});
    return success();
  }
};

} // namespace

void mlir::txl::populateTxlAttentionToLinalgPatterns(
    RewritePatternSet &patterns) {
  patterns.add<PosEmbLowering, MaskedSoftmaxLowering, RelAttentionLowering,
               RelAttentionGradLowering>(
      patterns.getContext());
}

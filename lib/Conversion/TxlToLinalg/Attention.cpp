//===- Attention.cpp - Lower positions and attention to linalg ---*- C++ -*-===//
//
// txl.pos_emb (sinusoids of distances klen-1 ... 0), txl.masked_softmax and
// its backward, and the fused txl.rel_attention and its backward op. Every
// score product of the fused lowering is a batched BLAS product: the unshifted positional
// scores (q + v) rᵀ are written into a zero-padded buffer whose shifted view
// is BD (the official _rel_shift without its copy) and AC = (q + u) kᵀ is
// accumulated onto that view; the backward shifts dS back to the unshifted
// columns once and takes both positional gradients from BLAS too.
//
//===----------------------------------------------------------------------===//

#include "Builders.h"
#include "txl/Conversion/IndexArithmetic.h"
#include "txl/Conversion/Passes.h"
#include "txl/IR/TxlOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::txl;

/// pos_key r [klen, n, d] repeated for every one of `batch` columns:
/// [b·n, klen, d], the right operand of the per-(batch, head) positional
/// products (BLAS has no zero batch stride).
static Value broadcastPosKey(OpBuilder &b, Location loc, Value r,
                             OpFoldResult batch) {
  MLIRContext *ctx = b.getContext();
  SmallVector<OpFoldResult> s = getSizes(b, loc, r);
  Value init =
      createEmpty(b, loc, {batch, s[1], s[0], s[2]},
                  cast<RankedTensorType>(r.getType()).getElementType());
  AffineExpr db, dn, dm, dd;
  bindDims(ctx, db, dn, dm, dd);
  Value repeated =
      linalg::GenericOp::create(
          b, loc, TypeRange{init.getType()}, ValueRange{r}, ValueRange{init},
          {AffineMap::get(4, 0, {dm, dn, dd}, ctx), identityMap(ctx, 4)},
          SmallVector<utils::IteratorType>(4, utils::IteratorType::parallel),
          [](OpBuilder &nb, Location l, ValueRange a) {
            linalg::YieldOp::create(nb, l, ValueRange{a[0]});
          })
          .getResult(0);
  return createCollapse(b, loc, repeated, {{0, 1}, {2}, {3}});
}

/// The shifted view of a padded positional-score buffer [b·n, qlen,
/// klen + 1]: the [b·n, qlen, klen] tensor that starts `qlen` elements into
/// each (batch, head) block with row stride klen, i.e. entry (i, j) is
/// padded[i, j + qlen - i] = column j + qlen - 1 - i of the unpadded
/// columns 1..klen when j <= i + mlen. This is the official _rel_shift
/// (zero pad, view, slice) without its copy; entries with j > i + mlen
/// alias other entries and are masked by the softmax.
static Value shiftedView(OpBuilder &b, Location loc, Value padded,
                         OpFoldResult qlen, OpFoldResult klen) {
  SmallVector<OpFoldResult> s = getSizes(b, loc, padded);
  Value flat = createCollapse(b, loc, padded, {{0}, {1, 2}});
  OpFoldResult one = b.getIndexAttr(1);
  Value slice = tensor::ExtractSliceOp::create(
      b, loc, flat, {b.getIndexAttr(0), qlen},
      {s[0], mulFolded(b, loc, qlen, klen)}, {one, one});
  return createExpand(b, loc, slice, {{0}, {1, 2}}, {s[0], qlen, klen});
}

/// Columns 1..klen of a padded positional-score buffer [b·n, qlen, klen + 1]:
/// the unshifted positional scores (or their gradient), row stride klen + 1.
static Value unpaddedColumns(OpBuilder &b, Location loc, Value padded,
                             OpFoldResult qlen, OpFoldResult klen) {
  SmallVector<OpFoldResult> s = getSizes(b, loc, padded);
  OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
  return tensor::ExtractSliceOp::create(b, loc, padded, {zero, zero, one},
                                        {s[0], qlen, klen}, {one, one, one});
}

/// The gradient of the unshifted positional scores raw [b·n, qlen, klen]
/// from the gradient dS of the shifted ones: dRaw[i, m] = dS[i, m + 1 + i -
/// qlen] when that column exists, else 0 (the adjoint of the shifted view;
/// masked entries have dS = 0, so the columns they alias receive nothing).
/// One pass over [b·n, qlen, klen], each row a contiguous run of dS.
static Value unshiftScoreGrad(OpBuilder &b, Location loc, Value dS) {
  Type et = cast<RankedTensorType>(dS.getType()).getElementType();
  Value qlen = tensor::DimOp::create(b, loc, dS, 1);
  return createPointwise(
      b, loc, dS, ValueRange{}, {},
      [&](OpBuilder &nb, Location l, ValueRange) -> Value {
        Value bn = linalg::IndexOp::create(nb, l, 0);
        Value i = linalg::IndexOp::create(nb, l, 1);
        Value m = linalg::IndexOp::create(nb, l, 2);
        Value one = arith::ConstantIndexOp::create(nb, l, 1);
        Value zero = arith::ConstantIndexOp::create(nb, l, 0);
        // j = m + 1 + i - qlen <= klen - 1 always; it is < 0 before the
        // first column of row i.
        Value j = arith::SubIOp::create(
            nb, l,
            arith::AddIOp::create(nb, l, arith::AddIOp::create(nb, l, m, one),
                                  i),
            qlen);
        Value exists =
            arith::CmpIOp::create(nb, l, arith::CmpIPredicate::sge, j, zero);
        Value col = arith::MaxSIOp::create(nb, l, j, zero);
        Value g = tensor::ExtractOp::create(nb, l, dS, ValueRange{bn, i, col});
        Value zeroF =
            arith::ConstantOp::create(nb, l, nb.getFloatAttr(et, 0.0));
        return arith::SelectOp::create(nb, l, exists, g, zeroF);
      });
}

/// The unscaled, unmasked scores of txl.rel_attention, [b·n, qlen, klen],
/// from the heads-first operands qu3 = q + u, qv3 = q + v ([b·n, qlen, d]),
/// k3 and the repeated r3 ([b·n, klen, d]): raw[bn, i, m] = qv_i · r_m by a
/// batched product into columns 1..klen of a zero-filled [b·n, qlen,
/// klen + 1] buffer, whose shifted view is BD[i, j] = raw[i, j + qlen - 1 - i];
/// AC = qu kᵀ is then accumulated onto that view (BLAS beta = 1). One score
/// buffer, every score from BLAS, no gather.
static Value createRelAttentionScores(OpBuilder &b, Location loc, Value qu3,
                                      Value qv3, Value k3, Value r3) {
  SmallVector<OpFoldResult> qs = getSizes(b, loc, qu3);
  OpFoldResult klen = getSizes(b, loc, k3)[1];
  Type et = cast<RankedTensorType>(qu3.getType()).getElementType();
  Value padded =
      createFilled(b, loc, {qs[0], qs[1], addFolded(b, loc, klen, 1)}, et, 0.0);
  Value raw = createBatchMatmul(b, loc, qv3, r3, /*transposeRhs=*/true,
                                unpaddedColumns(b, loc, padded, qs[1], klen));
  OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
  padded = tensor::InsertSliceOp::create(b, loc, raw, padded, {zero, zero, one},
                                         {qs[0], qs[1], klen}, {one, one, one});
  return createBatchMatmul(b, loc, qu3, k3, /*transposeRhs=*/true,
                           shiftedView(b, loc, padded, qs[1], klen));
}

/// The heads-first operands of the fused attention: q + u, q + v ([b·n,
/// qlen, d]), k and r repeated per batch column ([b·n, klen, d]).
struct HeadsFirstOperands {
  Value qu3, qv3, k3, r3;
};
static HeadsFirstOperands getHeadsFirstOperands(OpBuilder &b, Location loc,
                                                Value q, Value rWBias,
                                                Value rRBias, Value k,
                                                Value r) {
  OpFoldResult batch = getSizes(b, loc, q)[1];
  return {headsFirst(b, loc, q, rWBias), headsFirst(b, loc, q, rRBias),
          headsFirst(b, loc, k), broadcastPosKey(b, loc, r, batch)};
}

/// The attention probabilities of txl.rel_attention, [b, n, i, j]: the
/// scores of createRelAttentionScores, then the scaled, masked softmax over
/// j (which hides the entries the shifted view aliases).
static Value createRelAttentionProbs(OpBuilder &b, Location loc,
                                     const HeadsFirstOperands &ops,
                                     OpFoldResult batch, OpFoldResult nHead,
                                     Value memLen, Value sameLength,
                                     double scale) {
  Value scores =
      createRelAttentionScores(b, loc, ops.qu3, ops.qv3, ops.k3, ops.r3);
  SmallVector<OpFoldResult> s = getSizes(b, loc, scores);
  scores = createExpand(b, loc, scores, {{0, 1}, {2}, {3}},
                        {batch, nHead, s[1], s[2]});
  return createMaskedSoftmax(b, loc, scores,
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

// txl.softmax_grad(dP[i, j, b, n], P) => heads first, scale P (dP -
// rowsum(P dP)) over j, back to [i, j, b, n]
struct SoftmaxGradLowering : public OpRewritePattern<SoftmaxGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SoftmaxGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    SmallVector<OpFoldResult> s = getSizes(rewriter, loc, op.getProbs());
    Value dS3 = createSoftmaxGrad(
        rewriter, loc, scoresHeadsFirst(rewriter, loc, op.getProbs()),
        scoresHeadsFirst(rewriter, loc, op.getDResult()),
        op.getScale().convertToDouble());
    Value dS = scoresRowsFirst(rewriter, loc, dS3, s[2], s[3], s[0], s[1]);
    rewriter.replaceOp(op, castTo(rewriter, loc, dS, op.getType()));
    return success();
  }
};

// txl.rel_attention => BD = shift(bmm(q + v, r)) in a padded buffer, += bmm(q +
// u, k), softmax, bmm(p, v)
struct RelAttentionLowering : public OpRewritePattern<RelAttentionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(RelAttentionOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value q = op.getQuery();
    SmallVector<OpFoldResult> qs = getSizes(rewriter, loc, q);
    HeadsFirstOperands ops =
        getHeadsFirstOperands(rewriter, loc, q, op.getRWBias(), op.getRRBias(),
                              op.getKey(), op.getPosKey());
    Value probs = createRelAttentionProbs(rewriter, loc, ops, qs[1], qs[2],
                                          op.getMemLen(), op.getSameLength(),
                                          op.getScale().convertToDouble());
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

/// x [b, n, m, d] summed over b: [m, n, d] (pos_key's layout).
static Value sumOverBatch(OpBuilder &b, Location loc, Value x) {
  MLIRContext *ctx = b.getContext();
  SmallVector<OpFoldResult> sizes = getSizes(b, loc, x);
  auto type = cast<RankedTensorType>(x.getType());
  Value init = createFilled(b, loc, {sizes[2], sizes[1], sizes[3]},
                            type.getElementType(), 0.0);
  AffineExpr db, dn, dm, dd;
  bindDims(ctx, db, dn, dm, dd);
  using utils::IteratorType;
  return linalg::GenericOp::create(
             b, loc, TypeRange{init.getType()}, ValueRange{x}, ValueRange{init},
             {identityMap(ctx, 4), AffineMap::get(4, 0, {dm, dn, dd}, ctx)},
             {IteratorType::reduction, IteratorType::parallel,
              IteratorType::parallel, IteratorType::parallel},
             [](OpBuilder &nb, Location l, ValueRange a) {
               linalg::YieldOp::create(
                   nb, l, ValueRange{arith::AddFOp::create(nb, l, a[0], a[1])});
             })
      .getResult(0);
}

// txl.rel_attention_grad => recompute P; dV = (P ⊙ M)ᵀ dO; dP = (dO Vᵀ) ⊙ M
// (M: the dropatt mask / (1 - rate), 1 without dropatt);
// dS = scale P (dP - rowsum(P dP)); dRaw = dS shifted back to the unshifted
// positional columns; dQu = dS K, dK = dSᵀ (q + u), dQv = dRaw r,
// dR = sum_b dRawᵀ (q + v): every product a batched BLAS product
struct RelAttentionGradLowering : public OpRewritePattern<RelAttentionGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(RelAttentionGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    Value q = op.getQuery(), k = op.getKey(), v = op.getValue();
    Value r = op.getPosKey(), dOut = op.getDResult();
    double scale = op.getScale().convertToDouble();
    SmallVector<OpFoldResult> qs = getSizes(rewriter, loc, q);
    OpFoldResult klenOfr = getSizes(rewriter, loc, k)[0];

    HeadsFirstOperands ops = getHeadsFirstOperands(
        rewriter, loc, q, op.getRWBias(), op.getRRBias(), k, r);
    Value probs =
        createRelAttentionProbs(rewriter, loc, ops, qs[1], qs[2],
                                op.getMemLen(), op.getSameLength(), scale);
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
    Value dS3 = createSoftmaxGrad(rewriter, loc, p3, dP, scale);
    Value dRaw = unshiftScoreGrad(rewriter, loc, dS3);

    // Content term AC = (q + u) kᵀ.
    Value dQu = toBatchHeads(
        createBatchMatmul(rewriter, loc, dS3, headsFirst(rewriter, loc, k),
                          /*transposeRhs=*/false),
        qs[0]);
    Value dK = createMatmulTransposedLhs(rewriter, loc, dS3, ops.qu3);

    // Positional term raw = (q + v) rᵀ, per (batch, head).
    Value dQv = toBatchHeads(createBatchMatmul(rewriter, loc, dRaw, ops.r3,
                                               /*transposeRhs=*/false),
                             qs[0]);
    Value dR = sumOverBatch(
        rewriter, loc,
        toBatchHeads(createMatmulTransposedLhs(rewriter, loc, dRaw, ops.qv3),
                     klenOfr));

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
  patterns.add<PosEmbLowering, MaskedSoftmaxLowering, SoftmaxGradLowering,
               RelAttentionLowering, RelAttentionGradLowering>(
      patterns.getContext());
}

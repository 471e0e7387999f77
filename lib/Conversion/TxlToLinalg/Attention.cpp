//===- Attention.cpp - Lower positions and attention to linalg ---*- C++ -*-===//
//
// txl.pos_emb (sinusoids of distances klen-1 ... 0), txl.masked_softmax and
// its backward, and the fused txl.rel_attention and its backward op. The
// fused lowering keeps the heads outermost ([n, b, len, d]), so that every
// score product is a batched BLAS product and the positional ones are one
// product per head over all batch columns: the unshifted positional scores
// (q + v) rᵀ are written into a zero-padded buffer whose shifted view is BD
// (the official _rel_shift without its copy) and AC = (q + u) kᵀ is
// accumulated onto that view; the backward shifts dS back to the unshifted
// columns once and takes both positional gradients from BLAS too.
//
//===----------------------------------------------------------------------===//

#include "Builders.h"
#include "txl/Conversion/IndexArithmetic.h"
#include "txl/Conversion/Passes.h"
#include "txl/Conversion/SizeChecks.h"
#include "txl/IR/TxlOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::txl;

/// x [len, b, n, d] (+ bias [n, d]) heads outermost: [n·b, len, d], entry
/// (h·b + c, i, :) = x[i, c, h, :] (+ bias[h, :]). With the heads outermost,
/// the rows of one head over all batch columns, [b·len, d], are contiguous.
static Value headsMajor(OpBuilder &b, Location loc, Value x, Value bias = {}) {
  return headsFirst(b, loc, x, bias, /*headsOutermost=*/true);
}

/// [n·b, len, d] -> [n, b, len, d] for the given sizes.
static Value splitHeads(OpBuilder &b, Location loc, Value x3,
                        OpFoldResult nHead, OpFoldResult batch) {
  SmallVector<OpFoldResult> s = getSizes(b, loc, x3);
  return createExpand(b, loc, x3, {{0, 1}, {2}, {3}},
                      {nHead, batch, s[1], s[2]});
}

/// The inverse of headsMajor: [n·b, len, d] -> [len, b, n, d].
static Value rowsFromHeadsMajor(OpBuilder &b, Location loc, Value x3,
                                OpFoldResult nHead, OpFoldResult batch) {
  return createTranspose(b, loc, splitHeads(b, loc, x3, nHead, batch),
                         {2, 1, 0, 3});
}

/// [n·b, len, c] viewed per head: [n, b·len, c] (the rows of one head over
/// all batch columns; a reshape, no copy).
static Value perHead(OpBuilder &b, Location loc, Value x3, OpFoldResult nHead,
                     OpFoldResult batch) {
  return createCollapse(b, loc, splitHeads(b, loc, x3, nHead, batch),
                        {{0}, {1, 2}, {3}});
}

/// The inverse of perHead: [n, b·len, c] -> [n·b, len, c].
static Value fromPerHead(OpBuilder &b, Location loc, Value xh,
                         OpFoldResult batch, OpFoldResult len) {
  SmallVector<OpFoldResult> s = getSizes(b, loc, xh);
  Value x4 =
      createExpand(b, loc, xh, {{0}, {1, 2}, {3}}, {s[0], batch, len, s[2]});
  return createCollapse(b, loc, x4, {{0, 1}, {2}, {3}});
}

/// The shifted view of a padded positional-score buffer [n·b, qlen,
/// klen + 1]: the [n·b, qlen, klen] tensor that starts `qlen` elements into
/// each (head, batch) block with row stride klen, i.e. entry (i, j) is
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

/// The gradient of the unshifted positional scores raw [n·b, qlen, klen]
/// from the gradient dS of the shifted ones: dRaw[i, m] = dS[i, m + 1 + i -
/// qlen] when that column exists, else 0 (the adjoint of the shifted view;
/// masked entries have dS = 0, so the columns they alias receive nothing).
/// One pass over [n·b, qlen, klen], each row a contiguous run of dS.
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

/// The positional scores of txl.rel_attention before the shift, from qv3 =
/// q + v ([n·b, qlen, d], heads-major) and rh = pos_key per head ([n, klen,
/// d]): raw[h·b + c, i, m] = qv_i · r_m by one product per head over all
/// batch columns ([b·qlen, d] · [klen, d]ᵀ) into columns 1..klen of a
/// zero-filled [n·b, qlen, klen + 1] buffer; returns its shifted view BD
/// [n·b, qlen, klen], BD[i, j] = raw[i, j + qlen - 1 - i]. `qs` holds the
/// scores' n·b and qlen.
static Value
createShiftedPositionalScores(OpBuilder &b, Location loc, Value qv3, Value rh,
                              ArrayRef<OpFoldResult> qs, OpFoldResult klen,
                              OpFoldResult nHead, OpFoldResult batch) {
  Type et = cast<RankedTensorType>(qv3.getType()).getElementType();
  Value padded =
      createFilled(b, loc, {qs[0], qs[1], addFolded(b, loc, klen, 1)}, et, 0.0);
  Value paddedH = perHead(b, loc, padded, nHead, batch);
  OpFoldResult rows = mulFolded(b, loc, batch, qs[1]);
  OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
  Value columns = tensor::ExtractSliceOp::create(
      b, loc, paddedH, {zero, zero, one}, {nHead, rows, klen}, {one, one, one});
  Value raw = createBatchMatmul(b, loc, perHead(b, loc, qv3, nHead, batch), rh,
                                /*transposeRhs=*/true, columns);
  paddedH = tensor::InsertSliceOp::create(b, loc, raw, paddedH,
                                          {zero, zero, one}, {nHead, rows, klen},
                                          {one, one, one});
  padded = fromPerHead(b, loc, paddedH, batch, qs[1]);
  return shiftedView(b, loc, padded, qs[1], klen);
}

/// The unscaled, unmasked scores of txl.rel_attention, [n·b, qlen, klen],
/// from the heads-major operands qu3 = q + u, qv3 = q + v ([n·b, qlen, d]),
/// k3 ([n·b, klen, d]) and rh = pos_key per head ([n, klen, d]): the
/// shifted positional scores BD (createShiftedPositionalScores), onto which
/// AC = qu kᵀ is accumulated (BLAS beta = 1, per (head, batch column)). One
/// score buffer, every score from BLAS, no gather, r never repeated per
/// batch column.
static Value createRelAttentionScores(OpBuilder &b, Location loc, Value qu3,
                                      Value qv3, Value k3, Value rh,
                                      OpFoldResult nHead,
                                      OpFoldResult batch) {
  Value bd =
      createShiftedPositionalScores(b, loc, qv3, rh, getSizes(b, loc, qu3),
                                    getSizes(b, loc, k3)[1], nHead, batch);
  return createBatchMatmul(b, loc, qu3, k3, /*transposeRhs=*/true, bd);
}

/// A linalg.contract of `a` and `b` into `init` with the given maps: the
/// CPU target's BLAS loop nest over operands read in place
/// (lowerContractToBlas in txl-linalg-to-blas).
static Value createContract(OpBuilder &b, Location loc, Value lhs, Value rhs,
                            Value init, ArrayRef<AffineMap> maps) {
  return linalg::ContractOp::create(b, loc, TypeRange{init.getType()},
                                    ValueRange{lhs, rhs}, ValueRange{init},
                                    b.getAffineMapArrayAttr(maps))
      .getResult(0);
}

/// createRelAttentionScores with the key read in place: AC = (q + u) kᵀ is
/// accumulated onto the shifted view by a contraction over d_head that
/// takes k as [klen, b, n, d] (its rows of one (head, batch column) are a
/// strided matrix), so no heads-major copy of k is made.
static Value createRelAttentionScoresStrided(OpBuilder &b, Location loc,
                                             Value qu3, Value qv3, Value k,
                                             Value rh, OpFoldResult nHead,
                                             OpFoldResult batch) {
  Value bd =
      createShiftedPositionalScores(b, loc, qv3, rh, getSizes(b, loc, qu3),
                                    getSizes(b, loc, k)[0], nHead, batch);
  Value view = splitHeads(b, loc, bd, nHead, batch);
  MLIRContext *ctx = b.getContext();
  AffineExpr h, c, i, j, d;
  bindDims(ctx, h, c, i, j, d);
  auto map = [&](ArrayRef<AffineExpr> exprs) {
    return AffineMap::get(5, 0, exprs, ctx);
  };
  Value scores =
      createContract(b, loc, splitHeads(b, loc, qu3, nHead, batch), k, view,
                     {map({h, c, i, d}), map({j, c, h, d}), map({h, c, i, j})});
  return createCollapse(b, loc, scores, {{0, 1}, {2}, {3}});
}

/// The heads-major operands of the fused attention: q + u, q + v ([n·b,
/// qlen, d]), k ([n·b, klen, d]) and pos_key per head, rh [n, klen, d] (a
/// copy of n·klen·d elements).
struct HeadsMajorOperands {
  Value qu3, qv3, k3, rh;
};
static HeadsMajorOperands getHeadsMajorOperands(OpBuilder &b, Location loc,
                                                Value q, Value rWBias,
                                                Value rRBias, Value k,
                                                Value r) {
  return {headsMajor(b, loc, q, rWBias), headsMajor(b, loc, q, rRBias),
          headsMajor(b, loc, k), createTranspose(b, loc, r, {1, 0, 2})};
}

/// The attention probabilities of txl.rel_attention, [n, b, i, j]: the
/// scores of createRelAttentionScores, then the scaled, masked softmax over
/// j (which hides the entries the shifted view aliases).
/// With `logSumExp`, also sets it to each row's log-sum-exp, [n, b, i].
static Value createRelAttentionProbs(OpBuilder &b, Location loc,
                                     const HeadsMajorOperands &ops,
                                     OpFoldResult batch, OpFoldResult nHead,
                                     Value memLen, Value sameLength,
                                     double scale, Value *logSumExp = nullptr) {
  Value scores = createRelAttentionScores(b, loc, ops.qu3, ops.qv3, ops.k3,
                                          ops.rh, nHead, batch);
  scores = splitHeads(b, loc, scores, nHead, batch);
  return createMaskedSoftmax(b, loc, scores,
                             ScoreLayout{/*queryDim=*/2, /*keyDim=*/3}, memLen,
                             sameLength, scale, logSumExp);
}

/// The dropatt of a fused attention op (txl.rel_attention or its backward),
/// when it has one.
template <typename OpTy>
static std::optional<DropoutSite> getDropattSite(OpTy op) {
  std::optional<APFloat> rate = op.getDropatt();
  if (!rate)
    return std::nullopt;
  // The probabilities [n, b, i, j]: batch columns in dimension 1.
  return DropoutSite{
      op.getDropattSeed(),     op.getDropattOffset(),
      op.getDropattTraining(), op.getDropattStreamBase(),
      rate->convertToDouble(), static_cast<int64_t>(*op.getDropattStream()),
      op.getDropattColumn(),
      /*batchDim=*/1};
}

/// Probabilities [n, b, i, j] through dropatt, their counters numbered as
/// those of the decomposed form's [qlen, klen, batch, n_head] scores with
/// batch_dim 2: [batch, qlen, klen, n_head] from the site's column on.
static Value dropProbs(OpBuilder &b, Location loc, Value probs,
                       const std::optional<DropoutSite> &site) {
  if (!site)
    return probs;
  return createDropout(b, loc, probs, *site, {1, 2, 3, 0});
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
// u, k), softmax, bmm(p, v), all with the heads outermost
struct RelAttentionLowering : public OpRewritePattern<RelAttentionOp> {
  RelAttentionLowering(MLIRContext *ctx, bool strided)
      : OpRewritePattern(ctx), strided(strided) {}
  /// ConvertTxlToLinalgPass's strided-attention.
  bool strided;
  LogicalResult matchAndRewrite(RelAttentionOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value q = op.getQuery();
    assertEqualSizes(rewriter, loc, op,
                     relAttentionSizeEqualities(q, op.getKey(), op.getValue(),
                                                op.getPosKey(), op.getRWBias(),
                                                op.getRRBias()));
    SmallVector<OpFoldResult> qs = getSizes(rewriter, loc, q);
    Value lse;
    Value out;
    if (strided) {
      // k and v read in place (linalg.contract), the output written in
      // its [qlen, b, n, d] layout: no heads-major copy of k, v or out.
      HeadsMajorOperands ops = {
          headsMajor(rewriter, loc, q, op.getRWBias()),
          headsMajor(rewriter, loc, q, op.getRRBias()), Value(),
          createTranspose(rewriter, loc, op.getPosKey(), {1, 0, 2})};
      Value scores = createRelAttentionScoresStrided(
          rewriter, loc, ops.qu3, ops.qv3, op.getKey(), ops.rh, qs[2], qs[1]);
      Value probs = createMaskedSoftmax(
          rewriter, loc, splitHeads(rewriter, loc, scores, qs[2], qs[1]),
          ScoreLayout{/*queryDim=*/2, /*keyDim=*/3}, op.getMemLen(),
          op.getSameLength(), op.getScale().convertToDouble(),
          op.getLse() ? &lse : nullptr);
      probs = dropProbs(rewriter, loc, probs, getDropattSite(op));
      MLIRContext *ctx = rewriter.getContext();
      AffineExpr h, c, i, d, j;
      bindDims(ctx, h, c, i, d, j);
      auto map = [&](ArrayRef<AffineExpr> exprs) {
        return AffineMap::get(5, 0, exprs, ctx);
      };
      Type et = cast<RankedTensorType>(q.getType()).getElementType();
      out = createContract(
          rewriter, loc, probs, op.getValue(),
          createFilled(rewriter, loc, qs, et, 0.0),
          {map({h, c, i, j}), map({j, c, h, d}), map({i, c, h, d})});
    } else {
      HeadsMajorOperands ops =
          getHeadsMajorOperands(rewriter, loc, q, op.getRWBias(),
                                op.getRRBias(), op.getKey(), op.getPosKey());
      Value probs = createRelAttentionProbs(
          rewriter, loc, ops, qs[1], qs[2], op.getMemLen(), op.getSameLength(),
          op.getScale().convertToDouble(), op.getLse() ? &lse : nullptr);
      probs = dropProbs(rewriter, loc, probs, getDropattSite(op));
      out = createBatchMatmul(
          rewriter, loc,
          createCollapse(rewriter, loc, probs, {{0, 1}, {2}, {3}}),
          headsMajor(rewriter, loc, op.getValue()), /*transposeRhs=*/false);
      out = rowsFromHeadsMajor(rewriter, loc, out, qs[2], qs[1]);
    }
    SmallVector<Value> results = {
        castTo(rewriter, loc, out, op.getResult().getType())};
    // [n, b, i] -> [b, n, i].
    if (Value saved = op.getLse())
      results.push_back(castTo(rewriter, loc,
                               createTranspose(rewriter, loc, lse, {1, 0, 2}),
                               saved.getType()));
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// x [n, b, i, d] summed over b and i: [n, d].
static Value sumOverBatchAndQuery(OpBuilder &b, Location loc, Value x) {
  MLIRContext *ctx = b.getContext();
  SmallVector<OpFoldResult> sizes = getSizes(b, loc, x);
  auto type = cast<RankedTensorType>(x.getType());
  Value init =
      createFilled(b, loc, {sizes[0], sizes[3]}, type.getElementType(), 0.0);
  AffineExpr dn, db, di, dd;
  bindDims(ctx, dn, db, di, dd);
  using utils::IteratorType;
  return linalg::GenericOp::create(
             b, loc, TypeRange{init.getType()}, ValueRange{x}, ValueRange{init},
             {identityMap(ctx, 4), AffineMap::get(4, 0, {dn, dd}, ctx)},
             {IteratorType::parallel, IteratorType::reduction,
              IteratorType::reduction, IteratorType::parallel},
             [](OpBuilder &nb, Location l, ValueRange a) {
               linalg::YieldOp::create(
                   nb, l, ValueRange{arith::AddFOp::create(nb, l, a[0], a[1])});
             })
      .getResult(0);
}

// txl.rel_attention_grad => (the saved lse and output, if any, unused:
// P is recomputed whole) recompute P; dV = (P ⊙ M)ᵀ dO; dP = (dO Vᵀ) ⊙ M
// (M: the dropatt mask / (1 - rate), 1 without dropatt);
// dS = scale P (dP - rowsum(P dP)); dRaw = dS shifted back to the unshifted
// positional columns; dQu = dS K, dK = dSᵀ (q + u), dQv = dRaw r,
// dR = dRawᵀ (q + v): every product a batched BLAS product, the positional
// ones one per head over all batch columns (dR's sum over the batch columns
// is the product's own reduction)
struct RelAttentionGradLowering : public OpRewritePattern<RelAttentionGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(RelAttentionGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = getContext();
    Value q = op.getQuery(), k = op.getKey(), v = op.getValue();
    Value r = op.getPosKey(), dOut = op.getDResult();
    double scale = op.getScale().convertToDouble();
    assertEqualSizes(rewriter, loc, op,
                     relAttentionGradSizeEqualities(
                         q, k, v, r, op.getRWBias(), op.getRRBias(), dOut,
                         op.getLse(), op.getOutput()));
    SmallVector<OpFoldResult> qs = getSizes(rewriter, loc, q);
    OpFoldResult batch = qs[1], nHead = qs[2];

    HeadsMajorOperands ops = getHeadsMajorOperands(
        rewriter, loc, q, op.getRWBias(), op.getRRBias(), k, r);
    Value probs =
        createRelAttentionProbs(rewriter, loc, ops, batch, nHead,
                                op.getMemLen(), op.getSameLength(), scale);
    Value p3 = createCollapse(rewriter, loc, probs, {{0, 1}, {2}, {3}});
    Value dO3 = headsMajor(rewriter, loc, dOut);
    auto toRowsFirst = [&](Value x3, Type type) {
      return castTo(rewriter, loc,
                    rowsFromHeadsMajor(rewriter, loc, x3, nHead, batch), type);
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
                                 headsMajor(rewriter, loc, v),
                                 /*transposeRhs=*/true);
    if (dropatt) {
      Value dP4 = splitHeads(rewriter, loc, dP, nHead, batch);
      dP = createCollapse(rewriter, loc, dropProbs(rewriter, loc, dP4, dropatt),
                          {{0, 1}, {2}, {3}});
    }
    Value dS3 = createSoftmaxGrad(rewriter, loc, p3, dP, scale);
    Value dRaw = unshiftScoreGrad(rewriter, loc, dS3);

    // Content term AC = (q + u) kᵀ, per (head, batch column).
    Value dQu = createBatchMatmul(rewriter, loc, dS3, ops.k3,
                                  /*transposeRhs=*/false);
    Value dK = createMatmulTransposedLhs(rewriter, loc, dS3, ops.qu3);

    // Positional term raw = (q + v) rᵀ, per head over all batch columns.
    Value dRawH = perHead(rewriter, loc, dRaw, nHead, batch);
    Value dQv = fromPerHead(
        rewriter, loc,
        createBatchMatmul(rewriter, loc, dRawH, ops.rh, /*transposeRhs=*/false),
        batch, qs[0]);
    Value dRh = createMatmulTransposedLhs(
        rewriter, loc, dRawH, perHead(rewriter, loc, ops.qv3, nHead, batch));
    Value dR = createTranspose(rewriter, loc, dRh, {1, 0, 2});

    AffineMap id3 = identityMap(ctx, 3);
    Value dQ = createPointwise(
        rewriter, loc, dQu, ValueRange{dQu, dQv}, {id3, id3},
        [](OpBuilder &b, Location l, ValueRange a) -> Value {
          return arith::AddFOp::create(b, l, a[0], a[1]);
        });
    Value bias = op.getRWBias();
    auto biasGrad = [&](Value x3) {
      return castTo(
          rewriter, loc,
          sumOverBatchAndQuery(rewriter, loc,
                               splitHeads(rewriter, loc, x3, nHead, batch)),
          bias.getType());
    };
    rewriter.replaceOp(op, {toRowsFirst(dQ, q.getType()),
                            toRowsFirst(dK, k.getType()),
                            toRowsFirst(dV, v.getType()),
                            castTo(rewriter, loc, dR, r.getType()),
                            biasGrad(dQu), biasGrad(dQv)});
    return success();
  }
};

} // namespace

void mlir::txl::populateTxlAttentionToLinalgPatterns(
    RewritePatternSet &patterns, bool stridedAttention) {
  patterns.add<PosEmbLowering, MaskedSoftmaxLowering, SoftmaxGradLowering,
               RelAttentionGradLowering>(patterns.getContext());
  patterns.add<RelAttentionLowering>(patterns.getContext(), stridedAttention);
}

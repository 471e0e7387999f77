//===- Adjoints.cpp - Reverse-mode rules of the txl ops -----------*- C++ -*-===//
//
// One external model of AdjointOpInterface per differentiable op. A rule
// receives the gradient of each result (null when none reaches it) and
// returns one gradient per operand (null for integers, indices and values the
// op treats as constants). Products, normalization, losses and attention
// (fused, and each op of the four-term form) get dedicated backward ops (TxlAdjointOps.td) that the lowering
// turns into BLAS products and fused loops; reshapes and slices are undone
// with their tensor-dialect inverses.
//
//===----------------------------------------------------------------------===//

#include "txl/Autodiff/Adjoints.h"
#include "txl/IR/TxlOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::txl;

Value mlir::txl::createFilledLike(OpBuilder &b, Location loc, Value like,
                                  Value value) {
  auto type = cast<RankedTensorType>(like.getType());
  SmallVector<Value> dynamicSizes;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (type.isDynamicDim(d))
      dynamicSizes.push_back(tensor::DimOp::create(b, loc, like, d));
  Value empty = tensor::EmptyOp::create(b, loc, type, dynamicSizes);
  return linalg::FillOp::create(b, loc, ValueRange{value}, ValueRange{empty})
      .getResult(0);
}

Value mlir::txl::createZerosLike(OpBuilder &b, Location loc, Value like) {
  Type elementType = cast<RankedTensorType>(like.getType()).getElementType();
  Value zero =
      arith::ConstantOp::create(b, loc, b.getFloatAttr(elementType, 0.0));
  return createFilledLike(b, loc, like, zero);
}

namespace {

/// CRTP base: `Rule::adjoint(Op, OpBuilder &, ValueRange)` does the work;
/// rules whose ops have one result are only called when it has a gradient.
template <typename Rule, typename Op>
struct Adjoint : public AdjointOpInterface::ExternalModel<Rule, Op> {
  SmallVector<Value> buildAdjoint(Operation *op, OpBuilder &b,
                                  ValueRange resultGrads) const {
    if (llvm::all_of(resultGrads, [](Value g) { return !g; }))
      return SmallVector<Value>(op->getNumOperands());
    return Rule::adjoint(cast<Op>(op), b, resultGrads);
  }
};

// d(lhs + rhs): the gradient flows unchanged to both operands.
struct AddAdjoint : Adjoint<AddAdjoint, AddOp> {
  static SmallVector<Value> adjoint(AddOp, OpBuilder &, ValueRange g) {
    return {g[0], g[0]};
  }
};

// d(factor * x) = factor * dy.
struct ScaleAdjoint : Adjoint<ScaleAdjoint, ScaleOp> {
  static SmallVector<Value> adjoint(ScaleOp op, OpBuilder &b, ValueRange g) {
    return {ScaleOp::create(b, op.getLoc(), g[0], op.getFactorAttr())};
  }
};

// d(pw_i · Σ_k w_{first+k} x_k) / dx_k = pw_i · w_{first+k}: the same mix
// of the result's gradient alone; the weights are constants.
struct LossMixAdjoint : Adjoint<LossMixAdjoint, LossMixOp> {
  static SmallVector<Value> adjoint(LossMixOp op, OpBuilder &b, ValueRange g) {
    SmallVector<Value> grads = {Value(), Value()};
    for (auto [k, input] : llvm::enumerate(op.getInputs()))
      grads.push_back(LossMixOp::create(
          b, op.getLoc(), input.getType(), op.getWeights(),
          op.getPositionWeights(), ValueRange{g[0]},
          b.getI64IntegerAttr(op.getFirst() + static_cast<int64_t>(k))));
    return grads;
  }
};

// Paper §3.2: the memory is a constant for the backward pass.
struct StopGradientAdjoint : Adjoint<StopGradientAdjoint, StopGradientOp> {
  static SmallVector<Value> adjoint(StopGradientOp, OpBuilder &, ValueRange) {
    return {Value()};
  }
};

// Dropout is linear in x: dx = dropout(dy) with the same seed, offset,
// stream, columns and rate, i.e. dy ⊙ mask / (1 - rate), the mask
// recomputed from its counters instead of stored. Seed, offset, training,
// the stream base and the column get no gradient.
struct DropoutAdjoint : Adjoint<DropoutAdjoint, DropoutOp> {
  static SmallVector<Value> adjoint(DropoutOp op, OpBuilder &b, ValueRange g) {
    SmallVector<Value> grads(op->getNumOperands());
    grads[0] = DropoutOp::create(
        b, op.getLoc(), g[0], op.getSeed(), op.getOffset(), op.getTraining(),
        op.getStreamBase(), op.getColumn(), op.getRateAttr(),
        op.getStreamAttr(), op.getBatchDimAttr());
    return grads;
  }
};

struct ReluAdjoint : Adjoint<ReluAdjoint, ReluOp> {
  static SmallVector<Value> adjoint(ReluOp op, OpBuilder &b, ValueRange g) {
    return {ReluGradOp::create(b, op.getLoc(), op.getType(), g[0],
                               op.getResult())};
  }
};

// y = x Wᵀ + b: dx = dy W, dW = dyᵀ x (over all rows), db = sum_rows dy.
struct LinearAdjoint : Adjoint<LinearAdjoint, LinearOp> {
  static SmallVector<Value> adjoint(LinearOp op, OpBuilder &b, ValueRange g) {
    Location loc = op.getLoc();
    Value dx = LinearInputGradOp::create(b, loc, op.getInput().getType(), g[0],
                                         op.getWeight());
    Value dw = LinearWeightGradOp::create(b, loc, op.getWeight().getType(),
                                          g[0], op.getInput());
    SmallVector<Value> grads = {dx, dw};
    if (Value bias = op.getBias())
      grads.push_back(SumLeadingOp::create(b, loc, bias.getType(), g[0]));
    return grads;
  }
};

struct LayerNormAdjoint : Adjoint<LayerNormAdjoint, LayerNormOp> {
  static SmallVector<Value> adjoint(LayerNormOp op, OpBuilder &b,
                                    ValueRange g) {
    auto grad = LayerNormGradOp::create(
        b, op.getLoc(), op.getInput().getType(), op.getWeight().getType(),
        op.getWeight().getType(), g[0], op.getInput(), op.getWeight(),
        op.getEpsilonAttr());
    return {grad.getDInput(), grad.getDWeight(), grad.getDBias()};
  }
};

struct EmbeddingAdjoint : Adjoint<EmbeddingAdjoint, EmbeddingOp> {
  static SmallVector<Value> adjoint(EmbeddingOp op, OpBuilder &b,
                                    ValueRange g) {
    return {EmbeddingGradOp::create(b, op.getLoc(), op.getTable().getType(),
                                    g[0], op.getTokens(), /*init=*/Value()),
            Value()};
  }
};

struct AdaptiveEmbeddingAdjoint
    : Adjoint<AdaptiveEmbeddingAdjoint, AdaptiveEmbeddingOp> {
  static SmallVector<Value> adjoint(AdaptiveEmbeddingOp op, OpBuilder &b,
                                    ValueRange g) {
    auto grad = AdaptiveEmbeddingGradOp::create(
        b, op.getLoc(), g[0], op.getTokens(), op.getTables(), op.getProjs(),
        op.getCutoffEndsAttr());
    SmallVector<Value> grads = {Value()};
    llvm::append_range(grads, grad.getGrads());
    return grads;
  }
};

struct NllAdjoint : Adjoint<NllAdjoint, NllOp> {
  static SmallVector<Value> adjoint(NllOp op, OpBuilder &b, ValueRange g) {
    return {NllGradOp::create(b, op.getLoc(), op.getLogits().getType(), g[0],
                              op.getLogits(), op.getTarget()),
            Value()};
  }
};

struct AdaptiveNllAdjoint : Adjoint<AdaptiveNllAdjoint, AdaptiveNllOp> {
  static SmallVector<Value> adjoint(AdaptiveNllOp op, OpBuilder &b,
                                    ValueRange g) {
    auto grad = AdaptiveNllGradOp::create(
        b, op.getLoc(), g[0], op.getHidden(), op.getTarget(), op.getWeights(),
        op.getBiases(), op.getProjs(), op.getClusterWeight(),
        op.getClusterBias(), op.getCutoffEndsAttr());
    // Operand order: hidden, target, weights, biases, projs, clusters.
    SmallVector<Value> grads(grad.getGrads());
    grads.insert(grads.begin() + 1, Value());
    return grads;
  }
};

// cat = [memory; hidden] along rows: each gets its rows of the gradient.
struct ConcatMemAdjoint : Adjoint<ConcatMemAdjoint, ConcatMemOp> {
  static SmallVector<Value> adjoint(ConcatMemOp op, OpBuilder &b,
                                    ValueRange g) {
    Location loc = op.getLoc();
    Value mlen = tensor::DimOp::create(b, loc, op.getMemory(), 0);
    auto rows = [&](Value like, OpFoldResult offset) -> Value {
      SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, like);
      SmallVector<OpFoldResult> offsets(3, b.getIndexAttr(0));
      offsets[0] = offset;
      SmallVector<OpFoldResult> strides(3, b.getIndexAttr(1));
      return tensor::ExtractSliceOp::create(
          b, loc, cast<RankedTensorType>(like.getType()), g[0], offsets, sizes,
          strides);
    };
    return {rows(op.getMemory(), b.getIndexAttr(0)), rows(op.getHidden(), mlen)};
  }
};

// The last rows of the input: their gradient, zeros above.
struct TakeLastAdjoint : Adjoint<TakeLastAdjoint, TakeLastOp> {
  static SmallVector<Value> adjoint(TakeLastOp op, OpBuilder &b,
                                    ValueRange g) {
    Location loc = op.getLoc();
    Value input = op.getInput();
    Value zeros = createZerosLike(b, loc, input);
    Value first = arith::SubIOp::create(
        b, loc, tensor::DimOp::create(b, loc, input, 0),
        tensor::DimOp::create(b, loc, g[0], 0));
    SmallVector<OpFoldResult> offsets(3, b.getIndexAttr(0));
    offsets[0] = first;
    SmallVector<OpFoldResult> strides(3, b.getIndexAttr(1));
    Value grad = tensor::InsertSliceOp::create(
        b, loc, g[0], zeros, offsets, tensor::getMixedSizes(b, loc, g[0]),
        strides);
    return {grad, Value()};
  }
};

// The sinusoids depend only on the inv_freq buffer, which is not trained.
struct PosEmbAdjoint : Adjoint<PosEmbAdjoint, PosEmbOp> {
  static SmallVector<Value> adjoint(PosEmbOp, OpBuilder &, ValueRange) {
    return {Value(), Value(), Value()};
  }
};

struct BroadcastHeadBiasAdjoint
    : Adjoint<BroadcastHeadBiasAdjoint, BroadcastHeadBiasOp> {
  static SmallVector<Value> adjoint(BroadcastHeadBiasOp op, OpBuilder &b,
                                    ValueRange g) {
    return {SumLeadingOp::create(b, op.getLoc(), op.getBias().getType(), g[0]),
            Value()};
  }
};

// The four-term form (--fuse-attention=false): one backward op per forward
// op, each lowered to BLAS products or one gather.
struct AttnScoreAdjoint : Adjoint<AttnScoreAdjoint, AttnScoreOp> {
  static SmallVector<Value> adjoint(AttnScoreOp op, OpBuilder &b,
                                    ValueRange g) {
    auto grad = AttnScoreGradOp::create(b, op.getLoc(), g[0], op.getQuery(),
                                        op.getKey());
    return {grad.getDQuery(), grad.getDKey()};
  }
};

struct RelShiftAdjoint : Adjoint<RelShiftAdjoint, RelShiftOp> {
  static SmallVector<Value> adjoint(RelShiftOp op, OpBuilder &b, ValueRange g) {
    return {RelShiftGradOp::create(b, op.getLoc(), g[0])};
  }
};

// The mask shows in the forward result (probability 0), so the backward
// needs only the probabilities; mem_len and same_length get none.
struct MaskedSoftmaxAdjoint : Adjoint<MaskedSoftmaxAdjoint, MaskedSoftmaxOp> {
  static SmallVector<Value> adjoint(MaskedSoftmaxOp op, OpBuilder &b,
                                    ValueRange g) {
    return {SoftmaxGradOp::create(b, op.getLoc(), g[0], op.getResult(),
                                  op.getScaleAttr()),
            Value(), Value()};
  }
};

struct AttnApplyAdjoint : Adjoint<AttnApplyAdjoint, AttnApplyOp> {
  static SmallVector<Value> adjoint(AttnApplyOp op, OpBuilder &b,
                                    ValueRange g) {
    auto grad = AttnApplyGradOp::create(b, op.getLoc(), g[0], op.getProbs(),
                                        op.getValue());
    return {grad.getDProbs(), grad.getDValue()};
  }
};

struct RelAttentionAdjoint : Adjoint<RelAttentionAdjoint, RelAttentionOp> {
  static SmallVector<Value> adjoint(RelAttentionOp op, OpBuilder &b,
                                    ValueRange g) {
    auto grad = RelAttentionGradOp::create(
        b, op.getLoc(), g[0], op.getQuery(), op.getKey(), op.getValue(),
        op.getPosKey(), op.getRWBias(), op.getRRBias(), op.getMemLen(),
        op.getSameLength(), op.getDropattSeed(), op.getDropattOffset(),
        op.getDropattTraining(), op.getDropattStreamBase(),
        op.getDropattColumn(),
        // The forward's statistics, when it saves them
        // (txl-save-attention-stats).
        op.getLse(), op.getLse() ? op.getResult() : Value(), op.getScaleAttr(),
        op.getDropattAttr(), op.getDropattStreamAttr());
    // mem_len, same_length and the dropatt operands get none.
    SmallVector<Value> grads(op->getNumOperands());
    llvm::copy(ValueRange{grad.getDQuery(), grad.getDKey(), grad.getDValue(),
                          grad.getDPosKey(), grad.getDRWBias(),
                          grad.getDRRBias()},
               grads.begin());
    return grads;
  }
};

// A slice (rank-reducing or not): its gradient in place, zeros elsewhere.
struct ExtractSliceAdjoint
    : Adjoint<ExtractSliceAdjoint, tensor::ExtractSliceOp> {
  static SmallVector<Value> adjoint(tensor::ExtractSliceOp op, OpBuilder &b,
                                    ValueRange g) {
    Value zeros = createZerosLike(b, op.getLoc(), op.getSource());
    Value grad = tensor::InsertSliceOp::create(
        b, op.getLoc(), g[0], zeros, op.getMixedOffsets(), op.getMixedSizes(),
        op.getMixedStrides());
    SmallVector<Value> grads(op->getNumOperands());
    grads[0] = grad;
    return grads;
  }
};

struct ExpandShapeAdjoint
    : Adjoint<ExpandShapeAdjoint, tensor::ExpandShapeOp> {
  static SmallVector<Value> adjoint(tensor::ExpandShapeOp op, OpBuilder &b,
                                    ValueRange g) {
    SmallVector<Value> grads(op->getNumOperands());
    grads[0] = tensor::CollapseShapeOp::create(
        b, op.getLoc(), op.getSrcType(), g[0], op.getReassociationIndices());
    return grads;
  }
};

struct CollapseShapeAdjoint
    : Adjoint<CollapseShapeAdjoint, tensor::CollapseShapeOp> {
  static SmallVector<Value> adjoint(tensor::CollapseShapeOp op, OpBuilder &b,
                                    ValueRange g) {
    Value src = op.getSrc();
    return {tensor::ExpandShapeOp::create(
        b, op.getLoc(), op.getSrcType(), g[0], op.getReassociationIndices(),
        tensor::getMixedSizes(b, op.getLoc(), src))};
  }
};

} // namespace

void mlir::txl::registerAdjointInterfaceExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, TxlDialect *) {
    AddOp::attachInterface<AddAdjoint>(*ctx);
    ScaleOp::attachInterface<ScaleAdjoint>(*ctx);
    StopGradientOp::attachInterface<StopGradientAdjoint>(*ctx);
    LossMixOp::attachInterface<LossMixAdjoint>(*ctx);
    DropoutOp::attachInterface<DropoutAdjoint>(*ctx);
    ReluOp::attachInterface<ReluAdjoint>(*ctx);
    LinearOp::attachInterface<LinearAdjoint>(*ctx);
    LayerNormOp::attachInterface<LayerNormAdjoint>(*ctx);
    EmbeddingOp::attachInterface<EmbeddingAdjoint>(*ctx);
    AdaptiveEmbeddingOp::attachInterface<AdaptiveEmbeddingAdjoint>(*ctx);
    NllOp::attachInterface<NllAdjoint>(*ctx);
    AdaptiveNllOp::attachInterface<AdaptiveNllAdjoint>(*ctx);
    ConcatMemOp::attachInterface<ConcatMemAdjoint>(*ctx);
    TakeLastOp::attachInterface<TakeLastAdjoint>(*ctx);
    PosEmbOp::attachInterface<PosEmbAdjoint>(*ctx);
    BroadcastHeadBiasOp::attachInterface<BroadcastHeadBiasAdjoint>(*ctx);
    AttnScoreOp::attachInterface<AttnScoreAdjoint>(*ctx);
    RelShiftOp::attachInterface<RelShiftAdjoint>(*ctx);
    MaskedSoftmaxOp::attachInterface<MaskedSoftmaxAdjoint>(*ctx);
    AttnApplyOp::attachInterface<AttnApplyAdjoint>(*ctx);
    RelAttentionOp::attachInterface<RelAttentionAdjoint>(*ctx);
  });
  registry.addExtension(+[](MLIRContext *ctx, tensor::TensorDialect *) {
    tensor::ExtractSliceOp::attachInterface<ExtractSliceAdjoint>(*ctx);
    tensor::ExpandShapeOp::attachInterface<ExpandShapeAdjoint>(*ctx);
    tensor::CollapseShapeOp::attachInterface<CollapseShapeAdjoint>(*ctx);
  });
}

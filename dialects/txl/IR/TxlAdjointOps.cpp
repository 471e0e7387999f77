//===- TxlAdjointOps.cpp - Verifiers of the training ops ---------*- C++ -*-===//
//
// Backward ops (TxlAdjointOps.td) and optimizer updates (TxlOptimizerOps.td).
// As for the forward ops: static parts of shapes must agree, dynamic ones
// are accepted. Result types of the variadic adjoints are the types of the
// forward operands they differentiate.
//
//===----------------------------------------------------------------------===//

#include "txl/IR/TxlOps.h"

#include "ShapeChecks.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::txl;

/// Leading (all but the last) dimensions of `a` and `b` agree.
static bool sameLeading(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i + 1 < a.size(); ++i)
    if (!compatible(a[i], b[i]))
      return false;
  return true;
}

LogicalResult LinearInputGradOp::verify() {
  ArrayRef<int64_t> dy = shapeOf(getDResult()), w = shapeOf(getWeight());
  ArrayRef<int64_t> dx = shapeOf(getDInput());
  if (!sameLeading(dy, dx))
    return emitOpError("d_result and d_input must have the same rank and "
                       "leading dimensions");
  if (!compatible(dy.back(), w[0]) || !compatible(dx.back(), w[1]))
    return emitOpError("weight must be [d_result features, d_input features]");
  return success();
}

LogicalResult LinearWeightGradOp::verify() {
  ArrayRef<int64_t> dy = shapeOf(getDResult()), x = shapeOf(getInput());
  ArrayRef<int64_t> dw = shapeOf(getDWeight());
  if (!sameLeading(dy, x))
    return emitOpError("d_result and input must have the same rank and "
                       "leading dimensions");
  if (!compatible(dw[0], dy.back()) || !compatible(dw[1], x.back()))
    return emitOpError("d_weight must be [d_result features, input features]");
  return success();
}

LogicalResult SumLeadingOp::verify() {
  ArrayRef<int64_t> in = shapeOf(getInput()), out = shapeOf(getResult());
  if (out.empty() || out.size() >= in.size())
    return emitOpError("result rank must be at least 1 and below the input "
                       "rank");
  size_t lead = in.size() - out.size();
  for (size_t i = 0; i < out.size(); ++i)
    if (!compatible(in[lead + i], out[i]))
      return emitOpError("result dimensions must match the trailing input "
                         "dimensions");
  return success();
}

LogicalResult LayerNormGradOp::verify() {
  int64_t features = shapeOf(getInput()).back();
  if (ShapedType::isDynamic(features))
    return emitOpError("the normalized (last) dimension must be static");
  if (!compatible(shapeOf(getWeight())[0], features))
    return emitOpError("weight must have the size of the last input dimension");
  if (!(getEpsilon().convertToFloat() > 0.0f))
    return emitOpError("epsilon must be positive");
  return success();
}

LogicalResult EmbeddingGradOp::verify() {
  ArrayRef<int64_t> dy = shapeOf(getDResult()), tokens = shapeOf(getTokens());
  ArrayRef<int64_t> table = shapeOf(getDTable());
  if (!compatible(dy[0], tokens[0]) || !compatible(dy[1], tokens[1]))
    return emitOpError("d_result dimensions 0 and 1 must match the tokens");
  if (ShapedType::isDynamic(table[0]))
    return emitOpError("d_table must have a static number of rows (n_token)");
  if (!compatible(table[1], dy[2]))
    return emitOpError("d_table columns must be the embedding size ") << dy[2];
  return success();
}

LogicalResult AdaptiveEmbeddingGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location>, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  for (Value v : adaptor.getTables())
    types.push_back(v.getType());
  for (Value v : adaptor.getProjs())
    types.push_back(v.getType());
  return success();
}

LogicalResult AdaptiveEmbeddingGradOp::verify() {
  ArrayRef<int64_t> ends = getCutoffEnds();
  size_t clusters = ends.size() < 2 ? 0 : ends.size() - 1;
  if (clusters == 0 || getTables().size() != clusters ||
      getProjs().size() != clusters)
    return emitOpError("needs one table and one projection per cluster (")
           << clusters << ")";
  int64_t dModel = shapeOf(getDResult())[2];
  for (size_t i = 0; i < clusters; ++i) {
    ArrayRef<int64_t> t = shapeOf(getTables()[i]), p = shapeOf(getProjs()[i]);
    if (!compatible(t[0], ends[i + 1] - ends[i]) || !compatible(p[0], dModel) ||
        !compatible(p[1], t[1]))
      return emitOpError("cluster ") << i << ": table must be ["
             << ends[i + 1] - ends[i] << ", d_i] and projection [" << dModel
             << ", d_i]";
  }
  return success();
}

LogicalResult LinearNllGradOp::verify() {
  if (failed(verifyOutputLayer(*this, getInput(), getWeight(), Value(),
                               getTarget())) ||
      failed(verifySavedLogits(*this, getWeight(), getLse(), getLogits(),
                               getBlock())))
    return failure();
  ArrayRef<int64_t> g = shapeOf(getDResult()), h = shapeOf(getInput());
  if (!compatible(g[0], h[0]) || !compatible(g[1], h[1]))
    return emitOpError("d_result must be the input's [qlen, batch]");
  if (getDInput().getType() != getInput().getType())
    return emitOpError("d_input must have the input's type");
  if (getDWeight().getType() != getWeight().getType())
    return emitOpError("d_weight must have the weight's type");
  if (!compatible(shapeOf(getDBias())[0], shapeOf(getWeight())[0]))
    return emitOpError("d_bias must be [n_token]");
  return success();
}

LogicalResult NllGradOp::verify() {
  ArrayRef<int64_t> dy = shapeOf(getDResult()), logits = shapeOf(getLogits());
  ArrayRef<int64_t> target = shapeOf(getTarget());
  for (int i = 0; i < 2; ++i)
    if (!compatible(dy[i], logits[i]) || !compatible(target[i], logits[i]))
      return emitOpError("d_result, logits and target must agree on "
                         "[qlen, batch]");
  return success();
}

LogicalResult AdaptiveNllGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location>, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  types.push_back(adaptor.getHidden().getType());
  for (ValueRange group :
       {adaptor.getWeights(), adaptor.getBiases(), adaptor.getProjs()})
    for (Value v : group)
      types.push_back(v.getType());
  if (Value cw = adaptor.getClusterWeight())
    types.push_back(cw.getType());
  if (Value cb = adaptor.getClusterBias())
    types.push_back(cb.getType());
  return success();
}

LogicalResult AdaptiveNllGradOp::verify() {
  ArrayRef<int64_t> ends = getCutoffEnds();
  int64_t tails = static_cast<int64_t>(ends.size()) - 2;
  if (tails < 0)
    return emitOpError("cutoff_ends needs at least [0, n_token]");
  size_t clusters = static_cast<size_t>(tails) + 1;
  size_t w = getWeights().size();
  if ((w != 1 && w != clusters) || getBiases().size() != w)
    return emitOpError("needs one weight and bias, or one per cluster (")
           << clusters << ")";
  if (!getProjs().empty() && getProjs().size() != clusters)
    return emitOpError("needs no projection or one per cluster (")
           << clusters << ")";
  if (static_cast<bool>(getClusterWeight()) != (tails > 0))
    return emitOpError("cluster_weight and cluster_bias are needed iff there "
                       "are tail clusters");
  ArrayRef<int64_t> dy = shapeOf(getDResult()), h = shapeOf(getHidden());
  ArrayRef<int64_t> target = shapeOf(getTarget());
  for (int i = 0; i < 2; ++i)
    if (!compatible(dy[i], h[i]) || !compatible(target[i], h[i]))
      return emitOpError("d_result, hidden and target must agree on "
                         "[qlen, batch]");
  return success();
}

LogicalResult RelAttentionGradOp::verify() {
  ArrayRef<int64_t> q = shapeOf(getQuery()), k = shapeOf(getKey());
  ArrayRef<int64_t> v = shapeOf(getValue()), r = shapeOf(getPosKey());
  ArrayRef<int64_t> u = shapeOf(getRWBias()), vb = shapeOf(getRRBias());
  for (int d : {1, 2, 3})
    if (!compatible(q[d], k[d]) || !compatible(q[d], v[d]))
      return emitOpError("query, key and value must agree on batch, n_head "
                         "and d_head");
  if (!compatible(k[0], v[0]) || !compatible(k[0], r[0]))
    return emitOpError("key, value and pos_key must have klen rows");
  if (!compatible(r[1], q[2]) || !compatible(r[2], q[3]) ||
      !compatible(u[0], q[2]) || !compatible(u[1], q[3]) ||
      !compatible(vb[0], q[2]) || !compatible(vb[1], q[3]))
    return emitOpError("pos_key and the biases must be [n_head, d_head] per "
                       "row");
  if (static_cast<bool>(getLse()) != static_cast<bool>(getOutput()))
    return emitOpError("lse and output are saved together or not at all");
  if (Value lse = getLse()) {
    if (failed(verifyRowLogSumExp(*this, lse, getQuery())))
      return failure();
    if (getOutput().getType() != getQuery().getType())
      return emitOpError("the saved output must have the query type");
  }
  return verifyDropattGroup(*this, getDropattOperands(), getDropatt(),
                            getDropattStream());
}

SmallVector<Value> RelAttentionGradOp::getDropattOperands() {
  return dropattOperandsOf(*this);
}

LogicalResult AttnScoreGradOp::verify() {
  return verifyScoreShapes(*this, getQuery(), getKey(), getDResult(),
                           "d_result");
}

LogicalResult AttnApplyGradOp::verify() {
  return verifyApplyShapes(*this, getProbs(), getValue(), getDResult(),
                           "d_result");
}

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

/// PyTorch rejects these hyper-parameters too (torch.optim constructors).
static LogicalResult checkUnitInterval(Operation *op, StringRef name,
                                       APFloat value) {
  double v = value.convertToDouble();
  if (!(v >= 0.0 && v < 1.0))
    return op->emitOpError(name) << " must be in [0, 1), got " << v;
  return success();
}

LogicalResult AdamUpdateOp::verify() {
  if (failed(checkUnitInterval(*this, "beta1", getBeta1())) ||
      failed(checkUnitInterval(*this, "beta2", getBeta2())))
    return failure();
  if (!(getEps().convertToDouble() > 0.0))
    return emitOpError("eps must be positive");
  return success();
}

LogicalResult SgdUpdateOp::verify() {
  return checkUnitInterval(*this, "momentum", getMomentum());
}

LogicalResult AdagradUpdateOp::verify() {
  if (!(getEps().convertToDouble() > 0.0))
    return emitOpError("eps must be positive");
  return success();
}

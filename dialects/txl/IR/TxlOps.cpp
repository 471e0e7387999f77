//===- TxlOps.cpp - txl dialect operations and verifiers ---------*- C++ -*-===//
//
// Verifiers check what the type constraints cannot: that the static parts of
// the shapes agree. Dynamic dimensions (qlen, mlen, klen, batch) are accepted
// against anything; the runtime guarantees them.
//
//===----------------------------------------------------------------------===//

#include "txl/IR/TxlOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace mlir::txl;

/// True when two dimensions may be equal at run time.
static bool compatible(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

static ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

LogicalResult EmbeddingOp::verify() {
  ArrayRef<int64_t> table = shapeOf(getTable());
  ArrayRef<int64_t> tokens = shapeOf(getTokens());
  ArrayRef<int64_t> result = shapeOf(getResult());
  if (!compatible(result[0], tokens[0]) || !compatible(result[1], tokens[1]))
    return emitOpError("result dimensions 0 and 1 must match the tokens");
  if (!compatible(result[2], table[1]))
    return emitOpError("result dimension 2 must be the embedding size ")
           << table[1];
  return success();
}

LogicalResult LinearOp::verify() {
  ArrayRef<int64_t> in = shapeOf(getInput());
  ArrayRef<int64_t> weight = shapeOf(getWeight());
  ArrayRef<int64_t> result = shapeOf(getResult());
  if (in.size() != result.size())
    return emitOpError("result rank must equal the input rank");
  if (!compatible(in.back(), weight[1]))
    return emitOpError("input features (") << in.back()
           << ") must match weight dimension 1 (" << weight[1] << ")";
  if (!compatible(result.back(), weight[0]))
    return emitOpError("result features (") << result.back()
           << ") must match weight dimension 0 (" << weight[0] << ")";
  for (size_t i = 0; i + 1 < in.size(); ++i)
    if (!compatible(in[i], result[i]))
      return emitOpError("leading dimensions of input and result must match");
  if (getBias() && !compatible(shapeOf(getBias())[0], weight[0]))
    return emitOpError("bias size must match weight dimension 0");
  return success();
}

LogicalResult LayerNormOp::verify() {
  int64_t features = shapeOf(getInput()).back();
  if (ShapedType::isDynamic(features))
    return emitOpError("the normalized (last) dimension must be static");
  if (!compatible(shapeOf(getWeight())[0], features) ||
      !compatible(shapeOf(getBias())[0], features))
    return emitOpError("weight and bias must have the size of the last "
                       "input dimension");
  if (!(getEpsilon().convertToFloat() > 0.0f))
    return emitOpError("epsilon must be positive");
  return success();
}

LogicalResult ConcatMemOp::verify() {
  ArrayRef<int64_t> mem = shapeOf(getMemory());
  ArrayRef<int64_t> hidden = shapeOf(getHidden());
  ArrayRef<int64_t> result = shapeOf(getResult());
  for (int i = 1; i < 3; ++i)
    if (!compatible(mem[i], hidden[i]) || !compatible(result[i], hidden[i]))
      return emitOpError("memory, hidden and result must agree on batch "
                         "and feature dimensions");
  if (!ShapedType::isDynamic(mem[0]) && !ShapedType::isDynamic(hidden[0]) &&
      !compatible(result[0], mem[0] + hidden[0]))
    return emitOpError("result length must be memory length + hidden length");
  return success();
}

LogicalResult TakeLastOp::verify() {
  ArrayRef<int64_t> in = shapeOf(getInput());
  ArrayRef<int64_t> result = shapeOf(getResult());
  if (!compatible(in[1], result[1]) || !compatible(in[2], result[2]))
    return emitOpError("batch and feature dimensions must be preserved");
  if (!ShapedType::isDynamic(result[0]))
    return emitOpError("result length must be dynamic (it depends on the "
                       "run-time count)");
  return success();
}

LogicalResult PosEmbOp::verify() {
  ArrayRef<int64_t> result = shapeOf(getResult());
  if (ShapedType::isDynamic(result[1]) || result[1] % 2 != 0)
    return emitOpError("result features must be static and even (sin || cos)");
  int64_t half = shapeOf(getInvFreq())[0];
  if (!ShapedType::isDynamic(half) && !compatible(result[1], 2 * half))
    return emitOpError("result features must be twice the inv_freq size");
  return success();
}

LogicalResult BroadcastHeadBiasOp::verify() {
  ArrayRef<int64_t> bias = shapeOf(getBias());
  ArrayRef<int64_t> like = shapeOf(getLike());
  if (!compatible(bias[0], like[2]) || !compatible(bias[1], like[3]))
    return emitOpError("bias must be [n_head, d_head] of the target");
  return success();
}

LogicalResult AttnScoreOp::verify() {
  ArrayRef<int64_t> q = shapeOf(getQuery());
  ArrayRef<int64_t> k = shapeOf(getKey());
  ArrayRef<int64_t> result = shapeOf(getResult());
  bool positional = k.size() == 3;
  int64_t kHead = positional ? k[1] : k[2];
  int64_t kDim = positional ? k[2] : k[3];
  if (!compatible(q[2], kHead) || !compatible(q[3], kDim))
    return emitOpError("query and key must agree on n_head and d_head");
  if (!positional && !compatible(q[1], k[1]))
    return emitOpError("query and key must agree on the batch size");
  if (!compatible(result[0], q[0]) || !compatible(result[1], k[0]) ||
      !compatible(result[2], q[1]) || !compatible(result[3], q[2]))
    return emitOpError("result must be [qlen, klen, batch, n_head]");
  return success();
}

LogicalResult AttnApplyOp::verify() {
  ArrayRef<int64_t> p = shapeOf(getProbs());
  ArrayRef<int64_t> v = shapeOf(getValue());
  ArrayRef<int64_t> result = shapeOf(getResult());
  if (!compatible(p[1], v[0]) || !compatible(p[2], v[1]) ||
      !compatible(p[3], v[2]))
    return emitOpError("probabilities [qlen, klen, batch, n_head] and "
                       "values [klen, batch, n_head, d_head] disagree");
  if (!compatible(result[0], p[0]) || !compatible(result[1], v[1]) ||
      !compatible(result[2], v[2]) || !compatible(result[3], v[3]))
    return emitOpError("result must be [qlen, batch, n_head, d_head]");
  return success();
}

LogicalResult RelAttentionOp::verify() {
  ArrayRef<int64_t> q = shapeOf(getQuery());
  ArrayRef<int64_t> k = shapeOf(getKey());
  ArrayRef<int64_t> r = shapeOf(getPosKey());
  if (getKey().getType() != getValue().getType())
    return emitOpError("key and value must have the same shape");
  for (int i = 1; i < 4; ++i)
    if (!compatible(q[i], k[i]))
      return emitOpError("query and key must agree on batch, n_head, d_head");
  if (!compatible(r[0], k[0]) || !compatible(r[1], k[2]) ||
      !compatible(r[2], k[3]))
    return emitOpError("pos_key must be [klen, n_head, d_head]");
  for (Value bias : {getRWBias(), getRRBias()}) {
    ArrayRef<int64_t> b = shapeOf(bias);
    if (!compatible(b[0], q[2]) || !compatible(b[1], q[3]))
      return emitOpError("r_w_bias and r_r_bias must be [n_head, d_head]");
  }
  if (getResult().getType() != getQuery().getType())
    return emitOpError("result type must be the query type");
  return success();
}

LogicalResult NllOp::verify() {
  ArrayRef<int64_t> logits = shapeOf(getLogits());
  ArrayRef<int64_t> target = shapeOf(getTarget());
  ArrayRef<int64_t> result = shapeOf(getResult());
  if (!compatible(logits[0], target[0]) || !compatible(logits[1], target[1]) ||
      !compatible(result[0], target[0]) || !compatible(result[1], target[1]))
    return emitOpError("logits, target and result must agree on "
                       "[qlen, batch]");
  return success();
}

#define GET_OP_CLASSES
#include "txl/IR/TxlOps.cpp.inc"

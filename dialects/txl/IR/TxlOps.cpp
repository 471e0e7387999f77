//===- TxlOps.cpp - txl dialect operations and verifiers ---------*- C++ -*-===//
//
// Verifiers check what the type constraints cannot: that the static parts of
// the shapes agree, and that an op computes in one float type. Dynamic
// dimensions (qlen, mlen, klen, batch) are accepted against anything; the
// runtime guarantees them.
//
//===----------------------------------------------------------------------===//

#include "txl/IR/TxlOps.h"

#include "ShapeChecks.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::txl;

/// The element type of `type` when it is a float tensor, else null.
static FloatType floatElementType(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor ? dyn_cast<FloatType>(tensor.getElementType()) : FloatType();
}

LogicalResult mlir::txl::verifySameFloatElementType(Operation *op) {
  SmallVector<Type> types(op->getOperandTypes());
  llvm::append_range(types, op->getResultTypes());
  FloatType common;
  for (Type type : types) {
    FloatType element = floatElementType(type);
    if (!element || element == common)
      continue;
    if (common)
      return op->emitOpError("float operands and results must share one "
                             "element type, got ")
             << common << " and " << element;
    common = element;
  }
  return success();
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

LogicalResult mlir::txl::verifyDropoutSite(Operation *op, StringRef rateName,
                                           double rate, StringRef streamName,
                                           int64_t stream) {
  if (!(rate >= 0.0 && rate < 1.0))
    return op->emitOpError(rateName) << " must be in [0, 1), got " << rate;
  if (stream < 0 || stream > static_cast<int64_t>(UINT32_MAX))
    return op->emitOpError(streamName)
           << " must be in [0, 2^32) (one Philox counter word), got " << stream;
  return success();
}

LogicalResult mlir::txl::verifyDropattGroup(Operation *op, ValueRange operands,
                                            std::optional<APFloat> rate,
                                            std::optional<uint64_t> stream) {
  bool any = rate || stream || !operands.empty();
  if (!any)
    return success();
  if (!rate || !stream || operands.size() != 5)
    return op->emitOpError("dropatt needs its five operands (seed, offset, "
                           "training, stream_base, column) and the dropatt "
                           "and dropatt_stream attributes together");
  return verifyDropoutSite(op, "dropatt", rate->convertToDouble(),
                           "dropatt_stream", static_cast<int64_t>(*stream));
}

LogicalResult DropoutOp::verify() {
  if (failed(verifyDropoutSite(*this, "rate", getRate().convertToDouble(),
                               "stream", static_cast<int64_t>(getStream()))))
    return failure();
  auto type = cast<RankedTensorType>(getType());
  std::optional<uint64_t> batchDim = getBatchDim();
  if (static_cast<bool>(getColumn()) != batchDim.has_value())
    return emitOpError("column and batch_dim go together");
  if (batchDim && *batchDim >= static_cast<uint64_t>(type.getRank()))
    return emitOpError("batch_dim ")
           << *batchDim << " is not a dimension of the rank-" << type.getRank()
           << " input";
  // The counter's element word numbers blocks of 4 elements: 2^34 elements
  // draw distinct masks; past that they would repeat. Dynamic sizes are
  // checked by the runtime (txl_session_run_segment).
  if (type.hasStaticShape() && type.getNumElements() > kMaxDropoutElements)
    return emitOpError("a tensor of ")
           << type.getNumElements() << " elements is more than the 2^34 "
           << "whose dropout masks are distinct (the Philox counter's element "
              "word counts blocks of 4)";
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

LogicalResult mlir::txl::verifyScoreShapes(Operation *op, Value query,
                                           Value key, Value scores,
                                           StringRef scoresName) {
  ArrayRef<int64_t> q = shapeOf(query), k = shapeOf(key), s = shapeOf(scores);
  bool positional = k.size() == 3;
  int64_t kHead = positional ? k[1] : k[2];
  int64_t kDim = positional ? k[2] : k[3];
  if (!compatible(q[2], kHead) || !compatible(q[3], kDim))
    return op->emitOpError("query and key must agree on n_head and d_head");
  if (!positional && !compatible(q[1], k[1]))
    return op->emitOpError("query and key must agree on the batch size");
  if (!compatible(s[0], q[0]) || !compatible(s[1], k[0]) ||
      !compatible(s[2], q[1]) || !compatible(s[3], q[2]))
    return op->emitOpError(scoresName)
           << " must be [qlen, klen, batch, n_head]";
  return success();
}

LogicalResult mlir::txl::verifyApplyShapes(Operation *op, Value probs,
                                           Value value, Value out,
                                           StringRef outName) {
  ArrayRef<int64_t> p = shapeOf(probs), v = shapeOf(value), o = shapeOf(out);
  if (!compatible(p[1], v[0]) || !compatible(p[2], v[1]) ||
      !compatible(p[3], v[2]))
    return op->emitOpError("probabilities [qlen, klen, batch, n_head] and "
                           "values [klen, batch, n_head, d_head] disagree");
  if (!compatible(o[0], p[0]) || !compatible(o[1], v[1]) ||
      !compatible(o[2], v[2]) || !compatible(o[3], v[3]))
    return op->emitOpError(outName) << " must be [qlen, batch, n_head, d_head]";
  return success();
}

LogicalResult AttnScoreOp::verify() {
  return verifyScoreShapes(*this, getQuery(), getKey(), getResult(), "result");
}

LogicalResult AttnApplyOp::verify() {
  return verifyApplyShapes(*this, getProbs(), getValue(), getResult(),
                           "result");
}

/// The softmax scale of the official attention, 1 / sqrt(d_head): positive
/// and finite.
static LogicalResult verifyScale(Operation *op, const llvm::APFloat &scale) {
  if (!scale.isFiniteNonZero() || scale.isNegative())
    return op->emitOpError("scale must be a positive finite number");
  return success();
}

LogicalResult MaskedSoftmaxOp::verify() {
  ArrayRef<int64_t> s = shapeOf(getScores());
  // klen = mlen + qlen: the memory's keys, then the segment's.
  if (!ShapedType::isDynamic(s[0]) && !ShapedType::isDynamic(s[1]) &&
      s[0] > s[1])
    return emitOpError("scores must be [qlen, klen, batch, n_head] with "
                       "qlen <= klen, got qlen ")
           << s[0] << " > klen " << s[1];
  return verifyScale(*this, getScale());
}

LogicalResult mlir::txl::verifyRowLogSumExp(Operation *op, Value lse,
                                            Value query) {
  auto q = cast<RankedTensorType>(query.getType());
  auto l = cast<RankedTensorType>(lse.getType());
  ArrayRef<int64_t> qs = q.getShape(), ls = l.getShape();
  if (l.getElementType() != q.getElementType() || !compatible(ls[0], qs[1]) ||
      !compatible(ls[1], qs[2]) || !compatible(ls[2], qs[0]))
    return op->emitOpError("lse must be [batch, n_head, qlen] of the "
                           "query's element type");
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
  if (Value lse = getLse();
      lse && failed(verifyRowLogSumExp(*this, lse, getQuery())))
    return failure();
  if (failed(verifyScale(*this, getScale())))
    return failure();
  return verifyDropattGroup(*this, getDropattOperands(), getDropatt(),
                            getDropattStream());
}

SmallVector<Value> RelAttentionOp::getDropattOperands() {
  return dropattOperandsOf(*this);
}

RankedTensorType RelAttentionOp::getLseTypeForQuery() {
  auto q = cast<RankedTensorType>(getQuery().getType());
  return RankedTensorType::get(
      {q.getDimSize(1), q.getDimSize(2), q.getDimSize(0)}, q.getElementType());
}

RelAttentionOp RelAttentionOp::replaceWithLse(RewriterBase &rewriter,
                                              bool withLse) {
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(*this);
  auto copy = RelAttentionOp::create(
      rewriter, getLoc(), getResult().getType(),
      withLse ? Type(getLseTypeForQuery()) : Type(), getQuery(), getKey(),
      getValue(), getPosKey(), getRWBias(), getRRBias(), getMemLen(),
      getSameLength(), getDropattSeed(), getDropattOffset(),
      getDropattTraining(), getDropattStreamBase(), getDropattColumn(),
      getScaleAttr(), getDropattAttr(), getDropattStreamAttr());
  rewriter.replaceAllUsesWith(getResult(), copy.getResult());
  rewriter.eraseOp(*this);
  return copy;
}

namespace {
// txl.rel_attention with an lse result nothing reads => the op without it.
struct DropUnusedLse : public OpRewritePattern<RelAttentionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(RelAttentionOp op,
                                PatternRewriter &rewriter) const override {
    Value lse = op.getLse();
    if (!lse || !lse.use_empty())
      return failure();
    op.replaceWithLse(rewriter, /*withLse=*/false);
    return success();
  }
};
} // namespace

void RelAttentionOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                                 MLIRContext *context) {
  results.add<DropUnusedLse>(context);
}

LogicalResult mlir::txl::verifyOutputLayer(Operation *op, Value input,
                                           Value weight, Value bias,
                                           Value target) {
  ArrayRef<int64_t> h = shapeOf(input), w = shapeOf(weight),
                    t = shapeOf(target);
  if (!compatible(w[1], h[2]))
    return op->emitOpError("weight must be [n_token, d] with d the input's "
                           "last dimension");
  if (bias && !compatible(shapeOf(bias)[0], w[0]))
    return op->emitOpError("bias must be [n_token]");
  if (!compatible(t[0], h[0]) || !compatible(t[1], h[1]))
    return op->emitOpError("target must be the input's [qlen, batch]");
  return success();
}

LogicalResult mlir::txl::verifySavedLogits(Operation *op, Value weight,
                                           Value lse, Value logits,
                                           int64_t block) {
  if (block <= 0)
    return op->emitOpError("block must be positive");
  int64_t vocab = shapeOf(weight)[0];
  ArrayRef<int64_t> l = shapeOf(logits);
  bool blocksOk = ShapedType::isDynamic(vocab) ||
                  compatible(l[0], llvm::divideCeil(vocab, block));
  if (!blocksOk || !compatible(l[1], shapeOf(lse)[0]) || l[2] != block)
    return op->emitOpError("logits must be [ceil(n_token / block), rows, "
                           "block] and lse [rows]");
  return success();
}

/// A [qlen, batch] value of the output layer (its NLL or their gradient).
static LogicalResult verifyRowsOfInput(Operation *op, Value v, Value input,
                                       StringRef name) {
  ArrayRef<int64_t> r = shapeOf(v), h = shapeOf(input);
  if (!compatible(r[0], h[0]) || !compatible(r[1], h[1]))
    return op->emitOpError() << name << " must be the input's [qlen, batch]";
  return success();
}

LogicalResult LinearNllOp::verify() {
  if (failed(verifyOutputLayer(*this, getInput(), getWeight(), getBias(),
                               getTarget())))
    return failure();
  return verifyRowsOfInput(*this, getResult(), getInput(), "result");
}

LogicalResult LinearNllFwdOp::verify() {
  if (failed(verifyOutputLayer(*this, getInput(), getWeight(), getBias(),
                               getTarget())) ||
      failed(verifyRowsOfInput(*this, getResult(), getInput(), "result")))
    return failure();
  return verifySavedLogits(*this, getWeight(), getLse(), getLogits(),
                           getBlock());
}

LogicalResult LossMixOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one input");
  for (Value input : getInputs())
    if (input.getType() != getResult().getType())
      return emitOpError("inputs must have the result's type ")
             << getResult().getType() << ", got " << input.getType();
  int64_t first = getFirst();
  if (first < 0)
    return emitOpError("first must be non-negative, got ") << first;
  int64_t weights = shapeOf(getWeights())[0];
  int64_t needed = first + static_cast<int64_t>(getInputs().size());
  if (!ShapedType::isDynamic(weights) && weights < needed)
    return emitOpError("has ")
           << getInputs().size() << " inputs from weight " << first
           << " but only " << weights << " weights";
  if (!compatible(shapeOf(getPositionWeights())[0], shapeOf(getResult())[0]))
    return emitOpError("position_weights must have one weight per row of the "
                       "result");
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

/// Checks `[0, cutoffs..., n_token]`: starts at 0, strictly increasing.
static LogicalResult verifyCutoffEnds(Operation *op, ArrayRef<int64_t> ends) {
  if (ends.size() < 2 || ends.front() != 0)
    return op->emitOpError("cutoff_ends must be [0, cutoffs..., n_token]");
  for (size_t i = 1; i < ends.size(); ++i)
    if (ends[i] <= ends[i - 1])
      return op->emitOpError("cutoff_ends must be strictly increasing");
  return success();
}

LogicalResult AdaptiveEmbeddingOp::verify() {
  ArrayRef<int64_t> ends = getCutoffEnds();
  if (failed(verifyCutoffEnds(*this, ends)))
    return failure();
  size_t clusters = ends.size() - 1;
  if (getTables().size() != clusters)
    return emitOpError("expects one table per cluster (")
           << clusters << "), got " << getTables().size();
  if (getProjs().size() != clusters)
    return emitOpError("expects one projection per cluster (")
           << clusters << "), got " << getProjs().size();
  ArrayRef<int64_t> tokens = shapeOf(getTokens());
  ArrayRef<int64_t> result = shapeOf(getResult());
  if (!compatible(result[0], tokens[0]) || !compatible(result[1], tokens[1]))
    return emitOpError("result dimensions 0 and 1 must match the tokens");
  for (size_t i = 0; i < clusters; ++i) {
    ArrayRef<int64_t> table = shapeOf(getTables()[i]);
    ArrayRef<int64_t> proj = shapeOf(getProjs()[i]);
    if (!compatible(table[0], ends[i + 1] - ends[i]))
      return emitOpError("table ") << i << " must have "
                                   << ends[i + 1] - ends[i] << " rows";
    if (!compatible(proj[0], result[2]) || !compatible(proj[1], table[1]))
      return emitOpError("projection ")
             << i << " must be [d_model, d_" << i << "] = [" << result[2]
             << ", " << table[1] << "]";
  }
  return success();
}

/// The checks txl.adaptive_nll and txl.adaptive_log_softmax share: the
/// cutoffs, the output layers, projections and cluster parameters against
/// them and against `hidden`'s d_model.
template <typename OpT>
static LogicalResult verifyAdaptiveOutputLayer(OpT op) {
  ArrayRef<int64_t> ends = op.getCutoffEnds();
  if (failed(verifyCutoffEnds(op, ends)))
    return failure();
  size_t clusters = ends.size() - 1;
  size_t layers = op.getWeights().size();
  if (layers != 1 && layers != clusters)
    return op.emitOpError("expects one output layer, or one per cluster (")
           << clusters << "), got " << layers;
  if (op.getBiases().size() != layers)
    return op.emitOpError("expects one bias per output layer");
  bool sliced = layers == 1;
  ArrayRef<int64_t> hidden = shapeOf(op.getHidden());
  size_t projs = op.getProjs().size();
  if (projs != 0 && projs != clusters)
    return op.emitOpError("expects no projection, or one per cluster (")
           << clusters << "), got " << projs;
  for (size_t l = 0; l < layers; ++l) {
    int64_t rows = sliced ? ends.back() : ends[l + 1] - ends[l];
    if (!compatible(shapeOf(op.getWeights()[l])[0], rows) ||
        !compatible(shapeOf(op.getBiases()[l])[0], rows))
      return op.emitOpError("output layer ")
             << l << " must have " << rows << " rows and bias entries";
  }
  for (size_t i = 0; i < clusters; ++i) {
    int64_t features = shapeOf(op.getWeights()[sliced ? 0 : i])[1];
    if (projs == 0) {
      if (!compatible(features, hidden[2]))
        return op.emitOpError("without projections the output layers must "
                              "take d_model (")
               << hidden[2] << ") features";
      continue;
    }
    ArrayRef<int64_t> proj = shapeOf(op.getProjs()[i]);
    if (!compatible(proj[0], hidden[2]) || !compatible(proj[1], features))
      return op.emitOpError("projection ")
             << i << " must be [d_model, d_" << i << "] = [" << hidden[2]
             << ", " << features << "]";
  }
  int64_t tails = static_cast<int64_t>(clusters) - 1;
  if ((tails > 0) != static_cast<bool>(op.getClusterWeight()) ||
      (tails > 0) != static_cast<bool>(op.getClusterBias()))
    return op.emitOpError("cluster_weight and cluster_bias are required iff "
                          "there are tail clusters");
  if (tails > 0) {
    ArrayRef<int64_t> cw = shapeOf(op.getClusterWeight());
    int64_t headFeatures = shapeOf(op.getWeights()[0])[1];
    if (!compatible(cw[0], tails) || !compatible(cw[1], headFeatures) ||
        !compatible(shapeOf(op.getClusterBias())[0], tails))
      return op.emitOpError("cluster_weight must be [n_clusters, d_0] = [")
             << tails << ", " << headFeatures << "] and cluster_bias ["
             << tails << "]";
  }
  return success();
}

LogicalResult AdaptiveNllOp::verify() {
  if (failed(verifyAdaptiveOutputLayer(*this)))
    return failure();
  ArrayRef<int64_t> hidden = shapeOf(getHidden());
  ArrayRef<int64_t> target = shapeOf(getTarget());
  ArrayRef<int64_t> result = shapeOf(getResult());
  if (!compatible(hidden[0], target[0]) || !compatible(hidden[1], target[1]) ||
      !compatible(result[0], target[0]) || !compatible(result[1], target[1]))
    return emitOpError("hidden, target and result must agree on "
                       "[qlen, batch]");
  return success();
}

LogicalResult AdaptiveLogSoftmaxOp::verify() {
  if (failed(verifyAdaptiveOutputLayer(*this)))
    return failure();
  ArrayRef<int64_t> hidden = shapeOf(getHidden());
  ArrayRef<int64_t> result = shapeOf(getResult());
  int64_t nToken = getCutoffEnds().back();
  if (!compatible(hidden[0], result[0]) || !compatible(hidden[1], result[1]) ||
      !compatible(result[2], nToken))
    return emitOpError("result must be [qlen, batch, n_token] with "
                       "hidden's qlen and batch and n_token = ")
           << nToken;
  return success();
}

#include "txl/IR/TxlInterfaces.cpp.inc"

#define GET_OP_CLASSES
#include "txl/IR/TxlOps.cpp.inc"

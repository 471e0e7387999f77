//===- SegmentBuilder.cpp - Model file -> txl segment function ---*- C++ -*-===//
//
// Mirrors the official pytorch/mem_transformer.py (commit 44781ed):
// AdaptiveEmbedding scaled by sqrt(d_model), PositionalEmbedding over
// distances klen-1 ... 0, n_layer RelPartialLearnableDecoderLayer, and the
// output softmax, with nn.Dropout wherever MemTransformerLM puts it (a
// txl.dropout that is the identity unless the `training` argument is set).
// The attention score is written as the paper's four terms and a rel_shift;
// fusion is a pass, not a frontend decision. Tied parameters (tie_weight,
// tie_projs) are one function argument used in both places.
//
//===----------------------------------------------------------------------===//

#include "txl/Frontend/SegmentBuilder.h"

#include "txl/IR/TxlOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

#include <cmath>

using namespace mlir;
using namespace mlir::txl;

/// `[0, cutoffs..., n_token]`, the official `cutoff_ends`.
static SmallVector<int64_t> cutoffEnds(const ModelSection &m) {
  SmallVector<int64_t> ends = {0};
  ends.append(m.cutoffs.begin(), m.cutoffs.end());
  ends.push_back(m.nToken);
  return ends;
}

/// Embedding size of cluster i: official `d_embed // div_val**i`.
static int64_t clusterDim(const ModelConfig &config, size_t cluster) {
  int64_t d = config.dEmbed();
  for (size_t i = 0; i < cluster; ++i)
    d /= config.model.divVal;
  return d;
}

static std::string clusterName(StringRef prefix, size_t i, StringRef suffix = "") {
  return (prefix + Twine(i) + suffix).str();
}

/// The parameters of one RelPartialLearnableDecoderLayer, relative to
/// `layers.<l>.`, in argument order (also the order of @decoder_layer's
/// parameter arguments).
static SmallVector<std::pair<std::string, SmallVector<int64_t>>>
layerParamSpecs(const ModelSection &m) {
  int64_t hd = m.nHead * m.dHead;
  return {{"dec_attn.qkv_net.weight", {3 * hd, m.dModel}},
          {"dec_attn.r_net.weight", {hd, m.dModel}},
          {"dec_attn.o_net.weight", {m.dModel, hd}},
          {"dec_attn.layer_norm.weight", {m.dModel}},
          {"dec_attn.layer_norm.bias", {m.dModel}},
          {"pos_ff.CoreNet.0.weight", {m.dInner, m.dModel}},
          {"pos_ff.CoreNet.0.bias", {m.dInner}},
          {"pos_ff.CoreNet.3.weight", {m.dModel, m.dInner}},
          {"pos_ff.CoreNet.3.bias", {m.dModel}},
          {"pos_ff.layer_norm.weight", {m.dModel}},
          {"pos_ff.layer_norm.bias", {m.dModel}}};
}

SmallVector<ParamSpec> mlir::txl::getParameterTable(const ModelConfig &config) {
  const ModelSection &m = config.model;
  int64_t dEmbed = config.dEmbed();
  SmallVector<int64_t> ends = cutoffEnds(m);
  size_t clusters = ends.size() - 1;
  bool sliced = m.divVal == 1;
  bool projected = !sliced || dEmbed != m.dModel;
  auto tieProj = [&](size_t i) { return i < m.tieProjs.size() && m.tieProjs[i]; };
  SmallVector<ParamSpec> params;
  auto add = [&](std::string name, SmallVector<int64_t> shape,
                 bool trainable = true) -> ParamSpec & {
    params.push_back({std::move(name), std::move(shape), trainable, {}});
    return params.back();
  };

  // AdaptiveEmbedding; the tied output layers and projections are aliases.
  for (size_t i = 0; i < (sliced ? 1 : clusters); ++i) {
    SmallVector<int64_t> shape = {sliced ? m.nToken : ends[i + 1] - ends[i],
                                  clusterDim(config, i)};
    ParamSpec &p = add(clusterName("word_emb.emb_layers.", i, ".weight"), shape);
    if (m.tieWeight)
      p.aliases.push_back(clusterName("crit.out_layers.", i, ".weight"));
  }
  if (projected) {
    for (size_t i = 0; i < (sliced ? 1 : clusters); ++i) {
      ParamSpec &p = add(clusterName("word_emb.emb_projs.", i),
                         {m.dModel, clusterDim(config, i)});
      // div_val = 1: every tied out_projs.i is emb_projs.0.
      for (size_t j = 0; j < clusters; ++j)
        if (tieProj(j) && (sliced || j == i))
          p.aliases.push_back(clusterName("crit.out_projs.", j));
    }
  }
  add("pos_emb.inv_freq", {m.dModel / 2}, /*trainable=*/false);
  if (!m.untieR) {
    add("r_w_bias", {m.nHead, m.dHead});
    add("r_r_bias", {m.nHead, m.dHead});
  }
  for (int64_t l = 0; l < m.nLayer; ++l) {
    std::string p = "layers." + std::to_string(l) + ".";
    if (m.untieR) {
      add(p + "dec_attn.r_w_bias", {m.nHead, m.dHead});
      add(p + "dec_attn.r_r_bias", {m.nHead, m.dHead});
    }
    for (auto &[name, shape] : layerParamSpecs(m))
      add(p + name, shape);
  }

  // ProjectedAdaptiveLogSoftmax.
  if (clusters > 1) {
    add("crit.cluster_weight", {static_cast<int64_t>(clusters - 1), dEmbed});
    add("crit.cluster_bias", {static_cast<int64_t>(clusters - 1)});
  }
  for (size_t i = 0; i < (sliced ? 1 : clusters); ++i) {
    int64_t rows = sliced ? m.nToken : ends[i + 1] - ends[i];
    if (!m.tieWeight)
      add(clusterName("crit.out_layers.", i, ".weight"),
          {rows, clusterDim(config, i)});
    add(clusterName("crit.out_layers.", i, ".bias"), {rows});
  }
  if (projected)
    for (size_t i = 0; i < clusters; ++i)
      if (!tieProj(i))
        add(clusterName("crit.out_projs.", i),
            {m.dModel, clusterDim(config, sliced ? 0 : i)});
  return params;
}

// Dropout sites, the `stream` of each txl.dropout. @segment's own:
// MemTransformerLM.drop on the word embedding, on pos_emb and on the last
// layer's output.
static constexpr int64_t kStreamWordEmb = 0, kStreamPosEmb = 1,
                         kStreamOutput = 2;
// Those of @decoder_layer, relative to its stream_base argument: dec_attn.drop
// (after o_net), pos_ff.CoreNet.2 and .4, dec_attn.dropatt.
static constexpr int64_t kStreamAttnOut = 0, kStreamFFInner = 1,
                         kStreamFFOut = 2, kStreamDropatt = 3,
                         kStreamsPerLayer = 4;

/// The stream_base of layer `layer`: every layer gets its own streams, above
/// the segment's.
static int64_t layerStreamBase(int64_t layer) {
  return kStreamsPerLayer * (layer + 1);
}

namespace {

/// Builds the body of @segment. Holds the builder and the run-time scalars
/// every layer needs.
class SegmentEmitter {
public:
  SegmentEmitter(OpBuilder &b, Location loc, const ModelConfig &config)
      : b(b), loc(loc), config(config), m(config.model) {}

  /// Emits the function into `module`.
  void emit(ModuleOp module);

private:
  Value param(StringRef name) { return params.lookup(name); }
  RankedTensorType tensorType(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, b.getF32Type());
  }
  Value linear(Value x, Value w, Value bias = nullptr);
  Value layerNorm(Value x, StringRef prefix);
  Value attention(Value h, Value pos, Value mem, StringRef prefix);
  Value feedForward(Value h, StringRef prefix);
  Value embedding(Value data);
  /// `x` through nn.Dropout(rate) at site `stream` (relative to the current
  /// stream base); `x` itself when the rate is 0.
  Value dropout(Value x, double rate, int64_t stream);
  /// True when the model drops anything (dropout or dropatt > 0); only then
  /// does @decoder_layer take the dropout arguments.
  bool hasDropout() const { return m.dropout > 0.0 || m.dropatt > 0.0; }
  /// Emits `@decoder_layer`: one RelPartialLearnableDecoderLayer whose
  /// parameters are arguments, so every layer calls the same function.
  func::FuncOp emitLayerFunction(ModuleOp module);
  /// The parameter arguments of @decoder_layer for layer `layer` (after h,
  /// pos, mem, mem_len, same_length and, with dropout, dropout_seed,
  /// dropout_offset, training and stream_base).
  SmallVector<Value> layerParams(int64_t layer);
  Value loss(Value h, Value target);
  /// The parameter under `name` or, when tied, under the name it is tied to.
  Value tiedParam(StringRef name);

  OpBuilder &b;
  Location loc;
  const ModelConfig &config;
  const ModelSection &m;
  llvm::StringMap<Value> params;
  llvm::StringMap<std::string> aliases; ///< tied name -> parameter name
  Value memLen, sameLength;
  /// The dropout arguments: i64 seed and offset, i1 training, and the i64
  /// stream base of the current layer (null in @segment).
  Value dropoutSeed, dropoutOffset, training, streamBase;
};

} // namespace

Value SegmentEmitter::linear(Value x, Value w, Value bias) {
  auto xType = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> shape(xType.getShape());
  shape.back() = cast<RankedTensorType>(w.getType()).getDimSize(0);
  return LinearOp::create(b, loc, tensorType(shape), x, w, bias);
}

Value SegmentEmitter::dropout(Value x, double rate, int64_t stream) {
  if (rate == 0.0)
    return x;
  return DropoutOp::create(b, loc, x, dropoutSeed, dropoutOffset, training,
                           streamBase, b.getF64FloatAttr(rate),
                           b.getI64IntegerAttr(stream));
}

Value SegmentEmitter::layerNorm(Value x, StringRef prefix) {
  // torch.nn.LayerNorm default eps, as the official code uses.
  return LayerNormOp::create(b, loc, x.getType(), x,
                             param((prefix + "layer_norm.weight").str()),
                             param((prefix + "layer_norm.bias").str()),
                             b.getF32FloatAttr(1e-5f));
}

/// RelPartialLearnableMultiHeadAttn.forward plus its residual + LayerNorm.
Value SegmentEmitter::attention(Value h, Value pos, Value mem,
                                StringRef prefix) {
  int64_t hd = m.nHead * m.dHead;
  int64_t dyn = ShapedType::kDynamic;
  std::string attn = (prefix + "dec_attn.").str();

  Value cat = ConcatMemOp::create(b, loc, tensorType({dyn, dyn, m.dModel}),
                                  mem, h);
  Value x = m.preLnorm ? layerNorm(cat, attn) : cat;
  Value wHeads = linear(x, param(attn + "qkv_net.weight"));
  Value rHeadK = linear(pos, param(attn + "r_net.weight"));

  OpFoldResult mlen = tensor::getMixedSize(b, loc, mem, 0);
  OpFoldResult qlen = tensor::getMixedSize(b, loc, h, 0);
  OpFoldResult klen = tensor::getMixedSize(b, loc, cat, 0);
  OpFoldResult bsz = tensor::getMixedSize(b, loc, h, 1);
  OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
  SmallVector<OpFoldResult> unit(3, one);
  auto chunk = [&](int64_t c, OpFoldResult start, OpFoldResult len) -> Value {
    // torch.chunk(w_heads, 3, -1)[c][start:start+len], viewed per head.
    Value s = tensor::ExtractSliceOp::create(
        b, loc, wHeads, SmallVector<OpFoldResult>{start, zero, b.getIndexAttr(c * hd)},
        SmallVector<OpFoldResult>{len, bsz, b.getIndexAttr(hd)}, unit);
    SmallVector<OpFoldResult> outShape = {len, bsz, b.getIndexAttr(m.nHead),
                                          b.getIndexAttr(m.dHead)};
    return tensor::ExpandShapeOp::create(
        b, loc, tensorType({dyn, dyn, m.nHead, m.dHead}), s,
        SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}}, outShape);
  };
  Value q = chunk(0, mlen, qlen);
  Value k = chunk(1, zero, klen);
  Value v = chunk(2, zero, klen);
  Value r = tensor::ExpandShapeOp::create(
      b, loc, tensorType({dyn, m.nHead, m.dHead}), rHeadK,
      SmallVector<ReassociationIndices>{{0}, {1, 2}},
      SmallVector<OpFoldResult>{klen, b.getIndexAttr(m.nHead),
                                b.getIndexAttr(m.dHead)});

  // Paper §3.3: (a) q·k + (c) u·k + shift((b) q·W_R R + (d) v·W_R R).
  auto scoreType = tensorType({dyn, dyn, dyn, m.nHead});
  Value termA = AttnScoreOp::create(b, loc, scoreType, q, k);
  Value u = BroadcastHeadBiasOp::create(b, loc, param("r_w_bias"), q);
  Value termC = AttnScoreOp::create(b, loc, scoreType, u, k);
  Value termB = AttnScoreOp::create(b, loc, scoreType, q, r);
  Value vb = BroadcastHeadBiasOp::create(b, loc, param("r_r_bias"), q);
  Value termD = AttnScoreOp::create(b, loc, scoreType, vb, r);
  Value bd = RelShiftOp::create(b, loc, AddOp::create(b, loc, termB, termD));
  Value ac = AddOp::create(b, loc, termA, termC);
  Value scores = AddOp::create(b, loc, ac, bd);
  float scale = 1.0f / std::sqrt(static_cast<float>(m.dHead));
  Value probs = MaskedSoftmaxOp::create(b, loc, scores, memLen, sameLength,
                                        b.getF32FloatAttr(scale));
  // attn_prob = self.dropatt(attn_prob)
  probs = dropout(probs, m.dropatt, kStreamDropatt);
  Value attnVec = AttnApplyOp::create(b, loc, q.getType(), probs, v);
  Value flat = tensor::CollapseShapeOp::create(
      b, loc, attnVec, SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}});
  // attn_out = self.drop(self.o_net(attn_vec))
  Value attnOut = dropout(linear(flat, param(attn + "o_net.weight")), m.dropout,
                          kStreamAttnOut);
  Value sum = AddOp::create(b, loc, h, attnOut);
  return m.preLnorm ? sum : layerNorm(sum, attn);
}

/// PositionwiseFF: CoreNet (Linear, ReLU, Dropout, Linear, Dropout), residual,
/// LayerNorm (pre or post).
Value SegmentEmitter::feedForward(Value h, StringRef prefix) {
  std::string ff = (prefix + "pos_ff.").str();
  Value x = m.preLnorm ? layerNorm(h, ff) : h;
  Value inner = ReluOp::create(
      b, loc,
      linear(x, param(ff + "CoreNet.0.weight"), param(ff + "CoreNet.0.bias")));
  inner = dropout(inner, m.dropout, kStreamFFInner);
  Value core =
      linear(inner, param(ff + "CoreNet.3.weight"), param(ff + "CoreNet.3.bias"));
  core = dropout(core, m.dropout, kStreamFFOut);
  Value sum = AddOp::create(b, loc, core, h);
  return m.preLnorm ? sum : layerNorm(sum, ff);
}

Value SegmentEmitter::tiedParam(StringRef name) {
  if (Value v = param(name))
    return v;
  Value tied = params.lookup(aliases.lookup(name));
  assert(tied && "parameter table and segment emitter disagree");
  return tied;
}

/// Official AdaptiveEmbedding.forward: the looked-up (and, for d_embed !=
/// d_model or div_val != 1, projected) embedding times emb_scale = d_model**0.5.
Value SegmentEmitter::embedding(Value data) {
  int64_t dyn = ShapedType::kDynamic;
  SmallVector<int64_t> ends = cutoffEnds(m);
  Value emb;
  if (m.divVal == 1) {
    emb = EmbeddingOp::create(b, loc, tensorType({dyn, dyn, config.dEmbed()}),
                              param("word_emb.emb_layers.0.weight"), data);
    if (config.dEmbed() != m.dModel)
      emb = linear(emb, param("word_emb.emb_projs.0"));
  } else {
    SmallVector<Value> tables, projs;
    for (size_t i = 0; i + 1 < ends.size(); ++i) {
      tables.push_back(param(clusterName("word_emb.emb_layers.", i, ".weight")));
      projs.push_back(param(clusterName("word_emb.emb_projs.", i)));
    }
    emb = AdaptiveEmbeddingOp::create(b, loc, tensorType({dyn, dyn, m.dModel}),
                                      data, tables, projs,
                                      b.getDenseI64ArrayAttr(ends));
  }
  return ScaleOp::create(
      b, loc, emb, b.getF32FloatAttr(std::sqrt(static_cast<float>(m.dModel))));
}

/// Official ProjectedAdaptiveLogSoftmax.forward: a plain linear + NLL when
/// there are no clusters and no projection, else txl.adaptive_nll.
Value SegmentEmitter::loss(Value h, Value target) {
  int64_t dyn = ShapedType::kDynamic;
  auto nllType = tensorType({dyn, dyn});
  SmallVector<int64_t> ends = cutoffEnds(m);
  size_t clusters = ends.size() - 1;
  bool sliced = m.divVal == 1;
  bool projected = !sliced || config.dEmbed() != m.dModel;
  if (clusters == 1 && !projected) {
    Value logits = linear(h, tiedParam("crit.out_layers.0.weight"),
                          param("crit.out_layers.0.bias"));
    return NllOp::create(b, loc, nllType, logits, target);
  }
  SmallVector<Value> weights, biases, projs;
  for (size_t i = 0; i < (sliced ? 1 : clusters); ++i) {
    weights.push_back(tiedParam(clusterName("crit.out_layers.", i, ".weight")));
    biases.push_back(param(clusterName("crit.out_layers.", i, ".bias")));
  }
  if (projected)
    for (size_t i = 0; i < clusters; ++i)
      projs.push_back(tiedParam(clusterName("crit.out_projs.", i)));
  Value clusterWeight, clusterBias;
  if (clusters > 1) {
    clusterWeight = param("crit.cluster_weight");
    clusterBias = param("crit.cluster_bias");
  }
  return AdaptiveNllOp::create(b, loc, nllType, h, target, weights, biases,
                               projs, clusterWeight, clusterBias,
                               b.getDenseI64ArrayAttr(ends));
}

/// @decoder_layer's parameter arguments: the layer's own parameters, then
/// the u/v biases under their model-level names.
static SmallVector<std::string> layerParamNames(const ModelSection &m) {
  SmallVector<std::string> names;
  for (auto &[name, shape] : layerParamSpecs(m))
    names.push_back(name);
  names.append({"r_w_bias", "r_r_bias"});
  return names;
}

func::FuncOp SegmentEmitter::emitLayerFunction(ModuleOp module) {
  int64_t dyn = ShapedType::kDynamic;
  auto hType = tensorType({dyn, dyn, m.dModel});
  Type i64 = b.getI64Type();
  SmallVector<Type> inputs = {hType, tensorType({dyn, m.dModel}), hType,
                              b.getIndexType(), b.getI1Type()};
  if (hasDropout()) // dropout_seed, dropout_offset, training, stream_base
    inputs.append({i64, i64, b.getI1Type(), i64});
  unsigned firstParam = inputs.size();
  // Shapes from layer 0 (all layers are alike).
  SmallVector<Value> layer0 = layerParams(0);
  for (Value v : layer0)
    inputs.push_back(v.getType());
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(module.getBody());
  auto fn = func::FuncOp::create(b, loc, kLayerFunctionName,
                                 b.getFunctionType(inputs, {hType}));
  fn.setPrivate();
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);

  // Inside the layer, parameters are looked up by their relative names.
  llvm::StringMap<Value> outer = std::move(params);
  Value outerMemLen = memLen, outerSameLength = sameLength;
  Value outerSeed = dropoutSeed, outerOffset = dropoutOffset,
        outerTraining = training;
  params = {};
  // All argument attributes at once: one setArgAttr per argument rebuilds
  // (and uniques) the whole list each time, quadratic in n_layer.
  SmallVector<DictionaryAttr> layerArgAttrs(fn.getNumArguments(),
                                            b.getDictionaryAttr({}));
  for (auto [i, name] : llvm::enumerate(layerParamNames(m))) {
    layerArgAttrs[firstParam + i] =
        b.getDictionaryAttr(b.getNamedAttr("txl.param", b.getStringAttr(name)));
    params[name] = entry->getArgument(firstParam + i);
  }
  fn.setAllArgAttrs(layerArgAttrs);
  memLen = entry->getArgument(3);
  sameLength = entry->getArgument(4);
  if (hasDropout()) {
    dropoutSeed = entry->getArgument(5);
    dropoutOffset = entry->getArgument(6);
    training = entry->getArgument(7);
    streamBase = entry->getArgument(8);
  }
  Value h = attention(entry->getArgument(0), entry->getArgument(1),
                      entry->getArgument(2), "");
  h = feedForward(h, "");
  func::ReturnOp::create(b, loc, h);
  params = std::move(outer);
  memLen = outerMemLen;
  sameLength = outerSameLength;
  dropoutSeed = outerSeed;
  dropoutOffset = outerOffset;
  training = outerTraining;
  streamBase = nullptr;
  return fn;
}

SmallVector<Value> SegmentEmitter::layerParams(int64_t layer) {
  std::string prefix = "layers." + std::to_string(layer) + ".";
  SmallVector<Value> values;
  for (const std::string &name : layerParamNames(m)) {
    if (name == "r_w_bias" || name == "r_r_bias")
      values.push_back(m.untieR ? param(prefix + "dec_attn." + name)
                                : param(name));
    else
      values.push_back(param(prefix + name));
  }
  return values;
}

void SegmentEmitter::emit(ModuleOp module) {
  int64_t dyn = ShapedType::kDynamic;
  SmallVector<ParamSpec> table = getParameterTable(config);
  auto tokenType = RankedTensorType::get({dyn, dyn}, b.getI64Type());
  auto memType = tensorType({dyn, dyn, m.dModel});
  Type i64 = b.getI64Type();

  SmallVector<Type> inputs;
  for (const ParamSpec &p : table)
    inputs.push_back(tensorType(p.shape));
  inputs.push_back(tokenType); // data
  inputs.push_back(tokenType); // target
  for (int64_t l = 0; l <= m.nLayer; ++l)
    inputs.push_back(memType);
  inputs.append({i64, i64, i64}); // mem_len, clamp_len, same_length
  inputs.append({i64, i64, i64}); // dropout_seed, dropout_offset, training
  SmallVector<Type> results = {tensorType({dyn, dyn})};
  for (int64_t l = 0; l <= m.nLayer; ++l)
    results.push_back(memType);

  b.setInsertionPointToEnd(module.getBody());
  auto fn = func::FuncOp::create(b, loc, kSegmentFunctionName,
                                 b.getFunctionType(inputs, results));
  fn->setAttr("llvm.emit_c_interface", b.getUnitAttr());
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);

  unsigned arg = 0;
  // Set at once, as for the layer function.
  SmallVector<DictionaryAttr> argAttrs(fn.getNumArguments(),
                                       b.getDictionaryAttr({}));
  for (const ParamSpec &p : table) {
    NamedAttrList attrs;
    attrs.append("txl.param", b.getStringAttr(p.name));
    if (!p.trainable)
      attrs.append("txl.buffer", b.getUnitAttr());
    argAttrs[arg] = attrs.getDictionary(b.getContext());
    params[p.name] = entry->getArgument(arg++);
    for (const std::string &alias : p.aliases)
      aliases[alias] = p.name;
  }
  fn.setAllArgAttrs(argAttrs);
  Value data = entry->getArgument(arg++);
  Value target = entry->getArgument(arg++);
  SmallVector<Value> mems;
  for (int64_t l = 0; l <= m.nLayer; ++l)
    mems.push_back(entry->getArgument(arg++));
  memLen = arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                      entry->getArgument(arg++));
  Value clampLen = entry->getArgument(arg++);
  Value zero64 = arith::ConstantIntOp::create(b, loc, 0, 64);
  sameLength = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                     entry->getArgument(arg++), zero64);
  dropoutSeed = entry->getArgument(arg++);
  dropoutOffset = entry->getArgument(arg++);
  training = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                   entry->getArgument(arg++), zero64);

  // core_out = self.drop(word_emb), also the memory of layer 0.
  Value h = dropout(embedding(data), m.dropout, kStreamWordEmb);
  Value qlen = tensor::DimOp::create(b, loc, data, 0);
  Value mlen = tensor::DimOp::create(b, loc, mems[0], 0);
  Value klen = arith::AddIOp::create(b, loc, mlen, qlen);
  Value pos = PosEmbOp::create(b, loc, tensorType({dyn, m.dModel}),
                               param("pos_emb.inv_freq"), klen, clampLen);
  pos = dropout(pos, m.dropout, kStreamPosEmb);

  SmallVector<Value> hids = {h};
  func::FuncOp layerFn = emitLayerFunction(module);
  for (int64_t l = 0; l < m.nLayer; ++l) {
    SmallVector<Value> args = {h, pos, mems[l], memLen, sameLength};
    if (hasDropout())
      args.append(
          {dropoutSeed, dropoutOffset, training,
           arith::ConstantIntOp::create(b, loc, layerStreamBase(l), 64)});
    args.append(layerParams(l));
    h = func::CallOp::create(b, loc, layerFn, args).getResult(0);
    hids.push_back(h);
  }

  // core_out = self.drop(core_out) before the softmax; hids keep the
  // undropped output for the memory.
  Value nll = loss(dropout(h, m.dropout, kStreamOutput), target);

  // Official _update_mems: cat(mems[l], hids[l])[-mem_len:], detached.
  SmallVector<Value> returned = {nll};
  for (int64_t l = 0; l <= m.nLayer; ++l) {
    Value cat = ConcatMemOp::create(b, loc, memType, mems[l], hids[l]);
    Value last = TakeLastOp::create(b, loc, memType, cat, memLen);
    returned.push_back(StopGradientOp::create(b, loc, last));
  }
  func::ReturnOp::create(b, loc, returned);
}

FailureOr<OwningOpRef<ModuleOp>>
mlir::txl::buildSegmentModule(MLIRContext &context, const ModelConfig &config) {
  context.loadDialect<TxlDialect, func::FuncDialect, arith::ArithDialect,
                      tensor::TensorDialect>();
  Location loc = FileLineColLoc::get(&context, config.fileName, 1, 1);
  // parseModelConfig reports this at the key; a configuration built by
  // other means still gets the error.
  if (config.model.dModel % 2 != 0) {
    emitError(loc) << "[model] d_model must be even for the sinusoid "
                      "position embedding";
    return failure();
  }
  OpBuilder b(&context);
  OwningOpRef<ModuleOp> module = ModuleOp::create(b, loc, config.modelName);
  SegmentEmitter(b, loc, config).emit(*module);
  return module;
}

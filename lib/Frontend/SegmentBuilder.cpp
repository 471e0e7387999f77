//===- SegmentBuilder.cpp - Model file -> txl segment function ---*- C++ -*-===//
//
// Mirrors the official pytorch/mem_transformer.py (commit 44781ed):
// AdaptiveEmbedding scaled by sqrt(d_model), then per attn_type
// PositionalEmbedding over distances klen-1 ... 0 and n_layer
// RelPartialLearnableDecoderLayer (0), RelLearnableDecoderLayer with the
// learned r_emb / r_bias tables (1), or DecoderLayer with MultiHeadAttn over
// inputs carrying absolute sinusoids (2) or learned per-layer rows (3), and
// the output softmax, with nn.Dropout wherever MemTransformerLM puts it (a
// txl.dropout that is the identity unless the `training` argument is set).
// attn_type 0's score is written as the paper's four terms and a rel_shift;
// fusion is a pass, not a frontend decision. Tied parameters (tie_weight,
// tie_projs) are one function argument used in both places.
//
//===----------------------------------------------------------------------===//

#include "txl/Frontend/SegmentBuilder.h"

#include "txl/IR/TxlOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
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

/// The parameters of one decoder layer, relative to `layers.<l>.`, in
/// argument order (also the order of @decoder_layer's parameter arguments):
/// RelPartialLearnableDecoderLayer (attn_type 0: qkv_net and r_net),
/// RelLearnableDecoderLayer (1: qkv_net, the positions are model-level
/// tables) or DecoderLayer with MultiHeadAttn (2 and 3: q_net and kv_net).
static SmallVector<std::pair<std::string, SmallVector<int64_t>>>
layerParamSpecs(const ModelSection &m) {
  int64_t hd = m.nHead * m.dHead;
  SmallVector<std::pair<std::string, SmallVector<int64_t>>> specs;
  if (m.attnType <= 1)
    specs.push_back({"dec_attn.qkv_net.weight", {3 * hd, m.dModel}});
  else
    specs.append({{"dec_attn.q_net.weight", {hd, m.dModel}},
                  {"dec_attn.kv_net.weight", {2 * hd, m.dModel}}});
  if (m.attnType == 0)
    specs.push_back({"dec_attn.r_net.weight", {hd, m.dModel}});
  specs.append({{"dec_attn.o_net.weight", {m.dModel, hd}},
                {"dec_attn.layer_norm.weight", {m.dModel}},
                {"dec_attn.layer_norm.bias", {m.dModel}},
                {"pos_ff.CoreNet.0.weight", {m.dInner, m.dModel}},
                {"pos_ff.CoreNet.0.bias", {m.dInner}},
                {"pos_ff.CoreNet.3.weight", {m.dModel, m.dInner}},
                {"pos_ff.CoreNet.3.bias", {m.dModel}},
                {"pos_ff.layer_norm.weight", {m.dModel}},
                {"pos_ff.layer_norm.bias", {m.dModel}}});
  return specs;
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
  // MemTransformerLM._create_params, per attn_type.
  int64_t maxKlen = config.maxKlen();
  switch (m.attnType) {
  case 0:
    add("pos_emb.inv_freq", {m.dModel / 2}, /*trainable=*/false);
    if (!m.untieR) {
      add("r_w_bias", {m.nHead, m.dHead});
      add("r_r_bias", {m.nHead, m.dHead});
    }
    break;
  case 1:
    add("r_emb", {m.nLayer, maxKlen, m.nHead, m.dHead});
    add("r_w_bias", {m.nLayer, m.nHead, m.dHead});
    add("r_bias", {m.nLayer, maxKlen, m.nHead});
    break;
  case 2:
    add("pos_emb.inv_freq", {m.dModel / 2}, /*trainable=*/false);
    break;
  default:
    add("r_emb", {m.nLayer, maxKlen, m.nHead, m.dHead});
    break;
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
  // Al-Rfou et al. (2018) §2.2-2.3: objective "alrfou"'s own heads, one
  // pair per layer (the last layer's next-character head is the crit).
  if (config.train.isAlRfou())
    for (int64_t l = 0; l < m.nLayer; ++l)
      for (StringRef head : {kAuxNextHead, kAuxNext2Head}) {
        if (head == kAuxNextHead && l == m.nLayer - 1)
          continue;
        std::string prefix = auxHeadName(l, head);
        add(prefix + ".weight", {m.nToken, m.dModel}).trainingOnly = true;
        add(prefix + ".bias", {m.nToken}).trainingOnly = true;
      }
  return params;
}

std::string mlir::txl::auxHeadName(int64_t layer, StringRef head) {
  return ("aux_heads." + Twine(layer) + "." + head).str();
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

  /// Which forward emit() builds (SegmentBuilder.h): @segment, objective
  /// "alrfou"'s training forward @segment_train, @segment_log_probs, or
  /// the key/value-cache forms @segment_kv and @segment_log_probs_kv.
  enum class Kind { Segment, AlRfouTrain, LogProbs, SegmentKv, LogProbsKv };
  /// Emits the forward of `kind` into `module`.
  void emit(ModuleOp module, Kind kind = Kind::Segment);
  /// Emits @segment_r_head_k (SegmentBuilder.h) into `module`.
  void emitRHeadK(ModuleOp module);

private:
  Value param(StringRef name) { return params.lookup(name); }
  RankedTensorType tensorType(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, b.getF32Type());
  }
  Value linear(Value x, Value w, Value bias = nullptr);
  Value layerNorm(Value x, StringRef prefix);
  /// Columns [c·hd, (c+1)·hd) of `heads` [len, batch, k·hd] (the official
  /// torch.chunk(..., k, -1)[c]), rows [start, start + len), viewed per
  /// head: [len, batch, n_head, d_head].
  Value headsChunk(Value heads, int64_t c, OpFoldResult start,
                   OpFoldResult len);
  /// [mem; h] along the positions (the official `torch.cat([mems, w], 0)`).
  Value concatMemory(Value mem, Value h) {
    int64_t dyn = ShapedType::kDynamic;
    return ConcatMemOp::create(b, loc, tensorType({dyn, dyn, m.dModel}), mem,
                               h);
  }
  /// The attention's common tail for every attn_type: `scores` [qlen,
  /// klen, batch, n_head] through the scaled masked softmax and dropatt,
  /// applied to `v` [klen, batch, n_head, d_head], then o_net, self.drop,
  /// the residual with `h` [qlen, batch, d_model] and LayerNorm (post-norm).
  Value attend(Value h, Value scores, Value v, StringRef attn);
  /// The key/value cache of one layer in @decoder_layer_kv: windows
  /// [klen, batch, n_head·d_head] of the memory rows' projected keys and
  /// values in their first mlen rows, room for the segment's in the last
  /// qlen, and the layer's r_head_k [klen, n_head·d_head] in; attention()
  /// sets newK and newV to the windows with the segment's rows inserted.
  struct KvCache {
    Value kWindow, vWindow, rHeadK;
    Value newK, newV;
  };
  /// attn_type 0: RelPartialLearnableMultiHeadAttn.forward plus its
  /// residual + LayerNorm. With `kv`, `pos` and `mem` are unused: the
  /// memory rows' keys and values and r_head_k come from the cache, and
  /// only h's rows are projected.
  Value attention(Value h, Value pos, Value mem, StringRef prefix,
                  KvCache *kv = nullptr);
  /// attn_type 1: RelLearnableMultiHeadAttn.forward (Shaw et al.) plus its
  /// residual + LayerNorm; `clampLen` is the run's clamp_len (i64).
  Value learnableAttention(Value h, Value clampLen, Value mem);
  /// attn_type 2 and 3: MultiHeadAttn.forward over `mem` (already carrying
  /// its positions) and `h`, plus its residual + LayerNorm.
  Value absoluteAttention(Value h, Value mem);
  /// An i64 tensor [rows, cols] whose element (p, c) is `rowOf(p)` (index
  /// in, index out) in every column c: row indices for a txl.embedding,
  /// which then also broadcasts the gathered rows over the batch columns.
  Value rowIndices(OpFoldResult rows, OpFoldResult cols,
                   function_ref<Value(OpBuilder &, Location, Value)> rowOf);
  /// Rows `rowOf(p)` of `table` [n, d] for p < rows, broadcast over `cols`
  /// columns: [rows, cols, d] (a gather whose adjoint sums into the table).
  Value gatherRows(Value table, OpFoldResult rows, OpFoldResult cols,
                   function_ref<Value(OpBuilder &, Location, Value)> rowOf);
  Value feedForward(Value h, StringRef prefix);
  Value embedding(Value data);
  /// `x` through nn.Dropout(rate) at site `stream` (relative to the current
  /// stream base); `x` itself when the rate is 0. `batchDim`: the dimension
  /// of `x` holding the batch columns, whose masks are drawn by global
  /// column (txl.dropout's column); -1 for a tensor every column shares
  /// (the official pos_emb [klen, 1, d_model]: one mask for the batch).
  Value dropout(Value x, double rate, int64_t stream, int64_t batchDim = 1);
  /// True when the model drops anything (dropout or dropatt > 0); only then
  /// does @decoder_layer take the dropout arguments.
  bool hasDropout() const { return m.dropout > 0.0 || m.dropatt > 0.0; }
  /// Emits `@decoder_layer`: one RelPartialLearnableDecoderLayer whose
  /// parameters are arguments, so every layer calls the same function.
  func::FuncOp emitLayerFunction(ModuleOp module);
  /// Emits `@decoder_layer_kv` (SegmentBuilder.h), attn_type 0 in eval mode.
  func::FuncOp emitKvLayerFunction(ModuleOp module);
  /// Makes the layer parameters (layerParamNames, from argument
  /// `firstParam` of the layer function `fn` on) the parameters looked up
  /// by name, and marks each argument with its `txl.param` name.
  void bindLayerParams(func::FuncOp fn, unsigned firstParam);
  /// The same for a segment-level function whose first arguments are the
  /// model's parameters `table` (getParameterTable order), with their tied
  /// aliases.
  void bindModelParams(func::FuncOp fn, ArrayRef<ParamSpec> table);
  /// The parameter arguments of @decoder_layer for layer `layer` (after h,
  /// the positional argument of attn_type 0 and 1, mem, mem_len,
  /// same_length and, with dropout, dropout_seed, dropout_offset,
  /// dropout_column, training and stream_base); for attn_type 1, the layer's
  /// slices of the model-level tables.
  SmallVector<Value> layerParams(int64_t layer);
  /// Their types, the same for every layer.
  SmallVector<Type> layerParamTypes();
  /// The crit (official ProjectedAdaptiveLogSoftmax) as operands: the
  /// output layers (one sliced by cluster when div_val = 1), the
  /// projections when there are any, the cluster parameters when there are
  /// tail clusters, and cutoff_ends [0, cutoffs..., n_token]. `plain`: one
  /// cluster and no projection, a single nn.Linear.
  struct OutputLayer {
    SmallVector<int64_t> ends;
    SmallVector<Value> weights, biases, projs;
    Value clusterWeight, clusterBias;
    bool plain = false;
  };
  OutputLayer outputLayer();
  Value loss(Value h, Value target);
  /// Every token's log-probability at every position of `h` [qlen, batch,
  /// d_model]: [qlen, batch, n_token] (the crit's distribution: txl.log_softmax
  /// of the plain layer's logits, or txl.adaptive_log_softmax).
  Value logProbabilities(Value h);
  /// A full-softmax head's per-token NLL [qlen, batch] of `target` from
  /// `h` [qlen, batch, d_model] through aux_heads.<layer>.<head>.
  Value auxHeadNll(Value h, Value target, int64_t layer, StringRef head);
  /// The parameter under `name` or, when tied, under the name it is tied to.
  Value tiedParam(StringRef name);

  OpBuilder &b;
  Location loc;
  const ModelConfig &config;
  const ModelSection &m;
  llvm::StringMap<Value> params;
  llvm::StringMap<std::string> aliases; ///< tied name -> parameter name
  Value memLen, sameLength;
  /// Set while emitting the key/value-cache functions, which evaluate only:
  /// dropout() is then the identity.
  bool evalOnly = false;
  /// The dropout arguments: i64 seed, offset and column (the global batch
  /// column of the segment's first), i1 training, and the i64 stream base
  /// of the current layer (null in @segment).
  Value dropoutSeed, dropoutOffset, dropoutColumn, training, streamBase;
};

} // namespace

Value SegmentEmitter::linear(Value x, Value w, Value bias) {
  auto xType = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> shape(xType.getShape());
  shape.back() = cast<RankedTensorType>(w.getType()).getDimSize(0);
  return LinearOp::create(b, loc, tensorType(shape), x, w, bias);
}

Value SegmentEmitter::dropout(Value x, double rate, int64_t stream,
                              int64_t batchDim) {
  if (rate == 0.0 || evalOnly)
    return x;
  bool byColumn = batchDim >= 0;
  return DropoutOp::create(b, loc, x, dropoutSeed, dropoutOffset, training,
                           streamBase, byColumn ? dropoutColumn : Value(),
                           b.getF64FloatAttr(rate), b.getI64IntegerAttr(stream),
                           byColumn ? b.getI64IntegerAttr(batchDim)
                                    : IntegerAttr());
}

Value SegmentEmitter::layerNorm(Value x, StringRef prefix) {
  // torch.nn.LayerNorm default eps, as the official code uses.
  return LayerNormOp::create(b, loc, x.getType(), x,
                             param((prefix + "layer_norm.weight").str()),
                             param((prefix + "layer_norm.bias").str()),
                             b.getF32FloatAttr(1e-5f));
}

Value SegmentEmitter::headsChunk(Value heads, int64_t c, OpFoldResult start,
                                 OpFoldResult len) {
  int64_t hd = m.nHead * m.dHead;
  int64_t dyn = ShapedType::kDynamic;
  OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
  OpFoldResult bsz = tensor::getMixedSize(b, loc, heads, 1);
  Value slice = tensor::ExtractSliceOp::create(
      b, loc, heads,
      SmallVector<OpFoldResult>{start, zero, b.getIndexAttr(c * hd)},
      SmallVector<OpFoldResult>{len, bsz, b.getIndexAttr(hd)},
      SmallVector<OpFoldResult>(3, one));
  SmallVector<OpFoldResult> outShape = {len, bsz, b.getIndexAttr(m.nHead),
                                        b.getIndexAttr(m.dHead)};
  return tensor::ExpandShapeOp::create(
      b, loc, tensorType({dyn, dyn, m.nHead, m.dHead}), slice,
      SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}}, outShape);
}

Value SegmentEmitter::attend(Value h, Value scores, Value v, StringRef attn) {
  float scale = 1.0f / std::sqrt(static_cast<float>(m.dHead));
  Value probs = MaskedSoftmaxOp::create(b, loc, scores, memLen, sameLength,
                                        b.getF32FloatAttr(scale));
  // attn_prob = self.dropatt(attn_prob), [qlen, klen, batch, n_head]
  probs = dropout(probs, m.dropatt, kStreamDropatt, /*batchDim=*/2);
  int64_t dyn = ShapedType::kDynamic;
  Value attnVec = AttnApplyOp::create(
      b, loc, tensorType({dyn, dyn, m.nHead, m.dHead}), probs, v);
  Value flat = tensor::CollapseShapeOp::create(
      b, loc, attnVec, SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}});
  // attn_out = self.drop(self.o_net(attn_vec))
  Value attnOut = dropout(linear(flat, param((attn + "o_net.weight").str())),
                          m.dropout, kStreamAttnOut);
  Value sum = AddOp::create(b, loc, h, attnOut);
  return m.preLnorm ? sum : layerNorm(sum, attn);
}

/// RelPartialLearnableMultiHeadAttn.forward plus its residual + LayerNorm.
Value SegmentEmitter::attention(Value h, Value pos, Value mem, StringRef prefix,
                                KvCache *kv) {
  int64_t dyn = ShapedType::kDynamic;
  std::string attn = (prefix + "dec_attn.").str();
  OpFoldResult zero = b.getIndexAttr(0);
  OpFoldResult qlen = tensor::getMixedSize(b, loc, h, 0);
  Value q, k, v, rHeadK;
  OpFoldResult klen;
  if (kv) {
    // qkv_net of h's rows only (LayerNorm and qkv_net are row-wise, so the
    // memory rows' keys and values are those the cache holds); K and V are
    // [k_mem; k of h], the official cat's rows in the same order.
    int64_t hd = m.nHead * m.dHead;
    Value x = m.preLnorm ? layerNorm(h, attn) : h;
    Value wHeads = linear(x, param(attn + "qkv_net.weight"));
    q = headsChunk(wHeads, 0, zero, qlen);
    // The caller's window holds the memory rows' keys (values) and room
    // for the segment's: they are written into its last qlen rows, in
    // place, and the attention reads the whole window (no copy of the
    // memory rows).
    auto cached = [&](Value window, int64_t c, Value &updated) {
      OpFoldResult one = b.getIndexAttr(1);
      OpFoldResult bsz = tensor::getMixedSize(b, loc, wHeads, 1);
      Value rows = tensor::ExtractSliceOp::create(
          b, loc, wHeads,
          SmallVector<OpFoldResult>{zero, zero, b.getIndexAttr(c * hd)},
          SmallVector<OpFoldResult>{qlen, bsz, b.getIndexAttr(hd)},
          SmallVector<OpFoldResult>(3, one));
      klen = tensor::getMixedSize(b, loc, window, 0);
      Value mlen = arith::SubIOp::create(
          b, loc, tensor::DimOp::create(b, loc, window, 0),
          tensor::DimOp::create(b, loc, h, 0));
      updated = tensor::InsertSliceOp::create(
          b, loc, rows, window, SmallVector<OpFoldResult>{mlen, zero, zero},
          SmallVector<OpFoldResult>{qlen, bsz, b.getIndexAttr(hd)},
          SmallVector<OpFoldResult>(3, one));
      return headsChunk(updated, 0, zero, klen);
    };
    k = cached(kv->kWindow, 1, kv->newK);
    v = cached(kv->vWindow, 2, kv->newV);
    rHeadK = kv->rHeadK;
  } else {
    Value cat = concatMemory(mem, h);
    Value x = m.preLnorm ? layerNorm(cat, attn) : cat;
    Value wHeads = linear(x, param(attn + "qkv_net.weight"));
    rHeadK = linear(pos, param(attn + "r_net.weight"));
    OpFoldResult mlen = tensor::getMixedSize(b, loc, mem, 0);
    klen = tensor::getMixedSize(b, loc, cat, 0);
    q = headsChunk(wHeads, 0, mlen, qlen);
    k = headsChunk(wHeads, 1, zero, klen);
    v = headsChunk(wHeads, 2, zero, klen);
  }
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
  return attend(h, scores, v, attn);
}

Value SegmentEmitter::rowIndices(
    OpFoldResult rows, OpFoldResult cols,
    function_ref<Value(OpBuilder &, Location, Value)> rowOf) {
  int64_t dyn = ShapedType::kDynamic;
  SmallVector<Value> extents;
  SmallVector<int64_t> shape;
  for (OpFoldResult size : {rows, cols}) {
    std::optional<int64_t> c = getConstantIntValue(size);
    shape.push_back(c ? *c : dyn);
    if (!c)
      extents.push_back(cast<Value>(size));
  }
  auto type = RankedTensorType::get(shape, b.getI64Type());
  return tensor::GenerateOp::create(
      b, loc, type, extents, [&](OpBuilder &nb, Location nl, ValueRange ivs) {
        Value row = rowOf(nb, nl, ivs[0]);
        tensor::YieldOp::create(
            nb, nl, arith::IndexCastOp::create(nb, nl, nb.getI64Type(), row));
      });
}

Value SegmentEmitter::gatherRows(
    Value table, OpFoldResult rows, OpFoldResult cols,
    function_ref<Value(OpBuilder &, Location, Value)> rowOf) {
  int64_t d = cast<RankedTensorType>(table.getType()).getDimSize(1);
  Value indices = rowIndices(rows, cols, rowOf);
  auto shape = cast<RankedTensorType>(indices.getType()).getShape();
  return EmbeddingOp::create(b, loc, tensorType({shape[0], shape[1], d}), table,
                             indices);
}

/// RelLearnableMultiHeadAttn.forward (Shaw et al. 2018, the official
/// attn_type 1) plus its residual + LayerNorm: AC = (q + r_w_bias)·k and
/// BD = rel_shift(q·r_emb + r_bias), where r_emb [klen, n_head, d_head] and
/// r_bias [klen, n_head] are rows of the layer's tables chosen as the
/// official code does: the last klen rows, the table's first row repeated in
/// front when klen is longer, and only the last clamp_len rows of the table
/// counted when clamp_len > 0. Row p of klen holds distance klen - 1 - p, so
/// after the shift entry (i, j) holds distance mlen + i - j.
Value SegmentEmitter::learnableAttention(Value h, Value clampLen, Value mem) {
  int64_t dyn = ShapedType::kDynamic;
  std::string attn = "dec_attn.";
  Value cat = concatMemory(mem, h);
  Value x = m.preLnorm ? layerNorm(cat, attn) : cat;
  Value wHeads = linear(x, param(attn + "qkv_net.weight"));
  OpFoldResult mlen = tensor::getMixedSize(b, loc, mem, 0);
  OpFoldResult qlen = tensor::getMixedSize(b, loc, h, 0);
  OpFoldResult klen = tensor::getMixedSize(b, loc, cat, 0);
  Value q = headsChunk(wHeads, 0, mlen, qlen);
  Value k = headsChunk(wHeads, 1, b.getIndexAttr(0), klen);
  Value v = headsChunk(wHeads, 2, b.getIndexAttr(0), klen);

  // The rows the table holds for this run: max_klen, or min(clamp_len,
  // max_klen) when clamp_len > 0 (official `self.r_emb[i][-clamp_len:]`).
  int64_t maxKlen = config.maxKlen();
  Value maxRows = arith::ConstantIndexOp::create(b, loc, maxKlen);
  Value clamp = arith::IndexCastOp::create(b, loc, b.getIndexType(), clampLen);
  Value zero64 = arith::ConstantIntOp::create(b, loc, 0, 64);
  Value clamped = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt,
                                        clampLen, zero64);
  Value held = arith::SelectOp::create(
      b, loc, clamped, arith::MinSIOp::create(b, loc, clamp, maxRows), maxRows);
  Value klenValue = tensor::DimOp::create(b, loc, cat, 0);
  // Position p of klen reads row max_klen - min(klen - p, held).
  auto rowOf = [&](OpBuilder &nb, Location nl, Value p) -> Value {
    Value fromEnd = arith::SubIOp::create(nb, nl, klenValue, p);
    return arith::SubIOp::create(nb, nl, maxRows,
                                 arith::MinSIOp::create(nb, nl, fromEnd, held));
  };
  OpFoldResult one = b.getIndexAttr(1);
  // [klen, 1, n_head * d_head] -> [klen, n_head, d_head].
  Value rEmbFlat = tensor::CollapseShapeOp::create(
      b, loc, param("r_emb"), SmallVector<ReassociationIndices>{{0}, {1, 2}});
  Value rows = gatherRows(rEmbFlat, klen, one, rowOf);
  Value rEmb = tensor::ExpandShapeOp::create(
      b, loc, tensorType({dyn, m.nHead, m.dHead}),
      tensor::CollapseShapeOp::create(
          b, loc, rows, SmallVector<ReassociationIndices>{{0, 1}, {2}}),
      SmallVector<ReassociationIndices>{{0}, {1, 2}},
      SmallVector<OpFoldResult>{klen, b.getIndexAttr(m.nHead),
                                b.getIndexAttr(m.dHead)});
  // [klen, 1, n_head] -> [klen, n_head, 1]: the bias as a one-wide key.
  Value biasRows = gatherRows(param("r_bias"), klen, one, rowOf);
  Value rBias = tensor::ExpandShapeOp::create(
      b, loc, tensorType({dyn, m.nHead, 1}),
      tensor::CollapseShapeOp::create(
          b, loc, biasRows, SmallVector<ReassociationIndices>{{0, 1}, {2}}),
      SmallVector<ReassociationIndices>{{0}, {1, 2}},
      SmallVector<OpFoldResult>{klen, b.getIndexAttr(m.nHead), one});

  auto scoreType = tensorType({dyn, dyn, dyn, m.nHead});
  // AC: (q + r_w_bias)·k, as terms (a) and (c).
  Value termA = AttnScoreOp::create(b, loc, scoreType, q, k);
  Value u = BroadcastHeadBiasOp::create(b, loc, param("r_w_bias"), q);
  Value termC = AttnScoreOp::create(b, loc, scoreType, u, k);
  // B_ = q·r_emb; D_ = r_bias[j, n], written as the score of a query of
  // ones [qlen, batch, n_head, 1] against the bias as a one-wide key, so
  // that it is an ordinary (differentiable) score term.
  Value termB = AttnScoreOp::create(b, loc, scoreType, q, rEmb);
  SmallVector<Value> onesSizes = {tensor::DimOp::create(b, loc, h, 0),
                                  tensor::DimOp::create(b, loc, h, 1)};
  Value oneF = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(1.0f));
  Value ones = tensor::SplatOp::create(
      b, loc, tensorType({dyn, dyn, m.nHead, 1}), oneF, onesSizes);
  Value termD = AttnScoreOp::create(b, loc, scoreType, ones, rBias);
  Value bd = RelShiftOp::create(b, loc, AddOp::create(b, loc, termB, termD));
  Value scores = AddOp::create(b, loc, AddOp::create(b, loc, termA, termC), bd);
  return attend(h, scores, v, attn);
}

/// MultiHeadAttn.forward (attn_type 2 and 3) plus its residual + LayerNorm:
/// queries from `h` itself (also with pre_lnorm, as the official code
/// does), keys and values from [mem; h], layer-normed first with pre_lnorm;
/// scaled, masked softmax; no positional term (the positions were added to
/// the inputs).
Value SegmentEmitter::absoluteAttention(Value h, Value mem) {
  int64_t dyn = ShapedType::kDynamic;
  std::string attn = "dec_attn.";
  Value cat = concatMemory(mem, h);
  Value c = m.preLnorm ? layerNorm(cat, attn) : cat;
  Value qHeads = linear(h, param(attn + "q_net.weight"));
  Value kvHeads = linear(c, param(attn + "kv_net.weight"));
  OpFoldResult qlen = tensor::getMixedSize(b, loc, h, 0);
  OpFoldResult klen = tensor::getMixedSize(b, loc, cat, 0);
  OpFoldResult zero = b.getIndexAttr(0);
  Value q = headsChunk(qHeads, 0, zero, qlen);
  Value k = headsChunk(kvHeads, 0, zero, klen);
  Value v = headsChunk(kvHeads, 1, zero, klen);
  auto scoreType = tensorType({dyn, dyn, dyn, m.nHead});
  Value scores = AttnScoreOp::create(b, loc, scoreType, q, k);
  return attend(h, scores, v, attn);
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

SegmentEmitter::OutputLayer SegmentEmitter::outputLayer() {
  OutputLayer out;
  out.ends = cutoffEnds(m);
  size_t clusters = out.ends.size() - 1;
  bool sliced = m.divVal == 1;
  bool projected = !sliced || config.dEmbed() != m.dModel;
  out.plain = clusters == 1 && !projected;
  for (size_t i = 0; i < (sliced ? 1 : clusters); ++i) {
    out.weights.push_back(
        tiedParam(clusterName("crit.out_layers.", i, ".weight")));
    out.biases.push_back(param(clusterName("crit.out_layers.", i, ".bias")));
  }
  if (projected)
    for (size_t i = 0; i < clusters; ++i)
      out.projs.push_back(tiedParam(clusterName("crit.out_projs.", i)));
  if (clusters > 1) {
    out.clusterWeight = param("crit.cluster_weight");
    out.clusterBias = param("crit.cluster_bias");
  }
  return out;
}

/// Official ProjectedAdaptiveLogSoftmax.forward: a plain linear + NLL when
/// there are no clusters and no projection, else txl.adaptive_nll.
Value SegmentEmitter::loss(Value h, Value target) {
  int64_t dyn = ShapedType::kDynamic;
  auto nllType = tensorType({dyn, dyn});
  OutputLayer out = outputLayer();
  if (out.plain) {
    Value logits = linear(h, out.weights[0], out.biases[0]);
    return NllOp::create(b, loc, nllType, logits, target);
  }
  return AdaptiveNllOp::create(b, loc, nllType, h, target, out.weights,
                               out.biases, out.projs, out.clusterWeight,
                               out.clusterBias,
                               b.getDenseI64ArrayAttr(out.ends));
}

/// @decoder_layer's parameter arguments: the layer's own parameters, then
/// the attention's model-level parameters under their model-level names:
/// the u/v biases (attn_type 0) or the layer's rows of r_emb, r_w_bias and
/// r_bias (attn_type 1).
static SmallVector<std::string> layerParamNames(const ModelSection &m) {
  SmallVector<std::string> names;
  for (auto &[name, shape] : layerParamSpecs(m))
    names.push_back(name);
  if (m.attnType == 0)
    names.append({"r_w_bias", "r_r_bias"});
  else if (m.attnType == 1)
    names.append({"r_emb", "r_w_bias", "r_bias"});
  return names;
}

SmallVector<Type> SegmentEmitter::layerParamTypes() {
  SmallVector<Type> types;
  for (auto &[name, shape] : layerParamSpecs(m))
    types.push_back(tensorType(shape));
  int64_t maxKlen = config.maxKlen();
  if (m.attnType == 0)
    types.append(2, tensorType({m.nHead, m.dHead}));
  else if (m.attnType == 1)
    types.append({tensorType({maxKlen, m.nHead, m.dHead}),
                  tensorType({m.nHead, m.dHead}),
                  tensorType({maxKlen, m.nHead})});
  return types;
}

void SegmentEmitter::bindModelParams(func::FuncOp fn,
                                     ArrayRef<ParamSpec> table) {
  // Set at once, as for the layer function.
  SmallVector<DictionaryAttr> argAttrs(fn.getNumArguments(),
                                       b.getDictionaryAttr({}));
  Block &entry = fn.getBody().front();
  for (auto [i, p] : llvm::enumerate(table)) {
    NamedAttrList attrs;
    attrs.append("txl.param", b.getStringAttr(p.name));
    if (!p.trainable)
      attrs.append("txl.buffer", b.getUnitAttr());
    argAttrs[i] = attrs.getDictionary(b.getContext());
    params[p.name] = entry.getArgument(i);
    for (const std::string &alias : p.aliases)
      aliases[alias] = p.name;
  }
  fn.setAllArgAttrs(argAttrs);
}

void SegmentEmitter::bindLayerParams(func::FuncOp fn, unsigned firstParam) {
  params = {};
  // All argument attributes at once: one setArgAttr per argument rebuilds
  // (and uniques) the whole list each time, quadratic in n_layer.
  SmallVector<DictionaryAttr> argAttrs(fn.getNumArguments(),
                                       b.getDictionaryAttr({}));
  Block &entry = fn.getBody().front();
  for (auto [i, name] : llvm::enumerate(layerParamNames(m))) {
    argAttrs[firstParam + i] =
        b.getDictionaryAttr(b.getNamedAttr("txl.param", b.getStringAttr(name)));
    params[name] = entry.getArgument(firstParam + i);
  }
  fn.setAllArgAttrs(argAttrs);
}

void mlir::txl::setNoInline(Operation *fn) {
  Builder b(fn->getContext());
  fn->setAttr("passthrough", b.getArrayAttr({b.getStringAttr("noinline")}));
}

void mlir::txl::setRuntimeEntry(Operation *fn, StringRef entry) {
  Builder b(fn->getContext());
  fn->setAttr("llvm.emit_c_interface", b.getUnitAttr());
  fn->setAttr(TxlDialect::kEntryAttrName, b.getStringAttr(entry));
}

func::FuncOp SegmentEmitter::emitLayerFunction(ModuleOp module) {
  int64_t dyn = ShapedType::kDynamic;
  auto hType = tensorType({dyn, dyn, m.dModel});
  Type i64 = b.getI64Type();
  // h, the positional argument (attn_type 0: the sinusoids [klen, d_model];
  // 1: clamp_len), mem, mem_len, same_length.
  SmallVector<Type> inputs = {hType};
  if (m.attnType == 0)
    inputs.push_back(tensorType({dyn, m.dModel}));
  else if (m.attnType == 1)
    inputs.push_back(i64);
  inputs.append({hType, b.getIndexType(), b.getI1Type()});
  if (hasDropout()) // dropout_seed, dropout_offset, dropout_column,
                    // training, stream_base
    inputs.append({i64, i64, i64, b.getI1Type(), i64});
  unsigned firstParam = inputs.size();
  inputs.append(layerParamTypes());
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
        outerColumn = dropoutColumn, outerTraining = training;
  bindLayerParams(fn, firstParam);
  unsigned next = 0;
  Value h = entry->getArgument(next++);
  Value positional = m.attnType <= 1 ? entry->getArgument(next++) : Value();
  Value mem = entry->getArgument(next++);
  memLen = entry->getArgument(next++);
  sameLength = entry->getArgument(next++);
  if (hasDropout()) {
    dropoutSeed = entry->getArgument(next++);
    dropoutOffset = entry->getArgument(next++);
    dropoutColumn = entry->getArgument(next++);
    training = entry->getArgument(next++);
    streamBase = entry->getArgument(next++);
  }
  switch (m.attnType) {
  case 0:
    h = attention(h, positional, mem, "");
    break;
  case 1:
    h = learnableAttention(h, positional, mem);
    break;
  default:
    h = absoluteAttention(h, mem);
    break;
  }
  h = feedForward(h, "");
  func::ReturnOp::create(b, loc, h);
  params = std::move(outer);
  memLen = outerMemLen;
  sameLength = outerSameLength;
  dropoutSeed = outerSeed;
  dropoutOffset = outerOffset;
  dropoutColumn = outerColumn;
  training = outerTraining;
  streamBase = nullptr;
  return fn;
}

func::FuncOp SegmentEmitter::emitKvLayerFunction(ModuleOp module) {
  int64_t dyn = ShapedType::kDynamic, hd = m.nHead * m.dHead;
  auto hType = tensorType({dyn, dyn, m.dModel});
  auto kvType = tensorType({dyn, dyn, hd});
  // h, r_head_k, k_mem, v_mem, mem_len, same_length, the parameters.
  SmallVector<Type> inputs = {hType,  tensorType({dyn, hd}), kvType,
                              kvType, b.getIndexType(),      b.getI1Type()};
  unsigned firstParam = inputs.size();
  inputs.append(layerParamTypes());
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(module.getBody());
  auto fn =
      func::FuncOp::create(b, loc, kKvLayerFunctionName,
                           b.getFunctionType(inputs, {hType, kvType, kvType}));
  fn.setPrivate();
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);

  llvm::StringMap<Value> outer = std::move(params);
  Value outerMemLen = memLen, outerSameLength = sameLength;
  bindLayerParams(fn, firstParam);
  KvCache kv;
  kv.rHeadK = entry->getArgument(1);
  kv.kWindow = entry->getArgument(2);
  kv.vWindow = entry->getArgument(3);
  memLen = entry->getArgument(4);
  sameLength = entry->getArgument(5);
  Value h = attention(entry->getArgument(0), Value(), Value(), "", &kv);
  h = feedForward(h, "");
  func::ReturnOp::create(b, loc, ValueRange{h, kv.newK, kv.newV});
  params = std::move(outer);
  memLen = outerMemLen;
  sameLength = outerSameLength;
  return fn;
}

/// Row `layer` of a model-level table [n_layer, rest...]: [rest...].
static Value layerRow(OpBuilder &b, Location loc, Value table, int64_t layer) {
  auto type = cast<RankedTensorType>(table.getType());
  int64_t rank = type.getRank();
  SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0));
  offsets[0] = b.getIndexAttr(layer);
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1)};
  for (int64_t d = 1; d < rank; ++d)
    sizes.push_back(b.getIndexAttr(type.getDimSize(d)));
  auto rowType = RankedTensorType::get(type.getShape().drop_front(),
                                       type.getElementType());
  return tensor::ExtractSliceOp::create(
      b, loc, rowType, table, offsets, sizes,
      SmallVector<OpFoldResult>(rank, b.getIndexAttr(1)));
}

SmallVector<Value> SegmentEmitter::layerParams(int64_t layer) {
  std::string prefix = "layers." + std::to_string(layer) + ".";
  SmallVector<Value> values;
  for (const std::string &name : layerParamNames(m)) {
    if (m.attnType == 1 &&
        (name == "r_emb" || name == "r_w_bias" || name == "r_bias"))
      values.push_back(layerRow(b, loc, param(name), layer));
    else if (name == "r_w_bias" || name == "r_r_bias")
      values.push_back(m.untieR ? param(prefix + "dec_attn." + name)
                                : param(name));
    else
      values.push_back(param(prefix + name));
  }
  return values;
}

void SegmentEmitter::emit(ModuleOp module, Kind kind) {
  const bool alrfouTraining = kind == Kind::AlRfouTrain;
  const bool logProbs = kind == Kind::LogProbs || kind == Kind::LogProbsKv;
  const bool withKv = kind == Kind::SegmentKv || kind == Kind::LogProbsKv;
  evalOnly = withKv;
  int64_t dyn = ShapedType::kDynamic, hd = m.nHead * m.dHead;
  SmallVector<ParamSpec> table = getParameterTable(config);
  auto tokenType = RankedTensorType::get({dyn, dyn}, b.getI64Type());
  auto memType = tensorType({dyn, dyn, m.dModel});
  auto kvType = tensorType({dyn, dyn, hd});
  Type i64 = b.getI64Type();

  SmallVector<Type> inputs;
  for (const ParamSpec &p : table)
    inputs.push_back(tensorType(p.shape));
  inputs.push_back(tokenType); // data
  if (!logProbs)
    inputs.push_back(tokenType); // target
  // The key/value-cache forms read no memory: what they need of it is its
  // keys and values.
  for (int64_t l = 0; l <= m.nLayer && !withKv; ++l)
    inputs.push_back(memType);
  if (withKv) { // k, v windows, r_head_k of every layer; mem_len, same_length
    inputs.append(2 * m.nLayer, kvType);
    inputs.append(m.nLayer, tensorType({dyn, hd}));
    inputs.append({i64, i64});
  } else {
    inputs.append({i64, i64, i64}); // mem_len, clamp_len, same_length
    // dropout_seed, dropout_offset, dropout_column, training
    inputs.append({i64, i64, i64, i64});
  }
  if (alrfouTraining) // loss_weights, position_weights
    inputs.append({tensorType({2 * m.nLayer}), tensorType({dyn})});
  SmallVector<Type> results = {logProbs ? tensorType({dyn, dyn, m.nToken})
                                        : tensorType({dyn, dyn})};
  for (int64_t l = 0; l <= m.nLayer; ++l)
    results.push_back(memType);
  if (withKv) // every layer's k and v windows, updated in place
    results.append(2 * m.nLayer, kvType);
  if (alrfouTraining) // the loss's three parts
    results.append(3, tensorType({dyn, dyn}));

  b.setInsertionPointToEnd(module.getBody());
  StringRef name = alrfouTraining             ? kAlRfouTrainFunctionName
                   : kind == Kind::LogProbs   ? kLogProbsFunctionName
                   : kind == Kind::SegmentKv  ? kKvSegmentFunctionName
                   : kind == Kind::LogProbsKv ? kKvLogProbsFunctionName
                                              : kSegmentFunctionName;
  auto fn =
      func::FuncOp::create(b, loc, name, b.getFunctionType(inputs, results));
  // The training forward is only differentiated: its @segment_grad keeps
  // the C interface and gets the backward's entry (txl-generate-backward).
  if (alrfouTraining)
    fn->setAttr("llvm.emit_c_interface", b.getUnitAttr());
  else
    setRuntimeEntry(fn, kind == Kind::LogProbs     ? kLogProbsEntryName
                        : kind == Kind::SegmentKv  ? kKvSegmentEntryName
                        : kind == Kind::LogProbsKv ? kKvLogProbsEntryName
                                                   : kSegmentEntryName);
  if (alrfouTraining)
    fn.setPrivate();
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);

  bindModelParams(fn, table);
  unsigned arg = table.size();
  Value data = entry->getArgument(arg++);
  Value target = logProbs ? Value() : entry->getArgument(arg++);
  SmallVector<Value> mems;
  for (int64_t l = 0; l <= m.nLayer && !withKv; ++l)
    mems.push_back(entry->getArgument(arg++));
  SmallVector<Value> kWindows, vWindows, rHeadKs;
  if (withKv)
    for (SmallVector<Value> *list : {&kWindows, &vWindows, &rHeadKs})
      for (int64_t l = 0; l < m.nLayer; ++l)
        list->push_back(entry->getArgument(arg++));
  memLen = arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                      entry->getArgument(arg++));
  Value clampLen = withKv ? Value() : entry->getArgument(arg++);
  Value zero64 = arith::ConstantIntOp::create(b, loc, 0, 64);
  sameLength = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                     entry->getArgument(arg++), zero64);
  if (!withKv) {
    dropoutSeed = entry->getArgument(arg++);
    dropoutOffset = entry->getArgument(arg++);
    dropoutColumn = entry->getArgument(arg++);
    training = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                     entry->getArgument(arg++), zero64);
  }
  Value lossWeights, positionWeights;
  if (alrfouTraining) {
    lossWeights = entry->getArgument(arg++);
    positionWeights = entry->getArgument(arg++);
  }

  Value qlen = tensor::DimOp::create(b, loc, data, 0);
  Value bsz = tensor::DimOp::create(b, loc, data, 1);
  // objective "alrfou": target rows [0, qlen) are the next characters,
  // rows [1, qlen + 1) the ones after them.
  Value target2;
  if (alrfouTraining) {
    auto rowsFrom = [&](int64_t first) {
      OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
      return tensor::ExtractSliceOp::create(
          b, loc, tokenType, target,
          SmallVector<OpFoldResult>{b.getIndexAttr(first), zero},
          SmallVector<OpFoldResult>{qlen, bsz},
          SmallVector<OpFoldResult>{one, one});
    };
    target2 = rowsFrom(1);
    target = rowsFrom(0);
  }
  // The key/value-cache forms' windows hold klen rows.
  Value mlen =
      withKv ? arith::SubIOp::create(
                   b, loc, tensor::DimOp::create(b, loc, kWindows[0], 0), qlen)
                   .getResult()
             : tensor::DimOp::create(b, loc, mems[0], 0).getResult();
  Value klen = arith::AddIOp::create(b, loc, mlen, qlen);
  Value wordEmb = embedding(data);
  Value h, pos;
  switch (m.attnType) {
  case 0:
    // core_out = self.drop(word_emb), also the memory of layer 0; the
    // sinusoids over distances klen-1 ... 0 go to every layer (through
    // r_head_k, from the caller, in the key/value-cache forms).
    h = dropout(wordEmb, m.dropout, kStreamWordEmb);
    if (withKv)
      break;
    pos = PosEmbOp::create(b, loc, tensorType({dyn, m.dModel}),
                           param("pos_emb.inv_freq"), klen, clampLen);
    // pos_emb [klen, 1, d_model] officially: one mask for every column.
    pos = dropout(pos, m.dropout, kStreamPosEmb, /*batchDim=*/-1);
    break;
  case 2: {
    // core_out = self.drop(word_emb + pos_emb[-qlen:]): the sinusoids of
    // positions klen-1 ... 0 (clamped), the last qlen rows for the segment;
    // the first mlen rows are added to layer 0's memory below.
    pos = PosEmbOp::create(b, loc, tensorType({dyn, m.dModel}),
                           param("pos_emb.inv_freq"), klen, clampLen);
    Value segmentRows =
        gatherRows(pos, qlen, bsz, [&](OpBuilder &nb, Location nl, Value i) {
          return arith::AddIOp::create(nb, nl, mlen, i).getResult();
        });
    h = dropout(AddOp::create(b, loc, wordEmb, segmentRows), m.dropout,
                kStreamWordEmb);
    break;
  }
  default:
    // attn_type 1 and 3: core_out = self.drop(word_emb).
    h = dropout(wordEmb, m.dropout, kStreamWordEmb);
    break;
  }

  // hids: the memory of every layer; layerOutputs: what each layer
  // returned (attn_type 3 replaces hids[l] with its input plus positions).
  SmallVector<Value> hids = {h}, layerOutputs, keptK, keptV, newMems;
  // Official _update_mems: cat(mems[l], hids[l])[-mem_len:], detached. The
  // key/value-cache forms return hids[l] alone; their caller appends it.
  auto newMemory = [&](Value mem, Value hid) -> Value {
    Value cat = ConcatMemOp::create(b, loc, memType, mem, hid);
    Value last = TakeLastOp::create(b, loc, memType, cat, memLen);
    return StopGradientOp::create(b, loc, last);
  };
  StringRef layerName = withKv ? kKvLayerFunctionName : kLayerFunctionName;
  auto layerFn = module.lookupSymbol<func::FuncOp>(layerName);
  if (!layerFn)
    layerFn = withKv ? emitKvLayerFunction(module) : emitLayerFunction(module);
  for (int64_t l = 0; l < m.nLayer; ++l) {
    if (withKv) {
      SmallVector<Value> args = {h,           rHeadKs[l], kWindows[l],
                                 vWindows[l], memLen,     sameLength};
      args.append(layerParams(l));
      auto call = func::CallOp::create(b, loc, layerFn, args);
      h = call.getResult(0);
      // Written in place: the runtime reads the segment's rows there.
      for (auto [list, window, result] : {std::tuple(&keptK, kWindows[l], 1),
                                          std::tuple(&keptV, vWindows[l], 2)})
        list->push_back(bufferization::MaterializeInDestinationOp::create(
                            b, loc, call.getResult(result), window)
                            .getResult());
      hids.push_back(h);
      layerOutputs.push_back(h);
      continue;
    }
    Value mem = mems[l];
    if (m.attnType == 2 && l == 0) {
      // Official `mems_i += pos_emb[:mlen]` on layer 0 (without changing
      // the memory kept; docs/attention-types.md).
      mem = AddOp::create(
          b, loc, mem,
          gatherRows(pos, mlen, bsz,
                     [](OpBuilder &, Location, Value p) { return p; }));
    } else if (m.attnType == 3) {
      // Official attn_type 3: `core_out += self.r_emb[i][-qlen:]` and
      // `mems_i += cur_emb`: row max(0, max_klen - klen + p) of r_emb[l]
      // for position p of [mem; h]. The memory kept for layer l is h with
      // its rows added, as the official in-place add leaves it.
      Value table = tensor::CollapseShapeOp::create(
          b, loc, layerRow(b, loc, param("r_emb"), l),
          SmallVector<ReassociationIndices>{{0}, {1, 2}});
      Value maxRows = arith::ConstantIndexOp::create(b, loc, config.maxKlen());
      Value zero = arith::ConstantIndexOp::create(b, loc, 0);
      auto rowAt = [&](Value first) {
        return [&, first](OpBuilder &nb, Location nl, Value p) -> Value {
          // max(0, max_klen - klen + first + p)
          Value row = arith::AddIOp::create(
              nb, nl, arith::SubIOp::create(nb, nl, maxRows, klen).getResult(),
              arith::AddIOp::create(nb, nl, first, p).getResult());
          return arith::MaxSIOp::create(nb, nl, row, zero);
        };
      };
      mem =
          AddOp::create(b, loc, mem, gatherRows(table, mlen, bsz, rowAt(zero)));
      h = AddOp::create(b, loc, h, gatherRows(table, qlen, bsz, rowAt(mlen)));
      hids[l] = h;
    }
    SmallVector<Value> args = {h};
    if (m.attnType == 0)
      args.push_back(pos);
    else if (m.attnType == 1)
      args.push_back(clampLen);
    args.append({mem, memLen, sameLength});
    if (hasDropout())
      args.append(
          {dropoutSeed, dropoutOffset, dropoutColumn, training,
           arith::ConstantIntOp::create(b, loc, layerStreamBase(l), 64)});
    args.append(layerParams(l));
    h = func::CallOp::create(b, loc, layerFn, args).getResult(0);
    hids.push_back(h);
    layerOutputs.push_back(h);
    // Layer l's new memory right after its call, not after the last layer:
    // hids[l] then lives across no later layer's call for it (issue #48).
    newMems.push_back(newMemory(mems[l], hids[l]));
  }
  if (!withKv)
    newMems.push_back(newMemory(mems[m.nLayer], hids[m.nLayer]));

  // core_out = self.drop(core_out) before the softmax; hids keep the
  // undropped output for the memory.
  Value output = dropout(h, m.dropout, kStreamOutput);
  Value nll = logProbs ? logProbabilities(output) : loss(output, target);
  SmallVector<Value> parts;
  if (alrfouTraining) {
    // Every layer's heads (§2.2, §2.3): the intermediate layers' read the
    // layer's output, the last layer's the dropped output as the crit.
    SmallVector<Value> nextNll, next2Nll;
    for (int64_t l = 0; l < m.nLayer; ++l) {
      bool last = l == m.nLayer - 1;
      Value hl = last ? output : layerOutputs[l];
      nextNll.push_back(last ? nll : auxHeadNll(hl, target, l, kAuxNextHead));
      next2Nll.push_back(auxHeadNll(hl, target2, l, kAuxNext2Head));
    }
    Type nllType = nll.getType();
    auto mix = [&](ValueRange terms, int64_t first) -> Value {
      return LossMixOp::create(b, loc, nllType, lossWeights, positionWeights,
                               terms, b.getI64IntegerAttr(first));
    };
    SmallVector<Value> all(nextNll);
    all.append(next2Nll);
    Value main = mix(nll, m.nLayer - 1);
    Value layers = m.nLayer > 1
                       ? mix(ArrayRef(nextNll).drop_back(), 0)
                       : ScaleOp::create(b, loc, main, b.getF32FloatAttr(0.0f))
                             .getResult();
    Value targets = mix(next2Nll, m.nLayer);
    for (Value part : {main, layers, targets})
      parts.push_back(StopGradientOp::create(b, loc, part));
    nll = mix(all, 0);
  }

  SmallVector<Value> returned = {nll};
  returned.append(withKv ? hids : newMems);
  returned.append(keptK);
  returned.append(keptV);
  returned.append(parts);
  func::ReturnOp::create(b, loc, returned);
}

void SegmentEmitter::emitRHeadK(ModuleOp module) {
  int64_t dyn = ShapedType::kDynamic, hd = m.nHead * m.dHead;
  SmallVector<ParamSpec> table = getParameterTable(config);
  Type i64 = b.getI64Type();
  SmallVector<Type> inputs;
  for (const ParamSpec &p : table)
    inputs.push_back(tensorType(p.shape));
  inputs.append({i64, i64}); // klen, clamp_len
  SmallVector<Type> results(m.nLayer, tensorType({dyn, hd}));
  b.setInsertionPointToEnd(module.getBody());
  auto fn = func::FuncOp::create(b, loc, kRHeadKFunctionName,
                                 b.getFunctionType(inputs, results));
  setRuntimeEntry(fn, kRHeadKEntryName);
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  bindModelParams(fn, table);
  Value klen = arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                          entry->getArgument(table.size()));
  Value clampLen = entry->getArgument(table.size() + 1);
  // The official pos_emb over distances klen-1 ... 0 (clamped), through
  // every layer's r_net: r_head_k, which depends on klen and clamp_len only.
  Value pos = PosEmbOp::create(b, loc, tensorType({dyn, m.dModel}),
                               param("pos_emb.inv_freq"), klen, clampLen);
  SmallVector<Value> rHeadKs;
  for (int64_t l = 0; l < m.nLayer; ++l)
    rHeadKs.push_back(linear(
        pos, param("layers." + std::to_string(l) + ".dec_attn.r_net.weight")));
  func::ReturnOp::create(b, loc, rHeadKs);
}

Value SegmentEmitter::logProbabilities(Value h) {
  int64_t dyn = ShapedType::kDynamic;
  Type resultType = tensorType({dyn, dyn, m.nToken});
  OutputLayer out = outputLayer();
  if (out.plain) {
    Value logits = linear(h, out.weights[0], out.biases[0]);
    return LogSoftmaxOp::create(b, loc, resultType, logits);
  }
  return AdaptiveLogSoftmaxOp::create(
      b, loc, resultType, h, out.weights, out.biases, out.projs,
      out.clusterWeight, out.clusterBias, b.getDenseI64ArrayAttr(out.ends));
}

bool mlir::txl::hasLogProbsFunction(const ModelConfig &config) {
  // Every output layer the frontend builds has its distribution: one
  // full softmax, or the projected adaptive one.
  (void)config;
  return true;
}

Value SegmentEmitter::auxHeadNll(Value h, Value target, int64_t layer,
                                 StringRef head) {
  // One private function for every head, called 2·n_layer - 1 times, so
  // that it (and its adjoint) is compiled once, like @decoder_layer.
  int64_t dyn = ShapedType::kDynamic;
  ModuleOp module = h.getParentRegion()->getParentOfType<ModuleOp>();
  auto fn = module.lookupSymbol<func::FuncOp>(kAuxHeadFunctionName);
  if (!fn) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(module.getBody());
    Type inputs[] = {h.getType(), target.getType(),
                     tensorType({m.nToken, m.dModel}), tensorType({m.nToken})};
    fn = func::FuncOp::create(
        b, loc, kAuxHeadFunctionName,
        b.getFunctionType(inputs, {tensorType({dyn, dyn})}));
    fn.setPrivate();
    setNoInline(fn);
    Block *entry = fn.addEntryBlock();
    b.setInsertionPointToStart(entry);
    Value logits = linear(entry->getArgument(0), entry->getArgument(2),
                          entry->getArgument(3));
    func::ReturnOp::create(b, loc,
                           NllOp::create(b, loc, tensorType({dyn, dyn}), logits,
                                         entry->getArgument(1))
                               .getResult());
  }
  std::string prefix = auxHeadName(layer, head);
  Value args[] = {h, target, param(prefix + ".weight"),
                  param(prefix + ".bias")};
  return func::CallOp::create(b, loc, fn, args).getResult(0);
}

FailureOr<OwningOpRef<ModuleOp>>
mlir::txl::buildSegmentModule(MLIRContext &context, const ModelConfig &config) {
  context.loadDialect<TxlDialect, func::FuncDialect, arith::ArithDialect,
                      tensor::TensorDialect>();
  Location loc = FileLineColLoc::get(&context, config.fileName, 1, 1);
  // parseModelConfig reports this at the key; a configuration built by
  // other means still gets the error.
  int64_t attnType = config.model.attnType;
  if ((attnType == 0 || attnType == 2) && config.model.dModel % 2 != 0) {
    emitError(loc) << "[model] d_model must be even for the sinusoid "
                      "position embedding";
    return failure();
  }
  OpBuilder b(&context);
  OwningOpRef<ModuleOp> module = ModuleOp::create(b, loc, config.modelName);
  SegmentEmitter(b, loc, config).emit(*module);
  if (config.train.isAlRfou())
    SegmentEmitter(b, loc, config)
        .emit(*module, SegmentEmitter::Kind::AlRfouTrain);
  if (hasLogProbsFunction(config))
    SegmentEmitter(b, loc, config)
        .emit(*module, SegmentEmitter::Kind::LogProbs);
  return module;
}

bool mlir::txl::hasKvCacheFunctions(const ModelConfig &config) {
  return config.model.attnType == 0;
}

LogicalResult mlir::txl::buildKvCacheFunctions(ModuleOp module,
                                               const ModelConfig &config) {
  if (!hasKvCacheFunctions(config))
    return emitError(module.getLoc())
           << "the key/value cache needs attn_type 0, the model has attn_type "
           << config.model.attnType;
  module.getContext()->loadDialect<bufferization::BufferizationDialect>();
  OpBuilder b(module.getContext());
  Location loc = module.getLoc();
  SegmentEmitter(b, loc, config).emitRHeadK(module);
  SegmentEmitter(b, loc, config).emit(module, SegmentEmitter::Kind::SegmentKv);
  if (hasLogProbsFunction(config))
    SegmentEmitter(b, loc, config)
        .emit(module, SegmentEmitter::Kind::LogProbsKv);
  return success();
}

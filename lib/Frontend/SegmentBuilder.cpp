//===- SegmentBuilder.cpp - Model file -> txl segment function ---*- C++ -*-===//
//
// Mirrors the official pytorch/mem_transformer.py (commit 44781ed) in eval
// mode: AdaptiveEmbedding (div_val = 1, no cutoffs) scaled by sqrt(d_model),
// PositionalEmbedding over distances klen-1 ... 0, n_layer
// RelPartialLearnableDecoderLayer, and the output softmax. The attention
// score is written as the paper's four terms and a rel_shift; fusion is a
// pass, not a frontend decision.
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

SmallVector<ParamSpec> mlir::txl::getParameterTable(const ModelConfig &config) {
  const ModelSection &m = config.model;
  int64_t hd = m.nHead * m.dHead;
  SmallVector<ParamSpec> params;
  auto add = [&](std::string name, SmallVector<int64_t> shape,
                 bool trainable = true, std::string alias = "") {
    params.push_back({std::move(name), std::move(shape), trainable,
                      std::move(alias)});
  };
  add("word_emb.emb_layers.0.weight", {m.nToken, config.dEmbed()}, true,
      m.tieWeight ? "crit.out_layers.0.weight" : "");
  add("pos_emb.inv_freq", {m.dModel / 2}, /*trainable=*/false);
  add("r_w_bias", {m.nHead, m.dHead});
  add("r_r_bias", {m.nHead, m.dHead});
  for (int64_t l = 0; l < m.nLayer; ++l) {
    std::string p = "layers." + std::to_string(l) + ".";
    add(p + "dec_attn.qkv_net.weight", {3 * hd, m.dModel});
    add(p + "dec_attn.r_net.weight", {hd, m.dModel});
    add(p + "dec_attn.o_net.weight", {m.dModel, hd});
    add(p + "dec_attn.layer_norm.weight", {m.dModel});
    add(p + "dec_attn.layer_norm.bias", {m.dModel});
    add(p + "pos_ff.CoreNet.0.weight", {m.dInner, m.dModel});
    add(p + "pos_ff.CoreNet.0.bias", {m.dInner});
    add(p + "pos_ff.CoreNet.3.weight", {m.dModel, m.dInner});
    add(p + "pos_ff.CoreNet.3.bias", {m.dModel});
    add(p + "pos_ff.layer_norm.weight", {m.dModel});
    add(p + "pos_ff.layer_norm.bias", {m.dModel});
  }
  if (!m.tieWeight)
    add("crit.out_layers.0.weight", {m.nToken, config.dEmbed()});
  add("crit.out_layers.0.bias", {m.nToken});
  return params;
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

  OpBuilder &b;
  Location loc;
  const ModelConfig &config;
  const ModelSection &m;
  llvm::StringMap<Value> params;
  Value memLen, sameLength;
};

} // namespace

Value SegmentEmitter::linear(Value x, Value w, Value bias) {
  auto xType = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> shape(xType.getShape());
  shape.back() = cast<RankedTensorType>(w.getType()).getDimSize(0);
  return LinearOp::create(b, loc, tensorType(shape), x, w, bias);
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
  Value attnVec = AttnApplyOp::create(b, loc, q.getType(), probs, v);
  Value flat = tensor::CollapseShapeOp::create(
      b, loc, attnVec, SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}});
  Value attnOut = linear(flat, param(attn + "o_net.weight"));
  Value sum = AddOp::create(b, loc, h, attnOut);
  return m.preLnorm ? sum : layerNorm(sum, attn);
}

/// PositionwiseFF: Linear - ReLU - Linear, residual, LayerNorm (pre or post).
Value SegmentEmitter::feedForward(Value h, StringRef prefix) {
  std::string ff = (prefix + "pos_ff.").str();
  Value x = m.preLnorm ? layerNorm(h, ff) : h;
  Value inner = ReluOp::create(
      b, loc,
      linear(x, param(ff + "CoreNet.0.weight"), param(ff + "CoreNet.0.bias")));
  Value core =
      linear(inner, param(ff + "CoreNet.3.weight"), param(ff + "CoreNet.3.bias"));
  Value sum = AddOp::create(b, loc, core, h);
  return m.preLnorm ? sum : layerNorm(sum, ff);
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
  for (const ParamSpec &p : table) {
    fn.setArgAttr(arg, "txl.param", b.getStringAttr(p.name));
    params[p.name] = entry->getArgument(arg++);
  }
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

  // Word embedding scaled by sqrt(d_model) (official emb_scale = d_proj**0.5).
  Value emb = EmbeddingOp::create(b, loc, memType, param("word_emb.emb_layers.0.weight"), data);
  Value h = ScaleOp::create(b, loc, emb,
                            b.getF32FloatAttr(std::sqrt(static_cast<float>(m.dModel))));
  Value qlen = tensor::DimOp::create(b, loc, data, 0);
  Value mlen = tensor::DimOp::create(b, loc, mems[0], 0);
  Value klen = arith::AddIOp::create(b, loc, mlen, qlen);
  Value pos = PosEmbOp::create(b, loc, tensorType({dyn, m.dModel}),
                               param("pos_emb.inv_freq"), klen, clampLen);

  SmallVector<Value> hids = {h};
  for (int64_t l = 0; l < m.nLayer; ++l) {
    std::string prefix = "layers." + std::to_string(l) + ".";
    h = attention(h, pos, mems[l], prefix);
    h = feedForward(h, prefix);
    hids.push_back(h);
  }

  Value outWeight = m.tieWeight ? param("word_emb.emb_layers.0.weight")
                                : param("crit.out_layers.0.weight");
  Value logits = linear(h, outWeight, param("crit.out_layers.0.bias"));
  Value nll = NllOp::create(b, loc, tensorType({dyn, dyn}), logits, target);

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
  if (!config.model.cutoffs.empty()) {
    emitError(loc) << "[model] cutoffs: adaptive input/softmax is not "
                      "supported yet (cutoffs must be [])";
    return failure();
  }
  if (config.dEmbed() != config.model.dModel) {
    emitError(loc) << "[model] d_embed: a projected embedding (d_embed != "
                      "d_model) is not supported yet";
    return failure();
  }
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

//===- TrainingBuilder.cpp - Optimizer step and lr schedule -----*- C++ -*-===//
//
// One training update of the official pytorch/train.py, as functions of the
// model module:
//
//   torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
//   optimizer.step()
//   train_step += 1; <step-wise lr annealing>
//
// The update ops (txl.adam_update, ...) read each gradient times the
// clipping coefficient, so clipped gradients are never written. The schedule
// is scalar f64 arithmetic, the Python floats of train.py and torch's
// schedulers in the same order of operations. [train] clip_nonemb is not
// consulted: train.py declares the flag but always clips every parameter.
//
//===----------------------------------------------------------------------===//

#include "txl/Frontend/TrainingBuilder.h"

#include "txl/Frontend/SegmentBuilder.h"
#include "txl/IR/TxlOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::txl;

SmallVector<StringRef, 2> mlir::txl::getOptimizerStateNames(StringRef optim) {
  if (optim == "adam")
    return {"exp_avg", "exp_avg_sq"};
  if (optim == "sgd")
    return {"momentum_buffer"};
  if (optim == "adagrad")
    return {"sum"};
  return {};
}

namespace {

/// Part `part` of `parts` of a flat tensor of n elements: its range
/// [n·part/parts, n·(part+1)/parts), so that the parts 0..parts−1 cover
/// every element once.
struct Part {
  OpFoldResult offset, size;
};

/// Emits the training functions of one model file.
class TrainingEmitter {
public:
  TrainingEmitter(OpBuilder &b, Location loc, const ModelConfig &config)
      : b(b), loc(loc), config(config), train(config.train) {}

  void emitSquaredNormPart(ModuleOp module);
  void emitOptimizerUpdate(ModuleOp module);
  void emitDeviceGradSquaredNorm(ModuleOp module, int64_t perKernel,
                                 int64_t sums);
  void emitAccumulateGrads(ModuleOp module);
  void emitDeviceOptimizerStep(ModuleOp module);
  void emitLearningRate(ModuleOp module);

private:
  Value f32(double v) {
    return arith::ConstantOp::create(
        b, loc, b.getF32FloatAttr(static_cast<float>(v)));
  }
  Value f64(double v) {
    return arith::ConstantOp::create(b, loc, b.getF64FloatAttr(v));
  }
  Value i64(int64_t v) { return arith::ConstantIntOp::create(b, loc, v, 64); }

  SmallVector<ParamSpec> trainedParams();
  Part partOf(Value t, Value part, Value parts);
  Value extractPart(const Part &fp, Value t);
  Value insertPart(const Part &fp, Value v, Value into);
  SmallVector<Type> flatTypes(ArrayRef<ParamSpec> trained);
  Value gradScale(Value totalNorm);
  SmallVector<Value> update(Value param, Value grad, ValueRange states,
                            Value lr, Value step, Value scale);
  SmallVector<Value> updatePart(Value param, Value grad, ValueRange states,
                                Value lr, Value step, Value scale, Value part,
                                Value parts);
  std::pair<Value, Value> clipScale(Value partials, Value invLossScale);
  /// The gradients' factor for the clipping norm `totalNorm` (unscaled):
  /// clip_grad_norm_'s coefficient times `invLossScale`.
  Value clipScaleOfNorm(Value totalNorm, Value invLossScale);
  Value warmupOrAfter(Value step, Value stepF, Value lr, Value maxStepF);
  Value invSqrt(Value step, Value stepF);

  OpBuilder &b;
  Location loc;
  const ModelConfig &config;
  const TrainSection &train;
};

} // namespace

/// The gradient scale of clip_grad_norm_(max_norm = clip): in f32,
/// min(clip * (1 / (total_norm + 1e-6)), 1). torch evaluates the Python
/// `max_norm / tensor` as `tensor.reciprocal() * max_norm`; the clamp
/// (torch.clamp(max=1.0)) keeps a NaN norm NaN. Without clipping the scale
/// is 1: torch would scale every gradient by 0 for clip = 0, which
/// train.py never means.
Value TrainingEmitter::gradScale(Value totalNorm) {
  if (!(train.clip > 0.0))
    return f32(1.0);
  Value denom = arith::AddFOp::create(b, loc, totalNorm, f32(1e-6));
  Value coef = arith::MulFOp::create(
      b, loc, arith::DivFOp::create(b, loc, f32(1.0), denom), f32(train.clip));
  return arith::MinimumFOp::create(b, loc, coef, f32(1.0));
}

/// One torch.optim update of `param` with the defaults official train.py
/// leaves: Adam betas (0.9, 0.999) and eps 1e-8, SGD momentum = mom,
/// Adagrad eps 1e-10. Returns the new parameter, then the new states.
SmallVector<Value> TrainingEmitter::update(Value param, Value grad,
                                           ValueRange states, Value lr,
                                           Value step, Value scale) {
  if (train.optim == "adam") {
    auto op = AdamUpdateOp::create(b, loc, param, grad, states[0], states[1],
                                   lr, step, scale, llvm::APFloat(0.9),
                                   llvm::APFloat(0.999), llvm::APFloat(1e-8));
    return SmallVector<Value>(op->getResults());
  }
  if (train.optim == "sgd") {
    auto op = SgdUpdateOp::create(b, loc, param, grad, states[0], lr, scale,
                                  llvm::APFloat(train.mom));
    return SmallVector<Value>(op->getResults());
  }
  auto op = AdagradUpdateOp::create(b, loc, param, grad, states[0], lr, scale,
                                    llvm::APFloat(1e-10));
  return SmallVector<Value>(op->getResults());
}

Part TrainingEmitter::partOf(Value t, Value part, Value parts) {
  auto type = cast<RankedTensorType>(t.getType());
  Value count =
      type.isDynamicDim(0)
          ? tensor::DimOp::create(b, loc, t, 0).getResult()
          : arith::ConstantIndexOp::create(b, loc, type.getDimSize(0))
                .getResult();
  auto bound = [&](Value k) -> Value {
    return arith::DivUIOp::create(b, loc,
                                  arith::MulIOp::create(b, loc, count, k),
                                  parts);
  };
  Value lo = bound(part);
  Value hi = bound(arith::AddIOp::create(
      b, loc, part, arith::ConstantIndexOp::create(b, loc, 1)));
  return {lo, arith::SubIOp::create(b, loc, hi, lo).getResult()};
}

/// `fp`'s range of the flat `t` (of `t`'s length, as the part was made for).
Value TrainingEmitter::extractPart(const Part &fp, Value t) {
  return tensor::ExtractSliceOp::create(b, loc, t, {fp.offset}, {fp.size},
                                        {b.getIndexAttr(1)});
}

/// `v`, an updated part, written back at `fp`'s range of the flat `into`.
Value TrainingEmitter::insertPart(const Part &fp, Value v, Value into) {
  return tensor::InsertSliceOp::create(b, loc, v, into, {fp.offset},
                                       {fp.size}, {b.getIndexAttr(1)});
}

/// The flat type of each trainable parameter, tensor<numel x f32>: the
/// training functions see every tensor as its row-major elements, so that a
/// part of it is one slice (a reshape would make bufferization copy the
/// whole argument before writing a part of it in place).
SmallVector<Type> TrainingEmitter::flatTypes(ArrayRef<ParamSpec> trained) {
  SmallVector<Type> types;
  for (const ParamSpec &p : trained) {
    int64_t n = 1;
    for (int64_t d : p.shape)
      n *= d;
    types.push_back(RankedTensorType::get({n}, b.getF32Type()));
  }
  return types;
}

/// The trainable parameters' shapes, in parameter order, and their names.
SmallVector<ParamSpec> TrainingEmitter::trainedParams() {
  SmallVector<ParamSpec> trained;
  for (ParamSpec &p : getParameterTable(config))
    if (p.trainable)
      trained.push_back(std::move(p));
  return trained;
}

namespace {
/// The argument attributes of a function being built, set on it at once by
/// `apply`: one setArgAttr per argument rebuilds and uniques the whole list
/// each time, which made `txlc --emit=txl` quadratic in n_layer (2.7 GB at
/// 400 layers).
class ArgumentNames {
public:
  explicit ArgumentNames(func::FuncOp fn)
      : fn(fn), attrs(fn.getNumArguments()) {}

  /// Names argument `index` after parameter `name` under `role`.
  void set(size_t index, StringRef role, StringRef name) {
    attrs[index].set(role, StringAttr::get(fn.getContext(), name));
  }

  void apply() {
    SmallVector<DictionaryAttr> dicts;
    for (NamedAttrList &list : attrs)
      dicts.push_back(list.getDictionary(fn.getContext()));
    fn.setAllArgAttrs(dicts);
  }

private:
  func::FuncOp fn;
  SmallVector<NamedAttrList> attrs;
};
} // namespace

/// `part` and `parts` (i64 arguments) as indices.
static std::pair<Value, Value> partIndices(OpBuilder &b, Location loc,
                                           Value part, Value parts) {
  return {arith::IndexCastOp::create(b, loc, b.getIndexType(), part),
          arith::IndexCastOp::create(b, loc, b.getIndexType(), parts)};
}

/// Writes `value` to element `index` of the one shared output of `forall`
/// (built at `b`, inside its body), through a one-element slice, so that it
/// bufferizes to a store into the output's buffer: no allocation in the
/// kernel. Leaves `b` in the forall's terminator.
static void storeElement(OpBuilder &b, Location loc, scf::ForallOp forall,
                         Value index, Value value) {
  Value out = forall.getRegionIterArgs()[0];
  SmallVector<OpFoldResult> offsets = {index}, ones = {b.getIndexAttr(1)};
  Value slot = tensor::ExtractSliceOp::create(b, loc, out, offsets, ones, ones);
  Value one = tensor::InsertOp::create(
      b, loc, value, slot,
      ValueRange{arith::ConstantIndexOp::create(b, loc, 0)});
  b.setInsertionPointToStart(forall.getTerminator().getBody());
  tensor::ParallelInsertSliceOp::create(b, loc, one, out, offsets, ones, ones);
}

/// The CPU form's @squared_norm_part(%g: tensor<?xf32>, %part: i64,
/// %parts: i64) -> tensor<1xf32>: the sum of squares of part `part` of
/// `parts` of one flat gradient. The runtime calls it once per gradient and
/// adds the sums in parameter order, so that its code is compiled once,
/// whatever the number of parameters (n_layer times the layer's; issue #48,
/// item 5).
void TrainingEmitter::emitSquaredNormPart(ModuleOp module) {
  auto flat = RankedTensorType::get({ShapedType::kDynamic}, b.getF32Type());
  auto resultType = RankedTensorType::get({1}, b.getF32Type());
  b.setInsertionPointToEnd(module.getBody());
  auto fn = func::FuncOp::create(
      b, loc, kSquaredNormPartFunctionName,
      b.getFunctionType({flat, b.getI64Type(), b.getI64Type()}, {resultType}));
  setRuntimeEntry(fn, kSquaredNormPartEntryName);
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value g = entry->getArgument(0);
  auto [part, parts] =
      partIndices(b, loc, entry->getArgument(1), entry->getArgument(2));
  Value sq =
      SquaredNormOp::create(b, loc, extractPart(partOf(g, part, parts), g));
  func::ReturnOp::create(b, loc,
                         ValueRange{tensor::FromElementsOp::create(
                             b, loc, resultType, ValueRange{sq})});
}

/// Part `part` of `parts` of one parameter's update: the parameter, its
/// gradient and its states (flat, of one length) read over the part's
/// range, updated, and written back over it. Returns the new parameter,
/// then the new states, each materialized in the argument it replaces.
SmallVector<Value> TrainingEmitter::updatePart(Value param, Value grad,
                                               ValueRange states, Value lr,
                                               Value step, Value scale,
                                               Value part, Value parts) {
  // One range for the parameter, its gradient and its states.
  Part p = partOf(param, part, parts);
  SmallVector<Value> stateParts;
  for (Value state : states)
    stateParts.push_back(extractPart(p, state));
  SmallVector<Value> updated = update(extractPart(p, param),
                                      extractPart(p, grad), stateParts, lr,
                                      step, scale);
  SmallVector<Value> written;
  written.push_back(bufferization::MaterializeInDestinationOp::create(
                        b, loc, insertPart(p, updated[0], param), param)
                        .getResult());
  for (auto [s, state] : llvm::enumerate(states))
    written.push_back(bufferization::MaterializeInDestinationOp::create(
                          b, loc, insertPart(p, updated[1 + s], state), state)
                          .getResult());
  return written;
}

/// clip_grad_norm_'s total norm from the parts' sums of squares
/// (`partials`, tensor<?xf32>, added in order in f32) and the scale every
/// gradient read is multiplied by: the clipping coefficient times
/// `invLossScale`. The gradients arrive multiplied by the loss scale (1
/// unless dynamic loss scaling runs): the norm and every gradient read are
/// unscaled by its inverse, a power of two, so exactly.
Value TrainingEmitter::clipScaleOfNorm(Value totalNorm, Value invLossScale) {
  return arith::MulFOp::create(b, loc, gradScale(totalNorm), invLossScale);
}

std::pair<Value, Value> TrainingEmitter::clipScale(Value partials,
                                                   Value invLossScale) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value numPartials = tensor::DimOp::create(b, loc, partials, zero);
  Value sumSquares =
      scf::ForOp::create(
          b, loc, zero, numPartials, one, ValueRange{f32(0.0)},
          [&](OpBuilder &nb, Location l, Value k, ValueRange acc) {
            Value x = tensor::ExtractOp::create(nb, l, partials, ValueRange{k});
            scf::YieldOp::create(
                nb, l, ValueRange{arith::AddFOp::create(nb, l, acc[0], x)});
          })
          .getResult(0);
  Value totalNorm = arith::MulFOp::create(
      b, loc, math::SqrtOp::create(b, loc, sumSquares), invLossScale);
  return {totalNorm, clipScaleOfNorm(totalNorm, invLossScale)};
}

/// The CPU form's @optimizer_update(%p, %g, %state_0..%state_{S-1}:
/// tensor<?xf32>, %lr: f64, %step: i64, %inv_loss_scale: f32, %partials:
/// tensor<?xf32>, %part: i64, %parts: i64) -> (new %p, new states...):
/// part `part` of one parameter's update, clipped by the norm of
/// `partials`, written in place. The runtime calls it once per parameter,
/// so that the update is compiled once, whatever the number of parameters
/// (issue #48, item 5).
void TrainingEmitter::emitOptimizerUpdate(ModuleOp module) {
  size_t numStates = getOptimizerStateNames(train.optim).size();
  auto flat = RankedTensorType::get({ShapedType::kDynamic}, b.getF32Type());
  SmallVector<Type> inputs(2 + numStates, flat);
  inputs.append({b.getF64Type(), b.getI64Type(), b.getF32Type(), flat,
                 b.getI64Type(), b.getI64Type()});
  SmallVector<Type> results(1 + numStates, flat);
  b.setInsertionPointToEnd(module.getBody());
  auto fn = func::FuncOp::create(b, loc, kOptimizerUpdateFunctionName,
                                 b.getFunctionType(inputs, results));
  setRuntimeEntry(fn, kOptimizerUpdateEntryName);
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  auto args = entry->getArguments();
  size_t scalars = 2 + numStates;
  Value scale = clipScale(args[scalars + 3], args[scalars + 2]).second;
  auto [part, parts] =
      partIndices(b, loc, args[scalars + 4], args[scalars + 5]);
  SmallVector<Value> written =
      updatePart(args[0], args[1], args.slice(2, numStates), args[scalars],
                 args[scalars + 1], scale, part, parts);
  func::ReturnOp::create(b, loc, written);
}

void TrainingEmitter::emitDeviceGradSquaredNorm(ModuleOp module,
                                                int64_t perKernel,
                                                int64_t sums) {
  SmallVector<ParamSpec> trained = trainedParams();
  SmallVector<Type> inputs = flatTypes(trained);
  auto partialsType =
      RankedTensorType::get({ShapedType::kDynamic}, b.getF32Type());
  inputs.push_back(partialsType);

  b.setInsertionPointToEnd(module.getBody());
  auto fn = func::FuncOp::create(b, loc, kGradSquaredNormFunctionName,
                                 b.getFunctionType(inputs, {partialsType}));
  setRuntimeEntry(fn, kGradSquaredNormEntryName);
  ArgumentNames names(fn);
  for (auto [i, p] : llvm::enumerate(trained))
    names.set(i, "txl.grad", p.name);
  names.apply();
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value partials = entry->getArgument(trained.size());
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  const size_t groups =
      (trained.size() + size_t(perKernel) - 1) / size_t(perKernel);
  // partials = [groups * parts of level 1 | `sums` sums of them].
  Value allParts = arith::SubIOp::create(
      b, loc, tensor::DimOp::create(b, loc, partials, zero),
      arith::ConstantIndexOp::create(b, loc, sums));
  Value parts = arith::DivUIOp::create(
      b, loc, allParts, arith::ConstantIndexOp::create(b, loc, groups));
  // One work-item per part: part p sums the squares of elements p,
  // p + parts, ... of each gradient (neighbouring work-items read
  // neighbouring elements), each gradient's sum from 0 and then added to
  // the part's total in parameter order, as the CPU form adds its parts.
  // Gradients go in groups of `perKernel`, one scf.forall
  // (one kernel) each, group g writing partials[g * parts + p].
  Value result = partials;
  for (size_t g = 0; g < groups; ++g) {
    auto forall = scf::ForallOp::create(
        b, loc, ArrayRef<OpFoldResult>{OpFoldResult(parts)},
        ValueRange{result}, /*mapping=*/std::nullopt);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(forall.getBody());
    Value p = forall.getInductionVar(0);
    Value sum;
    for (size_t i = g * perKernel;
         i < std::min(trained.size(), (g + 1) * perKernel); ++i) {
      Value grad = entry->getArgument(i);
      Value count = arith::ConstantIndexOp::create(
          b, loc, cast<RankedTensorType>(grad.getType()).getDimSize(0));
      Value sq =
          scf::ForOp::create(
              b, loc, p, count, parts, ValueRange{f32(0.0)},
              [&](OpBuilder &lb, Location l, Value k, ValueRange acc) {
                Value x =
                    tensor::ExtractOp::create(lb, l, grad, ValueRange{k});
                Value x2 = arith::MulFOp::create(lb, l, x, x);
                scf::YieldOp::create(
                    lb, l, ValueRange{arith::AddFOp::create(lb, l, acc[0], x2)});
              })
              .getResult(0);
      sum = sum ? arith::AddFOp::create(b, loc, sum, sq).getResult() : sq;
    }
    Value slotIndex = arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(b, loc, arith::ConstantIndexOp::create(b, loc, g),
                              parts),
        p);
    storeElement(b, loc, forall, slotIndex, sum);
    result = forall.getResult(0);
  }
  // Level 2: the parts as [allParts / sums, sums], summed over the rows
  // (txl.sum_leading: on the GPU targets two kernels with a fixed order)
  // into the last `sums` entries, which the host reads.
  Value level1 = tensor::ExtractSliceOp::create(
      b, loc, result, ArrayRef<OpFoldResult>{b.getIndexAttr(0)},
      ArrayRef<OpFoldResult>{OpFoldResult(allParts)},
      ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
  auto rowsType =
      RankedTensorType::get({ShapedType::kDynamic, sums}, b.getF32Type());
  Value rows = tensor::ExpandShapeOp::create(
      b, loc, rowsType, level1, ArrayRef<ReassociationIndices>{{0, 1}},
      ArrayRef<OpFoldResult>{
          OpFoldResult(arith::DivUIOp::create(
                           b, loc, allParts,
                           arith::ConstantIndexOp::create(b, loc, sums))
                           .getResult()),
          OpFoldResult(b.getIndexAttr(sums))});
  Value columnSums = SumLeadingOp::create(
      b, loc, RankedTensorType::get({sums}, b.getF32Type()), rows);
  result = tensor::InsertSliceOp::create(
      b, loc, columnSums, result,
      ArrayRef<OpFoldResult>{OpFoldResult(allParts)},
      ArrayRef<OpFoldResult>{OpFoldResult(b.getIndexAttr(sums))},
      ArrayRef<OpFoldResult>{OpFoldResult(b.getIndexAttr(1))});
  func::ReturnOp::create(
      b, loc,
      ValueRange{bufferization::MaterializeInDestinationOp::create(
                     b, loc, result, partials)
                     .getResult()});
}

/// train.py's accumulation over batch chunks: chunk c's backward of
/// loss / batch_chunk adds into .grad, so each gradient becomes
/// part * scale for the first chunk and total + part * scale after (the
/// CPU session's loop, in the same order of operations). One scf.forall
/// per gradient, one work-item per element, written in place.
void TrainingEmitter::emitAccumulateGrads(ModuleOp module) {
  SmallVector<ParamSpec> trained = trainedParams();
  SmallVector<Type> flat = flatTypes(trained);
  size_t numParams = trained.size();
  // totals, parts, scale, first
  SmallVector<Type> inputs(flat);
  inputs.append(flat);
  inputs.append({b.getF32Type(), b.getI64Type()});

  b.setInsertionPointToEnd(module.getBody());
  auto fn = func::FuncOp::create(b, loc, kAccumulateGradsFunctionName,
                                 b.getFunctionType(inputs, flat));
  setRuntimeEntry(fn, kAccumulateGradsEntryName);
  ArgumentNames names(fn);
  for (auto [i, p] : llvm::enumerate(trained)) {
    names.set(i, "txl.grad", p.name);
    names.set(numParams + i, "txl.chunk_grad", p.name);
  }
  names.apply();
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value scale = entry->getArgument(2 * numParams);
  Value first =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                            entry->getArgument(2 * numParams + 1), i64(0));
  SmallVector<Value> returned;
  for (size_t i = 0; i < numParams; ++i) {
    Value total = entry->getArgument(i),
          part = entry->getArgument(numParams + i);
    int64_t count = cast<RankedTensorType>(flat[i]).getDimSize(0);
    auto forall = scf::ForallOp::create(
        b, loc, ArrayRef<OpFoldResult>{b.getIndexAttr(count)},
        ValueRange{total}, /*mapping=*/std::nullopt);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(forall.getBody());
    Value k = forall.getInductionVar(0);
    Value scaled = arith::MulFOp::create(
        b, loc, tensor::ExtractOp::create(b, loc, part, ValueRange{k}), scale);
    Value sum = arith::AddFOp::create(
        b, loc, tensor::ExtractOp::create(b, loc, total, ValueRange{k}),
        scaled);
    storeElement(b, loc, forall, k,
                 arith::SelectOp::create(b, loc, first, scaled, sum));
    b.setInsertionPointAfter(forall);
    returned.push_back(bufferization::MaterializeInDestinationOp::create(
                           b, loc, forall.getResult(0), total)
                           .getResult());
  }
  func::ReturnOp::create(b, loc, returned);
}

void TrainingEmitter::emitDeviceOptimizerStep(ModuleOp module) {
  SmallVector<ParamSpec> trained = trainedParams();
  SmallVector<StringRef, 2> stateNames = getOptimizerStateNames(train.optim);
  size_t numParams = trained.size(), numStates = stateNames.size();

  SmallVector<Type> paramTypes = flatTypes(trained);
  // params, grads, then each state list: the runtime ABI's order.
  SmallVector<Type> inputs;
  for (size_t list = 0; list < 2 + numStates; ++list)
    inputs.append(paramTypes);
  // lr, step, inv_loss_scale, the clipping norm, part, parts. The norm is
  // the host's (from @grad_squared_norm's parts, which it reads anyway to
  // skip a non-finite update): summing the parts in a kernel of one
  // work-item and reading that sum back cost a launch and a
  // synchronisation every update.
  inputs.append({b.getF64Type(), b.getI64Type(), b.getF32Type(), b.getF32Type(),
                 b.getI64Type(), b.getI64Type()});
  SmallVector<Type> results;
  for (size_t list = 0; list < 1 + numStates; ++list)
    results.append(paramTypes);

  b.setInsertionPointToEnd(module.getBody());
  auto fn = func::FuncOp::create(b, loc, kOptimizerStepFunctionName,
                                 b.getFunctionType(inputs, results));
  setRuntimeEntry(fn, kOptimizerStepEntryName);
  // Each tensor argument is named after its parameter, under the role it
  // plays (`txl.param`, `txl.grad`, or torch's state key).
  ArgumentNames names(fn);
  for (size_t i = 0; i < numParams; ++i) {
    names.set(i, "txl.param", trained[i].name);
    names.set(numParams + i, "txl.grad", trained[i].name);
    for (size_t s = 0; s < numStates; ++s)
      names.set((2 + s) * numParams + i, ("txl." + stateNames[s]).str(),
                trained[i].name);
  }
  names.apply();
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  auto arg = [&](size_t list, size_t i) {
    return entry->getArgument(list * numParams + i);
  };
  size_t scalars = (2 + numStates) * numParams;
  Value lr = entry->getArgument(scalars);
  Value step = entry->getArgument(scalars + 1);
  Value invLossScale = entry->getArgument(scalars + 2);
  Value totalNorm = entry->getArgument(scalars + 3);
  auto [part, parts] = partIndices(b, loc, entry->getArgument(scalars + 4),
                                   entry->getArgument(scalars + 5));

  // clip_grad_norm_'s coefficient from the total norm the host summed.
  Value scale = clipScaleOfNorm(totalNorm, invLossScale);

  // This part of every parameter and state, updated and written back in
  // place: each new tensor is materialized into the argument it replaces,
  // and the update reads element k of them only before writing element k,
  // so a step allocates and copies nothing, and concurrent calls for
  // different parts touch disjoint elements. Its loop nests become kernels,
  // one per distinct body after txl-deduplicate-kernels.
  SmallVector<SmallVector<Value>> outLists(1 + numStates);
  for (size_t i = 0; i < numParams; ++i) {
    SmallVector<Value> states;
    for (size_t s = 0; s < numStates; ++s)
      states.push_back(arg(2 + s, i));
    SmallVector<Value> written =
        updatePart(arg(0, i), arg(1, i), states, lr, step, scale, part, parts);
    for (auto [k, value] : llvm::enumerate(written))
      outLists[k].push_back(value);
  }
  SmallVector<Value> returned;
  for (SmallVector<Value> &values : outLists)
    returned.append(values);
  func::ReturnOp::create(b, loc, returned);
}

/// cosine / constant / dev_perf: train.py sets `lr * step / warmup_step`
/// while step < warmup_step; after that only the cosine scheduler steps,
/// CosineAnnealingLR(T_max = max_step, eta_min) in its closed form (max_step
/// the run's, an argument: train.py builds the scheduler from args.max_step),
/// and
/// constant / dev_perf keep the lr of the last warmup update (so a constant
/// run goes on at lr * (warmup_step - 1) / warmup_step; dev_perf's plateau
/// reductions are the runtime's, applied to the `lr` it passes).
Value TrainingEmitter::warmupOrAfter(Value step, Value stepF, Value lr,
                                     Value maxStepF) {
  Value after = lr;
  if (train.scheduler == "cosine") {
    // eta_min + (base_lr - eta_min) * (1 + cos(pi * step / T_max)) / 2
    Value angle = arith::DivFOp::create(
        b, loc, arith::MulFOp::create(b, loc, f64(llvm::numbers::pi), stepF),
        maxStepF);
    Value onePlusCos = arith::AddFOp::create(
        b, loc, f64(1.0), math::CosOp::create(b, loc, angle));
    Value scaled = arith::DivFOp::create(
        b, loc,
        arith::MulFOp::create(b, loc, f64(train.lr - train.etaMin), onePlusCos),
        f64(2.0));
    after = arith::AddFOp::create(b, loc, f64(train.etaMin), scaled);
  }
  if (train.warmupStep == 0)
    return after;
  // args.lr * train_step / args.warmup_step
  Value warm = arith::DivFOp::create(
      b, loc, arith::MulFOp::create(b, loc, f64(train.lr), stepF),
      f64(static_cast<double>(train.warmupStep)));
  Value inWarmup = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                         step, i64(train.warmupStep));
  return arith::SelectOp::create(b, loc, inWarmup, warm, after);
}

/// inv_sqrt: LambdaLR with train.py's lr_lambda, lr = base_lr * lambda(step):
/// lambda = 1 at step 0 without warmup, else 1 / step**0.5 past warmup_step
/// and step / warmup_step**1.5 up to it.
Value TrainingEmitter::invSqrt(Value step, Value stepF) {
  Value decay = arith::DivFOp::create(b, loc, f64(1.0),
                                      math::SqrtOp::create(b, loc, stepF));
  Value lambda;
  if (train.warmupStep == 0) {
    Value atZero = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                         step, i64(0));
    lambda = arith::SelectOp::create(b, loc, atZero, f64(1.0), decay);
  } else {
    double warmup = static_cast<double>(train.warmupStep);
    Value ramp = arith::DivFOp::create(b, loc, stepF,
                                       f64(std::pow(warmup, 1.5)));
    Value pastWarmup = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::sgt, step, i64(train.warmupStep));
    lambda = arith::SelectOp::create(b, loc, pastWarmup, decay, ramp);
  }
  return arith::MulFOp::create(b, loc, f64(train.lr), lambda);
}

void TrainingEmitter::emitLearningRate(ModuleOp module) {
  Type f64Type = b.getF64Type();
  b.setInsertionPointToEnd(module.getBody());
  // Scalars in and out, no tensor: host code on every target (on a GPU
  // target a tensor result would be device memory, written by a kernel and
  // read back with a synchronisation every update).
  auto fn = func::FuncOp::create(
      b, loc, kLearningRateFunctionName,
      b.getFunctionType({b.getI64Type(), f64Type, b.getI64Type()}, {f64Type}));
  setRuntimeEntry(fn, kLearningRateEntryName);
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value step = entry->getArgument(0);
  Value lr = entry->getArgument(1);
  Value stepF = arith::SIToFPOp::create(b, loc, f64Type, step);
  Value maxStepF =
      arith::SIToFPOp::create(b, loc, f64Type, entry->getArgument(2));

  Value next;
  if (train.scheduler == "inv_sqrt") {
    // The scheduler's construction already applies lambda(0).
    next = invSqrt(step, stepF);
  } else {
    // Before the first update the optimizer's lr is [train] lr, warmup or
    // not (train.py sets no warmup lr for step 0).
    Value atZero = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                         step, i64(0));
    next = arith::SelectOp::create(b, loc, atZero, f64(train.lr),
                                   warmupOrAfter(step, stepF, lr, maxStepF));
  }
  func::ReturnOp::create(b, loc, ValueRange{next});
}

LogicalResult mlir::txl::buildTrainingFunctions(ModuleOp module,
                                                const ModelConfig &config,
                                                int64_t deviceNormTensors,
                                                int64_t deviceNormSums) {
  const bool forDevice = deviceNormTensors > 0;
  MLIRContext *ctx = module.getContext();
  ctx->loadDialect<TxlDialect, func::FuncDialect, arith::ArithDialect,
                   math::MathDialect, scf::SCFDialect, tensor::TensorDialect,
                   bufferization::BufferizationDialect>();
  Location loc = FileLineColLoc::get(ctx, config.fileName, 1, 1);
  if (getOptimizerStateNames(config.train.optim).empty())
    return emitError(loc) << "[train] optim '" << config.train.optim
                          << "' has no compiled update";
  OpBuilder b(ctx);
  TrainingEmitter emitter(b, loc, config);
  if (forDevice) {
    emitter.emitDeviceGradSquaredNorm(module, deviceNormTensors,
                                      deviceNormSums);
    emitter.emitDeviceOptimizerStep(module);
  } else {
    emitter.emitSquaredNormPart(module);
    emitter.emitOptimizerUpdate(module);
  }
  emitter.emitLearningRate(module);
  if (forDevice && config.train.batchChunk > 1)
    emitter.emitAccumulateGrads(module);
  return success();
}

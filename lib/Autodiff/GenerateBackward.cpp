//===- GenerateBackward.cpp - The txl-generate-backward pass -----*- C++ -*-===//
//
// Reverse-mode differentiation on the txl dialect: clone the forward
// function, then walk its ops backwards asking each for its adjoint
// (AdjointOpInterface) and summing the contributions per value.
//
// Only *active* values are differentiated: those computed from a trained
// parameter (forward activity analysis). Buffers (`txl.buffer`, e.g.
// pos_emb.inv_freq), the memory inputs and everything computed from them
// alone get no gradient, so their adjoints are never built.
//
// A call (the per-layer @decoder_layer) is differentiated through a
// generated `@<callee>_grad` that takes the callee's arguments and the
// gradients of its results and returns the gradients of its active
// arguments. With `save-activations` (the default) the forward call becomes
// a call of `@<callee>_fwd`, which also returns the activations the
// adjoints read, and `@<callee>_grad` takes them instead of recomputing the
// layer; without it, `@<callee>_grad` recomputes the callee's forward
// computation and the backward keeps only each layer's inputs alive
// (layer-level checkpointing).
//
//===----------------------------------------------------------------------===//

#include "txl/Autodiff/Adjoints.h"
#include "txl/Autodiff/Passes.h"
#include "txl/IR/TxlOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/RegionUtils.h"

#include <map>

namespace mlir {
namespace txl {
#define GEN_PASS_DEF_GENERATEBACKWARDPASS
#include "txl/Autodiff/Passes.h.inc"
} // namespace txl
} // namespace mlir

using namespace mlir;
using namespace mlir::txl;

namespace {

bool isFloatTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa<FloatType>(tensor.getElementType());
}

/// d mean(x) / dx = 1 / numel(x) everywhere; times `scale` (an f32
/// scalar) when given.
Value meanSeed(OpBuilder &b, Location loc, Value x, Value scale = {}) {
  auto type = cast<RankedTensorType>(x.getType());
  Value count = arith::ConstantIndexOp::create(b, loc, 1);
  for (int64_t d = 0; d < type.getRank(); ++d)
    count = arith::MulIOp::create(b, loc, count,
                                  tensor::DimOp::create(b, loc, x, d));
  Type elementType = type.getElementType();
  Value count64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), count);
  Value countF = arith::SIToFPOp::create(b, loc, elementType, count64);
  Value one =
      arith::ConstantOp::create(b, loc, b.getFloatAttr(elementType, 1.0));
  Value seed = arith::DivFOp::create(b, loc, one, countF);
  if (scale) {
    if (elementType.getIntOrFloatBitWidth() > 32)
      scale = arith::ExtFOp::create(b, loc, elementType, scale);
    else if (!elementType.isF32())
      scale = arith::TruncFOp::create(b, loc, elementType, scale);
    seed = arith::MulFOp::create(b, loc, seed, scale);
  }
  return createFilledLike(b, loc, x, seed);
}

/// The float tensors of `body` computed (transitively) from `roots`.
DenseSet<Value> computeActive(Block &body, ArrayRef<Value> roots) {
  DenseSet<Value> active(roots.begin(), roots.end());
  for (Operation &op : body.without_terminator()) {
    // Values captured by nested regions count as operands.
    bool reads = false;
    op.walk([&](Operation *inner) {
      reads |= llvm::any_of(inner->getOperands(),
                            [&](Value v) { return active.contains(v); });
    });
    if (!reads)
      continue;
    for (Value result : op.getResults())
      if (isFloatTensor(result.getType()))
        active.insert(result);
  }
  return active;
}

/// Erases the ops of `fn` whose results are unused and that have no effect
/// (adjoints of constants, e.g. the gradient of the positional embedding).
void eraseDeadOps(func::FuncOp fn) {
  SmallVector<Operation *> ops;
  fn.walk([&](Operation *op) { ops.push_back(op); });
  for (Operation *op : llvm::reverse(ops))
    if (op != fn && isOpTriviallyDead(op))
      op->erase();
}

/// True for `linalg.fill` of the constant 0 (the zeros of createZerosLike).
bool isZeroFill(Value v) {
  auto fill = v.getDefiningOp<linalg::FillOp>();
  if (!fill)
    return false;
  auto cst = fill.getInputs()[0].getDefiningOp<arith::ConstantOp>();
  auto value = cst ? dyn_cast<FloatAttr>(cst.getValue()) : FloatAttr();
  return value && value.getValue().isZero();
}

/// Two unit-stride slices that provably do not overlap: in some dimension
/// both ranges are static and apart.
bool disjoint(tensor::InsertSliceOp a, tensor::InsertSliceOp b) {
  if (!a.hasUnitStride() || !b.hasUnitStride())
    return false;
  for (auto [ao, as, bo, bs] :
       llvm::zip(a.getStaticOffsets(), a.getStaticSizes(), b.getStaticOffsets(),
                 b.getStaticSizes())) {
    if (ShapedType::isDynamic(ao) || ShapedType::isDynamic(as) ||
        ShapedType::isDynamic(bo) || ShapedType::isDynamic(bs))
      continue;
    if (ao + as <= bo || bo + bs <= ao)
      return true;
  }
  return false;
}

/// Ops the gradient function recomputes from the values they read instead
/// of having their results saved: views of tensors, dims and scalar
/// arithmetic (saving a view would copy it, recomputing it is free).
bool isView(Operation *op) {
  return isa<tensor::ExtractSliceOp, tensor::ExpandShapeOp,
             tensor::CollapseShapeOp, tensor::DimOp, tensor::CastOp>(op) ||
         isa<arith::ArithDialect>(op->getDialect());
}

/// `slot + g`. When both are slices written into zeros that do not overlap
/// (the adjoints of tensor.extract_slice: the q, k and v parts of qkv_net's
/// output), g's slice is written into `slot` instead, so the gradient of
/// the sliced tensor is one zero fill and no additions.
Value accumulate(OpBuilder &b, Location loc, Value slot, Value g) {
  auto piece = g.getDefiningOp<tensor::InsertSliceOp>();
  bool fold = piece && isZeroFill(piece.getDest()) &&
              slot.getType() == g.getType();
  Value base = slot;
  while (fold) {
    auto prior = base.getDefiningOp<tensor::InsertSliceOp>();
    if (!prior) {
      fold = isZeroFill(base) && base != slot;
      break;
    }
    fold = disjoint(prior, piece);
    base = prior.getDest();
  }
  if (fold)
    return tensor::InsertSliceOp::create(
        b, loc, piece.getSource(), slot, piece.getMixedOffsets(),
        piece.getMixedSizes(), piece.getMixedStrides());
  return AddOp::create(b, loc, slot, g);
}

/// The generated gradient of a callee for one pattern of active arguments.
/// With saved activations, `grad` takes (args..., activations..., result
/// grads...) and `forward` is what the forward call must call to produce
/// them: `@<callee>_fwd` (the callee's results, then the activations that
/// are not among them) or the callee itself when it returns them all;
/// `savedResult[i] >= 0` says that activation i is the callee's result of
/// that number.
struct CalleeGrad {
  func::FuncOp grad;
  func::FuncOp forward;
  SmallVector<int> savedResult;
};

class Differentiator {
public:
  Differentiator(ModuleOp module, bool saveActivations, bool scaleLoss)
      : module(module), symbols(module), saveActivations(saveActivations),
        scaleLoss(scaleLoss) {}

  /// Adds `@<name>_grad` next to `forward`: its arguments (and, with
  /// `scaleLoss`, a trailing f32 loss scale), returning its results then the
  /// gradient of the (scaled) mean of result 0 with respect to each of
  /// `params`' argument numbers. Its `txl.entry` is `gradEntry` (none when
  /// empty).
  LogicalResult differentiateSegment(func::FuncOp forward,
                                     ArrayRef<unsigned> params,
                                     StringRef gradName, StringRef gradEntry);

private:
  /// Appends the adjoints of `ops`, last first, at `b`; `grads` holds the
  /// gradients known so far and receives the new ones.
  LogicalResult sweep(OpBuilder &b, ArrayRef<Operation *> ops,
                      const DenseSet<Value> &active,
                      DenseMap<Value, Value> &grads);

  /// The adjoint of a call: a call of the callee's generated gradient.
  FailureOr<SmallVector<Value>> callAdjoint(OpBuilder &b, func::CallOp call,
                                            ValueRange resultGrads,
                                            const DenseSet<Value> &active);

  /// `@<callee>_grad` (and `@<callee>_fwd`) for this pattern of active
  /// arguments, built once.
  FailureOr<CalleeGrad> getCalleeGrad(func::FuncOp callee,
                                      ArrayRef<bool> activeArgs);

  /// Turns `grad`, whose ops from `recomputed` clone the callee's body
  /// (`toCallee` maps their values back to it), into a function taking the
  /// activations its adjoints read, and builds the callee's `_fwd` variant
  /// returning them.
  void saveActivationsOf(func::FuncOp callee, CalleeGrad &result,
                         ArrayRef<Operation *> recomputed,
                         const IRMapping &toCallee);

  ModuleOp module;
  SymbolTable symbols;
  bool saveActivations;
  /// Give @<function>_grad the trailing loss-scale argument.
  bool scaleLoss;
  std::map<std::pair<Operation *, std::vector<bool>>, CalleeGrad> calleeGrads;

public:
  /// Forward calls replaced by calls of `_fwd`, erased after the sweep.
  SmallVector<Operation *> replacedCalls;
};

LogicalResult Differentiator::sweep(OpBuilder &b, ArrayRef<Operation *> ops,
                                    const DenseSet<Value> &active,
                                    DenseMap<Value, Value> &grads) {
  for (Operation *op : llvm::reverse(ops)) {
    SmallVector<Value> resultGrads;
    bool any = false;
    for (Value result : op->getResults()) {
      resultGrads.push_back(active.contains(result) ? grads.lookup(result)
                                                    : Value());
      any |= static_cast<bool>(resultGrads.back());
    }
    if (!any)
      continue;
    if (op->getNumRegions() != 0)
      return op->emitOpError("has regions: txl-generate-backward "
                             "differentiates straight-line code only");
    SmallVector<Value> operandGrads;
    if (auto call = dyn_cast<func::CallOp>(op)) {
      FailureOr<SmallVector<Value>> g =
          callAdjoint(b, call, resultGrads, active);
      if (failed(g))
        return failure();
      operandGrads = std::move(*g);
    } else if (auto adjoint = dyn_cast<AdjointOpInterface>(op)) {
      operandGrads = adjoint.buildAdjoint(b, resultGrads);
    } else {
      return op->emitOpError("has no adjoint: txl-generate-backward cannot "
                             "differentiate through it");
    }
    if (operandGrads.size() != op->getNumOperands())
      return op->emitOpError("adjoint returned ")
             << operandGrads.size() << " gradients for "
             << op->getNumOperands() << " operands";
    for (auto [operand, g] : llvm::zip(op->getOperands(), operandGrads)) {
      if (!g || !active.contains(operand))
        continue;
      Value &slot = grads[operand];
      slot = slot ? accumulate(b, op->getLoc(), slot, g) : g;
    }
  }
  return success();
}

FailureOr<SmallVector<Value>>
Differentiator::callAdjoint(OpBuilder &b, func::CallOp call,
                            ValueRange resultGrads,
                            const DenseSet<Value> &active) {
  auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
  if (!callee)
    return call.emitOpError("calls an unknown function");
  SmallVector<bool> activeArgs;
  for (Value operand : call.getOperands())
    activeArgs.push_back(active.contains(operand));
  FailureOr<CalleeGrad> grad = getCalleeGrad(callee, activeArgs);
  if (failed(grad))
    return failure();

  SmallVector<Value> operands(call.getOperands());
  if (grad->forward) {
    // The forward call now also returns the activations.
    func::CallOp forward = call;
    if (grad->forward != callee) {
      OpBuilder fb(call);
      forward = func::CallOp::create(fb, call.getLoc(), grad->forward,
                                     call.getOperands());
      call.replaceAllUsesWith(
          forward.getResults().take_front(call.getNumResults()));
      replacedCalls.push_back(call);
    }
    unsigned next = call.getNumResults();
    for (int r : grad->savedResult)
      operands.push_back(r >= 0 ? forward.getResult(r)
                                : forward.getResult(next++));
  }
  for (auto [result, g] : llvm::zip(call.getResults(), resultGrads))
    if (isFloatTensor(result.getType()))
      operands.push_back(g ? g : createZerosLike(b, call.getLoc(), result));
  auto gradCall = func::CallOp::create(b, call.getLoc(), grad->grad, operands);
  SmallVector<Value> operandGrads(call.getNumOperands());
  unsigned next = 0;
  for (auto [i, isActive] : llvm::enumerate(activeArgs))
    if (isActive)
      operandGrads[i] = gradCall.getResult(next++);
  return operandGrads;
}

void Differentiator::saveActivationsOf(func::FuncOp callee, CalleeGrad &result,
                                       ArrayRef<Operation *> recomputed,
                                       const IRMapping &toCallee) {
  func::FuncOp fn = result.grad;
  DenseSet<Operation *> isRecomputed(recomputed.begin(), recomputed.end());
  // The activations: values of the recomputed part that the adjoints (or
  // the return) read, looking through views to the values they view.
  SetVector<Value> saved;
  SmallVector<Value> worklist;
  auto fromRecomputed = [&](Value v) {
    Operation *def = v.getDefiningOp();
    return def && isRecomputed.contains(def);
  };
  fn.walk([&](Operation *op) {
    if (isRecomputed.contains(op))
      return;
    for (Value v : op->getOperands())
      if (fromRecomputed(v))
        worklist.push_back(v);
  });
  DenseSet<Value> seen;
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    Operation *def = v.getDefiningOp();
    if (!isView(def)) {
      saved.insert(v);
      continue;
    }
    for (Value operand : def->getOperands())
      if (fromRecomputed(operand))
        worklist.push_back(operand);
  }
  if (saved.empty())
    return;
  // Program order, so that the signature reads like the layer.
  SmallVector<Value> ordered(saved.begin(), saved.end());
  llvm::sort(ordered, [](Value a, Value c) {
    return a.getDefiningOp()->isBeforeInBlock(c.getDefiningOp());
  });

  // Activations the callee returns anyway come from the call's results;
  // the others from @<callee>_fwd, the callee returning them after its
  // results (the callee itself when there are none).
  auto calleeRet =
      cast<func::ReturnOp>(callee.getBody().front().getTerminator());
  SmallVector<Value> extra;
  for (Value v : ordered) {
    Value inCallee = toCallee.lookup(v);
    auto it = llvm::find(calleeRet.getOperands(), inCallee);
    bool isResult = it != calleeRet.getOperands().end();
    result.savedResult.push_back(
        isResult ? static_cast<int>(it - calleeRet.getOperands().begin()) : -1);
    if (!isResult)
      extra.push_back(inCallee);
  }
  OpBuilder b(callee);
  result.forward = callee;
  if (!extra.empty()) {
    b.setInsertionPointAfter(callee);
    IRMapping toForward;
    auto forward = cast<func::FuncOp>(b.clone(*callee, toForward));
    forward.setSymName(callee.getSymName().str() + "_fwd");
    forward.setPrivate();
    symbols.insert(forward);
    auto ret = cast<func::ReturnOp>(forward.getBody().front().getTerminator());
    SmallVector<Value> returned(ret.getOperands());
    for (Value v : extra)
      returned.push_back(toForward.lookup(v));
    b.setInsertionPoint(ret);
    func::ReturnOp::create(b, ret.getLoc(), returned);
    ret.erase();
    forward.setFunctionType(b.getFunctionType(forward.getArgumentTypes(),
                                              ValueRange(returned).getTypes()));
    result.forward = forward;
  }

  // The gradient function takes them after the callee's arguments.
  unsigned at = callee.getNumArguments();
  for (auto [i, v] : llvm::enumerate(ordered)) {
    BlockArgument arg =
        fn.getBody().front().insertArgument(at + i, v.getType(), v.getLoc());
    v.replaceAllUsesWith(arg);
  }
  SmallVector<Type> inputs(fn.getBody().front().getArgumentTypes());
  // A function whose arguments all have empty attributes has none.
  SmallVector<Attribute> argAttrs;
  if (ArrayAttr attrs = fn.getAllArgAttrs())
    argAttrs.assign(attrs.begin(), attrs.end());
  argAttrs.resize(inputs.size() - ordered.size(), b.getDictionaryAttr({}));
  argAttrs.insert(argAttrs.begin() + at, ordered.size(),
                  b.getDictionaryAttr({}));
  fn.setFunctionType(b.getFunctionType(inputs, fn.getResultTypes()));
  fn.setAllArgAttrs(argAttrs);
}

FailureOr<CalleeGrad> Differentiator::getCalleeGrad(func::FuncOp callee,
                                                    ArrayRef<bool> activeArgs) {
  auto key = std::make_pair(callee.getOperation(),
                            std::vector<bool>(activeArgs.begin(),
                                              activeArgs.end()));
  if (auto it = calleeGrads.find(key); it != calleeGrads.end())
    return it->second;
  if (callee.isExternal() || !callee.getBody().hasOneBlock())
    return callee.emitOpError("txl-generate-backward: a called function must "
                              "have a body of one block");

  // (arguments..., gradients of the float results...) -> gradients of the
  // active arguments.
  SmallVector<Type> inputs(callee.getArgumentTypes());
  for (Type t : callee.getResultTypes())
    if (isFloatTensor(t))
      inputs.push_back(t);
  SmallVector<Type> outputs;
  for (auto [t, isActive] : llvm::zip(callee.getArgumentTypes(), activeArgs))
    if (isActive)
      outputs.push_back(t);

  OpBuilder b(callee);
  b.setInsertionPointAfter(callee);
  Location loc = callee.getLoc();
  auto fn = func::FuncOp::create(b, loc, callee.getSymName().str() + "_grad",
                                 b.getFunctionType(inputs, outputs));
  fn.setPrivate();
  SmallVector<Attribute> argAttrs;
  if (ArrayAttr attrs = callee.getAllArgAttrs())
    argAttrs.assign(attrs.begin(), attrs.end());
  argAttrs.resize(inputs.size(), b.getDictionaryAttr({}));
  fn.setAllArgAttrs(argAttrs);
  symbols.insert(fn); // renames it on a clash

  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  IRMapping map;
  Block &body = callee.getBody().front();
  for (BlockArgument arg : body.getArguments())
    map.map(arg, entry->getArgument(arg.getArgNumber()));
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(b.clone(op, map));

  SmallVector<Value> roots;
  for (auto [i, isActive] : llvm::enumerate(activeArgs))
    if (isActive)
      roots.push_back(entry->getArgument(i));
  DenseSet<Value> active = computeActive(*entry, roots);

  DenseMap<Value, Value> grads;
  unsigned gradArg = callee.getNumArguments();
  for (Value returned : body.getTerminator()->getOperands()) {
    if (!isFloatTensor(returned.getType()))
      continue;
    Value r = map.lookup(returned);
    Value g = entry->getArgument(gradArg++);
    Value &slot = grads[r];
    slot = slot ? AddOp::create(b, loc, slot, g).getResult() : g;
  }
  if (failed(sweep(b, ops, active, grads)))
    return failure();

  SmallVector<Value> results;
  for (Value root : roots) {
    Value g = grads.lookup(root);
    results.push_back(g ? g : createZerosLike(b, loc, root));
  }
  func::ReturnOp::create(b, loc, results);
  CalleeGrad result{fn, {}, {}};
  if (saveActivations) {
    IRMapping toCallee;
    for (Operation &op : body.without_terminator())
      for (Value r : op.getResults())
        toCallee.map(map.lookup(r), r);
    saveActivationsOf(callee, result, ops, toCallee);
  }
  eraseDeadOps(fn);
  calleeGrads[key] = result;
  return result;
}

LogicalResult Differentiator::differentiateSegment(func::FuncOp forward,
                                                   ArrayRef<unsigned> params,
                                                   StringRef gradName,
                                                   StringRef gradEntry) {
  OpBuilder b(forward);
  b.setInsertionPointAfter(forward);
  auto grad = cast<func::FuncOp>(b.clone(*forward));
  grad.setSymName(gradName.empty() ? forward.getSymName().str() + "_grad"
                                   : gradName.str());
  grad.setPublic();
  // The forward's packed entry is the forward's alone.
  if (gradEntry.empty())
    grad->removeAttr(TxlDialect::kEntryAttrName);
  else
    grad->setAttr(TxlDialect::kEntryAttrName, b.getStringAttr(gradEntry));
  symbols.insert(grad);
  Block &body = grad.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());

  SmallVector<Value> roots;
  for (unsigned p : params)
    roots.push_back(body.getArgument(p));
  DenseSet<Value> active = computeActive(body, roots);

  Location loc = grad.getLoc();
  b.setInsertionPoint(ret);
  DenseMap<Value, Value> grads;
  Value loss = ret.getOperand(0);
  // loss-scale: the seed times a trailing f32 argument.
  Value lossScale;
  if (scaleLoss) {
    unsigned index = grad.getNumArguments();
    if (failed(grad.insertArgument(index, b.getF32Type(),
                                   b.getDictionaryAttr(b.getNamedAttr(
                                       "txl.loss_scale", b.getUnitAttr())),
                                   loc)))
      return failure();
    lossScale = grad.getArgument(index);
  }
  if (active.contains(loss))
    grads[loss] = meanSeed(b, loc, loss, lossScale);

  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  if (failed(sweep(b, ops, active, grads)))
    return failure();

  SmallVector<Value> results(ret.getOperands());
  SmallVector<Type> types(ret.getOperandTypes());
  for (Value root : roots) {
    Value g = grads.lookup(root);
    results.push_back(g ? g : createZerosLike(b, loc, root));
    types.push_back(root.getType());
  }
  func::ReturnOp::create(b, ret.getLoc(), results);
  ret.erase();
  grad.setFunctionType(b.getFunctionType(grad.getArgumentTypes(), types));
  eraseDeadOps(grad);
  return success();
}

struct GenerateBackwardPass
    : public txl::impl::GenerateBackwardPassBase<GenerateBackwardPass> {
  using GenerateBackwardPassBase::GenerateBackwardPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>(function);
    if (!forward) {
      module.emitError() << "txl-generate-backward: no function @" << function;
      return signalPassFailure();
    }
    if (forward.isExternal() || !forward.getBody().hasOneBlock()) {
      forward.emitError() << "txl-generate-backward: @" << function
                          << " must have a body of one block";
      return signalPassFailure();
    }
    auto resultTypes = forward.getFunctionType().getResults();
    if (resultTypes.empty() || !isFloatTensor(resultTypes[0])) {
      forward.emitError() << "txl-generate-backward: the first result of @"
                          << function << " must be a float tensor (the loss)";
      return signalPassFailure();
    }

    // Parameters: float tensor arguments marked txl.param and not
    // txl.buffer; every float tensor argument when none is marked.
    SmallVector<unsigned> params;
    bool marked = false;
    for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
      if (!isFloatTensor(forward.getArgument(i).getType()))
        continue;
      bool isParam = static_cast<bool>(forward.getArgAttr(i, "txl.param"));
      marked |= isParam;
      if (isParam && !forward.getArgAttr(i, "txl.buffer"))
        params.push_back(i);
    }
    if (!marked)
      for (unsigned i = 0; i < forward.getNumArguments(); ++i)
        if (isFloatTensor(forward.getArgument(i).getType()))
          params.push_back(i);

    Differentiator differentiator(module, saveActivations, lossScale);
    if (module.lookupSymbol(gradFunction.empty() ? function + "_grad"
                                                 : gradFunction)) {
      forward.emitError() << "txl-generate-backward: @"
                          << (gradFunction.empty() ? function + "_grad"
                                                   : gradFunction)
                          << " already exists";
      return signalPassFailure();
    }
    if (failed(differentiator.differentiateSegment(forward, params,
                                                   gradFunction, gradEntry)))
      return signalPassFailure();
    for (Operation *call : differentiator.replacedCalls)
      call->erase();
  }
};

} // namespace

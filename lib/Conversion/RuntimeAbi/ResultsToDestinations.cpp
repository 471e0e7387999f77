//===- ResultsToDestinations.cpp - Caller-allocated outputs ------*- C++ -*-===//
//
// The runtime allocates every output of a segment (the NLL and the new
// memory, whose sizes it knows) and the generated code writes into them, so
// no allocation crosses the call boundary.
//
//===----------------------------------------------------------------------===//

#include "txl/Conversion/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir {
namespace txl {
#define GEN_PASS_DEF_RESULTSTODESTINATIONSPASS
#include "txl/Conversion/Passes.h.inc"
} // namespace txl
} // namespace mlir

using namespace mlir;
using namespace mlir::txl;

/// The argument each result of an entry function is written into, set by
/// txl-results-to-destinations and checked by txl-drop-destination-results.
static constexpr llvm::StringLiteral kDestinationsAttrName =
    "txl.result_destinations";

/// The results (indices) computed directly in their destination argument,
/// set by txl-results-to-destinations: they are returned as computed, not
/// through a materialization.
static constexpr llvm::StringLiteral kBuiltInDestinationAttrName =
    "txl.built_in_destination";

/// The out argument of a function of the module that each of its results is
/// written into (-1: none), set on private functions by
/// txl-results-to-destinations.
static constexpr llvm::StringLiteral kOutArgumentsAttrName =
    "txl.out_arguments";

/// The operand of `call` its result `i` is computed in, if the callee
/// writes that result into an out argument (`txl.out_arguments`).
static Value tiedCallOperand(func::CallOp call, unsigned i) {
  auto fn = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
      call, call.getCalleeAttr());
  auto outs = fn ? fn->getAttrOfType<DenseI64ArrayAttr>(kOutArgumentsAttrName)
                 : nullptr;
  if (!outs || outs.asArrayRef()[i] < 0)
    return {};
  return call.getOperand(outs.asArrayRef()[i]);
}

/// The `tensor.empty` whose buffer `v` is computed in: followed back through
/// the tied init of destination-style ops (linalg ops, tensor.insert_slice),
/// the init of scf.for results and the out argument of calls to functions
/// this pass gave out arguments. Null when `v` is not computed (an empty
/// tensor itself), when the chain ends anywhere else, or when a value on it
/// has another use (someone else reads that state).
static tensor::EmptyOp rootEmpty(Value v) {
  if (v.getDefiningOp<tensor::EmptyOp>())
    return {};
  while (v.hasOneUse()) {
    Operation *def = v.getDefiningOp();
    if (!def)
      return {};
    if (auto empty = dyn_cast<tensor::EmptyOp>(def))
      return empty;
    auto result = cast<OpResult>(v);
    if (auto dps = dyn_cast<DestinationStyleOpInterface>(def))
      v = dps.getTiedOpOperand(result)->get();
    else if (auto loop = dyn_cast<scf::ForOp>(def))
      v = loop.getInitArgs()[result.getResultNumber()];
    else if (auto call = dyn_cast<func::CallOp>(def))
      v = tiedCallOperand(call, result.getResultNumber());
    else
      return {};
    if (!v)
      return {};
  }
  return {};
}

/// The buffer `v` is after bufferization when loops merely carry it: an
/// scf.for result whose iteration yields its own iteration argument (or a
/// value that is, recursively) is the loop's init.
static Value carriedBuffer(Value v) {
  auto loop = v.getDefiningOp<scf::ForOp>();
  if (!loop)
    return v;
  unsigned i = cast<OpResult>(v).getResultNumber();
  Value yielded = loop.getBody()->getTerminator()->getOperand(i);
  if (carriedBuffer(yielded) != loop.getRegionIterArg(i))
    return v;
  return carriedBuffer(loop.getInitArgs()[i]);
}

/// Whether `fn` returns scalars only (one or more, all integers, indices or
/// floats: the learning-rate schedule's f64), which the C interface returns
/// by value: such an entry keeps its results and needs no destination.
static bool returnsScalars(func::FuncOp fn) {
  return fn.getNumResults() > 0 &&
         llvm::all_of(fn.getResultTypes(),
                      [](Type t) { return t.isIntOrIndexOrFloat(); });
}

/// Entry functions change signature in these passes, so a call inside the
/// module would break; report it instead. Returns failure if `fn` is called.
static LogicalResult verifyNotCalled(func::FuncOp fn, ModuleOp module,
                                     llvm::StringRef pass) {
  if (SymbolTable::symbolKnownUseEmpty(fn, module))
    return success();
  return fn.emitOpError(pass) << ": an entry function (llvm.emit_c_interface) "
                                 "must not be called inside the module";
}

namespace {
struct ResultsToDestinationsPass
    : public txl::impl::ResultsToDestinationsPassBase<
          ResultsToDestinationsPass> {
  void runOnOperation() override {
    // Callees first: an entry's results may then be computed in its out
    // tensors through their out arguments. The uses of every symbol come
    // from one walk of the module (a walk per function grew with the
    // square of the layers).
    llvm::DenseMap<StringAttr, SmallVector<Operation *>> users;
    if (std::optional<SymbolTable::UseRange> uses =
            SymbolTable::getSymbolUses(&getOperation().getBodyRegion()))
      for (const SymbolTable::SymbolUse &use : *uses)
        users[use.getSymbolRef().getRootReference()].push_back(use.getUser());
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (!fn.isExternal() && fn.isPrivate() &&
          failed(convertPrivate(fn, users[fn.getSymNameAttr()])))
        return signalPassFailure();
    for (auto fn : getOperation().getOps<func::FuncOp>()) {
      if (fn.isExternal() || !fn->hasAttr("llvm.emit_c_interface") ||
          returnsScalars(fn))
        continue;
      if (failed(verifyNotCalled(fn, getOperation(),
                                 "txl-results-to-destinations")) ||
          failed(convert(fn)))
        return signalPassFailure();
    }
    // The records are for this pass's rootEmpty only.
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (fn.isPrivate()) {
        fn->removeAttr(kOutArgumentsAttrName);
        fn->removeAttr(kBuiltInDestinationAttrName);
      }
  }

  /// Gives a private function one out argument per result of static shape
  /// (the gradients of the parameters, for a layer's backward), which each
  /// call passes as a new `tensor.empty`: the result is computed in it as an
  /// entry's result is in its out tensor, and an entry that returns the
  /// call's result computes it in its own out tensor (rootEmpty follows the
  /// call), so the callee writes the caller's buffer with no copy. Results
  /// of dynamic shape (the caller cannot size them), results already
  /// written into an argument, and functions used other than by calls keep
  /// their results.
  LogicalResult convertPrivate(func::FuncOp fn, ArrayRef<Operation *> users) {
    SmallVector<func::CallOp> calls;
    for (Operation *user : users) {
      auto call = dyn_cast<func::CallOp>(user);
      if (!call)
        return success();
      calls.push_back(call);
    }
    FunctionType type = fn.getFunctionType();
    SmallVector<func::ReturnOp> returns = returnsOf(fn);
    SmallVector<unsigned> outResults;
    for (auto [i, t] : llvm::enumerate(type.getResults())) {
      auto tensorType = dyn_cast<RankedTensorType>(t);
      if (!tensorType || !tensorType.hasStaticShape() ||
          inPlaceArgument(fn, returns, i) || returnsArgument(fn, returns, i))
        continue;
      outResults.push_back(i);
    }
    if (outResults.empty())
      return success();
    SmallVector<int64_t> outArguments(type.getNumResults(), -1);
    for (auto [k, i] : llvm::enumerate(outResults))
      outArguments[i] = type.getNumInputs() + k;
    if (failed(addOutArguments(fn, outResults)))
      return failure();
    OpBuilder b(fn.getContext());
    fn->setAttr(kOutArgumentsAttrName, b.getDenseI64ArrayAttr(outArguments));
    for (func::CallOp call : calls) {
      b.setInsertionPoint(call);
      SmallVector<Value> operands(call.getOperands());
      for (unsigned i : outResults) {
        auto t = cast<RankedTensorType>(type.getResult(i));
        operands.push_back(tensor::EmptyOp::create(
            b, call.getLoc(), t.getShape(), t.getElementType()));
      }
      call->setOperands(operands);
    }
    return success();
  }

  /// Whether some return of `fn` returns one of its arguments as result `i`
  /// (an out argument would turn that into a copy).
  static bool returnsArgument(func::FuncOp fn, ArrayRef<func::ReturnOp> returns,
                              unsigned i) {
    return llvm::any_of(returns, [&](func::ReturnOp ret) {
      auto arg = dyn_cast<BlockArgument>(ret.getOperand(i));
      return arg && arg.getOwner() == &fn.getBody().front();
    });
  }

  /// The returns of `fn`, found once: a walk per result grew with the
  /// square of the layers (an entry returns each layer's new memory).
  static SmallVector<func::ReturnOp> returnsOf(func::FuncOp fn) {
    SmallVector<func::ReturnOp> returns;
    for (Block &block : fn.getBody())
      if (auto ret = dyn_cast<func::ReturnOp>(block.getTerminator()))
        returns.push_back(ret);
    return returns;
  }

  /// The argument result `i` is already written into, if every return
  /// returns a `bufferization.materialize_in_destination` into the same
  /// argument of `fn` (an update in place); else null.
  static BlockArgument inPlaceArgument(func::FuncOp fn,
                                       ArrayRef<func::ReturnOp> returns,
                                       unsigned i) {
    BlockArgument dest;
    bool all = true;
    for (func::ReturnOp ret : returns) {
      auto m = ret.getOperand(i)
                   .getDefiningOp<bufferization::MaterializeInDestinationOp>();
      auto arg = m ? dyn_cast<BlockArgument>(m.getDest()) : BlockArgument();
      if (!arg || arg.getOwner() != &fn.getBody().front() ||
          (dest && dest != arg))
        all = false;
      else
        dest = arg;
    }
    return all ? dest : BlockArgument();
  }

  LogicalResult convert(func::FuncOp fn) {
    FunctionType type = fn.getFunctionType();
    for (Type t : type.getResults())
      if (!isa<RankedTensorType>(t))
        return fn.emitOpError("txl-results-to-destinations: every result "
                              "must be a ranked tensor");
    OpBuilder b(fn.getContext());
    unsigned numInputs = type.getNumInputs();
    // Results written into an argument keep it (writable); every other
    // result, including a second one written into an argument already
    // taken, gets a new argument.
    SmallVector<unsigned> outResults;
    llvm::SmallDenseSet<unsigned> inPlace;
    SmallVector<int64_t> destinations(type.getNumResults());
    SmallVector<func::ReturnOp> returns = returnsOf(fn);
    for (unsigned i = 0; i < type.getNumResults(); ++i) {
      BlockArgument arg = inPlaceArgument(fn, returns, i);
      if (arg && !inPlace.contains(arg.getArgNumber())) {
        inPlace.insert(arg.getArgNumber());
        destinations[i] = arg.getArgNumber();
      } else {
        destinations[i] = numInputs + outResults.size();
        outResults.push_back(i);
      }
    }
    if (!destinations.empty())
      fn->setAttr(kDestinationsAttrName,
                  b.getDenseI64ArrayAttr(destinations));
    // Every argument's attributes at once: a setArgAttr per argument
    // uniques a new list of all of them each time, which the context keeps
    // (quadratic in the arguments: thousands in a deep model's entries).
    SmallVector<DictionaryAttr> argAttrs;
    bool readOnly = false;
    for (unsigned i = 0; i < numInputs; ++i) {
      NamedAttrList attrs(fn.getArgAttrDict(i));
      if (isa<TensorType>(type.getInput(i)) && !inPlace.contains(i)) {
        attrs.set("bufferization.writable", b.getBoolAttr(false));
        readOnly = true;
      }
      argAttrs.push_back(attrs.getDictionary(fn.getContext()));
    }
    if (readOnly)
      fn.setAllArgAttrs(argAttrs);
    return addOutArguments(fn, outResults);
  }

  /// Appends an out tensor argument for each of `outResults` of `fn` and
  /// returns those results written into it.
  static LogicalResult addOutArguments(func::FuncOp fn,
                                       ArrayRef<unsigned> outResults) {
    FunctionType type = fn.getFunctionType();
    OpBuilder b(fn.getContext());
    SmallVector<Type> inputs(type.getInputs());
    Block &entry = fn.getBody().front();
    SmallVector<Value> outs;
    for (unsigned i : outResults) {
      inputs.push_back(type.getResult(i));
      outs.push_back(entry.addArgument(type.getResult(i), fn.getLoc()));
    }
    fn.setType(b.getFunctionType(inputs, type.getResults()));

    // With one return, a result computed from an empty tensor through
    // destination-passing ops (a gradient accumulated block by block, say)
    // is computed in its out tensor instead: the empty tensor's contents are
    // undefined, so the out tensor may stand for it. It is then returned as
    // it is; a materialization into the out tensor it was built in would be
    // a read-after-write conflict for one-shot bufferization.
    auto returns = llvm::to_vector(fn.getOps<func::ReturnOp>());
    SmallVector<int64_t> builtIn;
    WalkResult walk = fn.walk([&](func::ReturnOp ret) {
      b.setInsertionPoint(ret);
      SmallVector<Value> written(ret.getOperands());
      for (auto [i, out] : llvm::zip(outResults, outs)) {
        tensor::EmptyOp empty =
            returns.size() == 1 ? rootEmpty(written[i]) : tensor::EmptyOp();
        if (empty && empty.getType() == out.getType()) {
          empty.replaceAllUsesWith(out);
          empty.erase();
          builtIn.push_back(i);
          continue;
        }
        written[i] = bufferization::MaterializeInDestinationOp::create(
                         b, ret.getLoc(), written[i], out)
                         .getResult();
      }
      ret->setOperands(written);
      return WalkResult::advance();
    });
    if (!builtIn.empty())
      fn->setAttr(kBuiltInDestinationAttrName,
                  b.getDenseI64ArrayAttr(builtIn));
    return failure(walk.wasInterrupted());
  }
};
} // namespace

namespace mlir {
namespace txl {
#define GEN_PASS_DEF_DROPDESTINATIONRESULTSPASS
#include "txl/Conversion/Passes.h.inc"
} // namespace txl
} // namespace mlir

namespace {
struct DropDestinationResultsPass
    : public txl::impl::DropDestinationResultsPassBase<
          DropDestinationResultsPass> {
  void runOnOperation() override {
    for (auto fn : getOperation().getOps<func::FuncOp>()) {
      if (fn.isExternal() || !fn->hasAttr("llvm.emit_c_interface") ||
          fn.getNumResults() == 0 || returnsScalars(fn))
        continue;
      if (failed(verifyNotCalled(fn, getOperation(),
                                 "txl-drop-destination-results")))
        return signalPassFailure();
      Block &entry = fn.getBody().front();
      // Without txl-results-to-destinations' record, result i is expected in
      // the i-th of the trailing arguments.
      SmallVector<int64_t> destinations;
      if (auto attr = fn->getAttrOfType<DenseI64ArrayAttr>(kDestinationsAttrName))
        destinations.assign(attr.asArrayRef().begin(), attr.asArrayRef().end());
      else
        for (unsigned i = 0; i < fn.getNumResults(); ++i)
          destinations.push_back(fn.getNumArguments() - fn.getNumResults() + i);
      llvm::SmallDenseSet<int64_t> builtIn;
      if (auto attr =
              fn->getAttrOfType<DenseI64ArrayAttr>(kBuiltInDestinationAttrName))
        builtIn.insert(attr.asArrayRef().begin(), attr.asArrayRef().end());
      WalkResult walk = fn.walk([&](func::ReturnOp ret) {
        OpBuilder b(ret);
        for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
          Value dest = destinations[i] < entry.getNumArguments()
                           ? entry.getArgument(destinations[i])
                           : Value();
          if (dest && carriedBuffer(v) == dest)
            continue;
          // A result computed in its destination that bufferization still
          // placed elsewhere (a conflict it resolved with a copy): correct,
          // just not free; copy it over.
          if (dest && builtIn.contains(i) && isa<MemRefType>(v.getType())) {
            memref::CopyOp::create(b, ret.getLoc(), v, dest);
            continue;
          }
          ret.emitOpError("txl-drop-destination-results: result ")
              << i << " is not its caller-provided buffer (argument "
              << destinations[i] << ")";
          return WalkResult::interrupt();
        }
        ret->setOperands({});
        return WalkResult::advance();
      });
      if (walk.wasInterrupted())
        return signalPassFailure();
      fn->removeAttr(kDestinationsAttrName);
      fn->removeAttr(kBuiltInDestinationAttrName);
      fn.setType(FunctionType::get(&getContext(),
                                   fn.getFunctionType().getInputs(), {}));
    }
  }
};
} // namespace

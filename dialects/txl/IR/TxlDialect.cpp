//===- TxlDialect.cpp - The txl dialect --------------------------*- C++ -*-===//
#include "txl/IR/TxlDialect.h"
#include "txl/IR/TxlOps.h"

#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/StringExtras.h"

#include <iterator>

using namespace mlir;
using namespace mlir::txl;

#include "txl/IR/TxlOpsDialect.cpp.inc"

void TxlDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "txl/IR/TxlOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Discardable attributes
//===----------------------------------------------------------------------===//

/// Argument attributes whose value names the parameter the argument holds,
/// in the role of the attribute's name: the parameter itself, its gradient,
/// one batch chunk's gradient, or one of torch.optim's state tensors of it
/// (TrainingBuilder.cpp).
static constexpr llvm::StringLiteral kNamingArgAttrs[] = {
    "txl.param",   "txl.grad",       "txl.chunk_grad",
    "txl.exp_avg", "txl.exp_avg_sq", "txl.momentum_buffer",
    "txl.sum"};

LogicalResult TxlDialect::verifyRegionArgAttribute(Operation *op,
                                                   unsigned regionIndex,
                                                   unsigned argIndex,
                                                   NamedAttribute attr) {
  StringRef name = attr.getName().strref();
  if (llvm::is_contained(kNamingArgAttrs, name)) {
    auto value = dyn_cast<StringAttr>(attr.getValue());
    if (!value || value.empty())
      return op->emitError("'")
             << name << "' of argument " << argIndex
             << " must be a non-empty string (the parameter's state_dict "
                "name)";
    return success();
  }
  if (name == "txl.loss_scale") {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitError("'txl.loss_scale' of argument ")
             << argIndex << " must be a unit attribute";
    auto fn = dyn_cast<FunctionOpInterface>(op);
    if (fn && !fn.getArgumentTypes()[argIndex].isF32())
      return op->emitError("'txl.loss_scale' of argument ")
             << argIndex << " must be on an f32 argument";
    return success();
  }
  if (name == "txl.buffer") {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitError("'txl.buffer' of argument ")
             << argIndex << " must be a unit attribute";
    auto fn = dyn_cast<FunctionOpInterface>(op);
    if (fn && !fn.getArgAttr(argIndex, "txl.param"))
      return op->emitError("'txl.buffer' of argument ")
             << argIndex << " needs 'txl.param' on the same argument";
    return success();
  }
  return op->emitError("unknown txl argument attribute '") << name << "'";
}

/// `attr` as a dense i64 array, each element in [0, bound) and none twice;
/// else an error on `op` that says what it indexes.
static LogicalResult verifyIndexArray(Operation *op, NamedAttribute attr,
                                      int64_t bound, StringRef what) {
  auto array = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
  if (!array)
    return op->emitError("'") << attr.getName().strref()
                              << "' must be an array<i64> of " << what
                              << " indices";
  llvm::SmallSet<int64_t, 8> seen;
  for (int64_t index : array.asArrayRef()) {
    if (index < 0 || index >= bound)
      return op->emitError("'") << attr.getName().strref() << "' index "
                                << index << " is not a valid " << what
                                << " index (the function has " << bound
                                << ")";
    if (!seen.insert(index).second)
      return op->emitError("'") << attr.getName().strref() << "' names "
                                << what << " " << index << " twice";
  }
  return success();
}

/// The roles of `txl.sync` (TxlDialect.td).
static constexpr llvm::StringLiteral kSyncRoles[] = {
    "reads-done", "stores-done", "ds-stored", "kv-staged"};

/// `txl.emitted` (TxlDialect.td): a dictionary of exactly `stage`, `target`
/// and `precision`, each one of txlc's spellings, on a builtin.module.
static LogicalResult verifyEmitted(Operation *op, NamedAttribute attr) {
  if (op->getName().getStringRef() != "builtin.module")
    return op->emitError("'txl.emitted' is an attribute of modules");
  static constexpr llvm::StringLiteral kStages[] = {
      "txl", "txl-opt", "txl-grad", "linalg", "llvm-mlir"};
  static constexpr llvm::StringLiteral kTargets[] = {"cpu", "cuda", "opencl"};
  static constexpr llvm::StringLiteral kPrecisions[] = {"f32", "bf16", "fp16"};
  struct Key {
    StringRef name;
    ArrayRef<llvm::StringLiteral> values;
  };
  const Key keys[] = {
      {"stage", kStages}, {"target", kTargets}, {"precision", kPrecisions}};
  auto dict = dyn_cast<DictionaryAttr>(attr.getValue());
  if (!dict || dict.size() != std::size(keys))
    return op->emitError("'txl.emitted' must be a dictionary of 'stage', "
                         "'target' and 'precision'");
  for (const Key &key : keys) {
    auto value = dict.getAs<StringAttr>(key.name);
    if (!value)
      return op->emitError("'txl.emitted' must be a dictionary of 'stage', "
                           "'target' and 'precision'");
    if (!llvm::is_contained(key.values, value.getValue()))
      return op->emitError("'txl.emitted' has an unknown ")
             << key.name << " \"" << value.getValue() << "\"";
  }
  return success();
}

LogicalResult TxlDialect::verifyOperationAttribute(Operation *op,
                                                   NamedAttribute attr) {
  StringRef name = attr.getName().strref();
  if (name == "txl.dynamic_shared_memory") {
    // txl-dynamic-shared-memory's record on a CUDA kernel: a kernel
    // gpu.func, or the llvm.func convert-gpu-to-nvvm makes of it (named
    // here so that the dialect depends on neither dialect).
    StringRef opName = op->getName().getStringRef();
    bool kernel = opName == "gpu.func" ? op->hasAttr("gpu.kernel")
                                       : opName == "llvm.func";
    if (!kernel)
      return op->emitError("'txl.dynamic_shared_memory' is an attribute of "
                           "kernel gpu.func ops (or their llvm.func)");
    auto bytes = dyn_cast<IntegerAttr>(attr.getValue());
    if (!bytes || !bytes.getType().isInteger(32) || bytes.getInt() <= 0)
      return op->emitError("'txl.dynamic_shared_memory' must be a positive "
                           "i32 (bytes)");
    return success();
  }
  if (name == kEntryAttrName) {
    // The packed entry's symbol: a C identifier in the runtime's namespace
    // (txl_*), on a function with a body (func.func or its llvm.func).
    auto fn = dyn_cast<FunctionOpInterface>(op);
    if (!fn)
      return op->emitError("'txl.entry' is an attribute of functions");
    auto symbol = dyn_cast<StringAttr>(attr.getValue());
    auto isIdentifierChar = [](char c) { return llvm::isAlnum(c) || c == '_'; };
    if (!symbol || !symbol.getValue().starts_with("txl_") ||
        !llvm::all_of(symbol.getValue(), isIdentifierChar))
      return op->emitError("'txl.entry' must be a string naming the packed "
                           "entry point, a C identifier starting with "
                           "'txl_', got ")
             << attr.getValue();
    if (fn.isExternal())
      return op->emitError("'txl.entry' needs a function with a body");
    return success();
  }
  if (name == kSyncAttrName) {
    auto role = dyn_cast<StringAttr>(attr.getValue());
    if (op->getName().getStringRef() != "gpu.barrier" &&
        !isa<SubgroupBarrierOp>(op))
      return op->emitError(
          "'txl.sync' is an attribute of gpu.barrier and txl.subgroup_barrier "
          "ops");
    if (!role || !llvm::is_contained(kSyncRoles, role.getValue()))
      return op->emitError("'txl.sync' must be one of \"reads-done\", "
                           "\"stores-done\", \"ds-stored\", \"kv-staged\", "
                           "got ")
             << attr.getValue();
    return success();
  }
  if (name == kRelShiftRowAttrName || name == kKeyPartAttrName ||
      name == kInteriorTileAttrName || name == kRescaleAttrName) {
    // An index (or, after the lowering to LLVM, integer) value: the test
    // passes add to it or replace it.
    if (op->getNumResults() != 1 || !op->getResult(0).getType().isIntOrIndex())
      return op->emitError("'")
             << name
             << "' is an attribute of ops with one integer or index "
                "result";
    if (name == kRelShiftRowAttrName || name == kInteriorTileAttrName ||
        name == kRescaleAttrName) {
      if (!isa<UnitAttr>(attr.getValue()))
        return op->emitError("'") << name << "' must be a unit attribute";
      return success();
    }
    auto role = dyn_cast<StringAttr>(attr.getValue());
    if (!role || (role.getValue() != "tiles" && role.getValue() != "offset"))
      return op->emitError("'txl.key_part' must be \"tiles\" or \"offset\", "
                           "got ")
             << attr.getValue();
    return success();
  }
  if (name == kEmittedAttrName)
    return verifyEmitted(op, attr);
  if (name != "txl.result_destinations" && name != "txl.built_in_destination")
    return op->emitError("unknown txl attribute '") << name << "'";
  auto fn = dyn_cast<FunctionOpInterface>(op);
  if (!fn)
    return op->emitError("'") << name << "' is an attribute of functions";
  int64_t numResults = fn.getNumResults();
  if (name == "txl.built_in_destination")
    return verifyIndexArray(op, attr, numResults, "result");
  // One destination argument per result (txl-results-to-destinations).
  if (failed(verifyIndexArray(op, attr, fn.getNumArguments(), "argument")))
    return failure();
  int64_t size = cast<DenseI64ArrayAttr>(attr.getValue()).size();
  if (size != numResults)
    return op->emitError("'txl.result_destinations' must name one argument "
                         "per result (")
           << numResults << "), got " << size;
  return success();
}

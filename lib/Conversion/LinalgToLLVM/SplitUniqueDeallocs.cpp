//===- SplitUniqueDeallocs.cpp - Deallocs without alias checks ---*- C++ -*-===//
//
// Ownership-based deallocation frees what a block owns with one
// `bufferization.dealloc` at its end. Lowered, a dealloc of memrefs that may
// alias is a helper that compares every pair of base pointers and one
// conditional free per memref: O(n²) at run time and two blocks per memref in
// the function. Call results are never provably separate upstream, so in a
// training segment every layer's saved activations and gradients (results of
// the private layer functions) end up in one such dealloc. This pass proves
// their separation across the calls and gives each its own dealloc.
//
//===----------------------------------------------------------------------===//

#include "txl/Conversion/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

namespace mlir {
namespace txl {
#define GEN_PASS_DEF_SPLITUNIQUEDEALLOCSPASS
#include "txl/Conversion/Passes.h.inc"
} // namespace txl
} // namespace mlir

using namespace mlir;
using namespace mlir::txl;

namespace {

/// The values a memref may be a view of. A root is a `memref.alloc` or
/// `bufferization.clone` result, a call result or a block argument; `known`
/// is false when some path leads to anything else.
struct Roots {
  llvm::SmallSetVector<Value, 2> values;
  bool known = true;
};

/// Whether `v` is the constant `false`.
static bool isFalse(Value v) { return matchPattern(v, m_Zero()); }

/// Adds the roots of `v` to `roots`.
static void collectRoots(Value v, Roots &roots, unsigned depth = 0) {
  // Views and ifs nest only a few levels in generated code; a deeper chain
  // is treated as unknown rather than followed without bound.
  if (depth > 64) {
    roots.known = false;
    return;
  }
  if (isa<BlockArgument>(v)) {
    // Only the function's own arguments are roots; a region's argument
    // (a loop-carried buffer) could be anything.
    auto arg = cast<BlockArgument>(v);
    if (isa<FunctionOpInterface>(arg.getOwner()->getParentOp()))
      roots.values.insert(v);
    else
      roots.known = false;
    return;
  }
  Operation *def = v.getDefiningOp();
  if (isa<memref::AllocOp, bufferization::CloneOp, func::CallOp>(def)) {
    roots.values.insert(v);
    return;
  }
  if (auto meta = dyn_cast<memref::ExtractStridedMetadataOp>(def))
    return collectRoots(meta.getSource(), roots, depth + 1);
  if (auto view = dyn_cast<ViewLikeOpInterface>(def))
    return collectRoots(view.getViewSource(), roots, depth + 1);
  if (auto ifOp = dyn_cast<scf::IfOp>(def)) {
    unsigned i = cast<OpResult>(v).getResultNumber();
    if (ifOp.getElseRegion().empty()) {
      roots.known = false;
      return;
    }
    // `scf.if %o` where %o is result k of an `scf.if` P: the then branch runs
    // only where P's branch did not yield `false` for %o, so a value of P it
    // yields has only those branches' roots.
    auto owner = ifOp.getCondition().getDefiningOp<scf::IfOp>();
    Value thenValue = ifOp.thenYield().getOperand(i);
    if (owner && thenValue.getDefiningOp() == owner.getOperation() &&
        !owner.getElseRegion().empty()) {
      unsigned k = cast<OpResult>(ifOp.getCondition()).getResultNumber();
      unsigned j = cast<OpResult>(thenValue).getResultNumber();
      for (scf::YieldOp yield : {owner.thenYield(), owner.elseYield()})
        if (!isFalse(yield.getOperand(k)))
          collectRoots(yield.getOperand(j), roots, depth + 1);
    } else {
      collectRoots(thenValue, roots, depth + 1);
    }
    collectRoots(ifOp.elseYield().getOperand(i), roots, depth + 1);
    return;
  }
  roots.known = false;
}

static Roots rootsOf(Value v) {
  Roots roots;
  collectRoots(v, roots);
  return roots;
}

/// A root that is a fresh allocation of the function itself.
static bool isAllocation(Value root) {
  return isa_and_nonnull<memref::AllocOp, bufferization::CloneOp>(
      root.getDefiningOp());
}

struct SplitUniqueDeallocsPass
    : public txl::impl::SplitUniqueDeallocsPassBase<SplitUniqueDeallocsPass> {
  /// Per function with a body: which results are unique.
  llvm::DenseMap<Operation *, SmallVector<bool>> uniqueResults;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto fn : module.getOps<func::FuncOp>())
      if (!fn.isExternal())
        uniqueResults[fn] = findUniqueResults(fn);
    SymbolTable symbols(module);
    module.walk([&](bufferization::DeallocOp op) { split(op, symbols); });
  }

  /// Result i of `fn` is unique when every return yields for it a value
  /// rooted only in allocations of `fn` that no other returned memref is
  /// rooted in.
  static SmallVector<bool> findUniqueResults(func::FuncOp fn) {
    SmallVector<bool> unique(fn.getNumResults(), true);
    fn.walk([&](func::ReturnOp ret) {
      SmallVector<Roots> roots;
      llvm::DenseMap<Value, unsigned> count;
      for (Value v : ret.getOperands()) {
        roots.push_back(isa<BaseMemRefType>(v.getType()) ? rootsOf(v)
                                                         : Roots());
        for (Value r : roots.back().values)
          ++count[r];
      }
      bool anyUnknown =
          llvm::any_of(roots, [](const Roots &r) { return !r.known; });
      for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
        bool ok = isa<BaseMemRefType>(v.getType()) && !anyUnknown &&
                  !roots[i].values.empty() &&
                  llvm::all_of(roots[i].values, [&](Value r) {
                    return isAllocation(r) && count[r] == 1;
                  });
        unique[i] = unique[i] && ok;
      }
    });
    return unique;
  }

  /// Whether `root` is a fresh buffer: an allocation of this function or a
  /// unique result of a function of the module.
  bool isFresh(Value root, SymbolTable &symbols) const {
    if (isAllocation(root))
      return true;
    auto call = root.getDefiningOp<func::CallOp>();
    if (!call)
      return false;
    auto it = uniqueResults.find(symbols.lookup(call.getCallee()));
    return it != uniqueResults.end() &&
           it->second[cast<OpResult>(root).getResultNumber()];
  }

  void split(bufferization::DeallocOp op, SymbolTable &symbols) {
    if (op.getMemrefs().size() < 2)
      return;
    SmallVector<Roots> memrefRoots;
    llvm::DenseMap<Value, unsigned> count;
    // Buffers a call with non-unique results in this op received: such a
    // result may be one of them.
    llvm::DenseSet<Value> passedToCall;
    llvm::DenseSet<Operation *> callsSeen;
    bool allKnown = true;
    auto note = [&](const Roots &roots) {
      allKnown &= roots.known;
      for (Value r : roots.values) {
        ++count[r];
        auto call = r.getDefiningOp<func::CallOp>();
        if (!call || isFresh(r, symbols) || !callsSeen.insert(call).second)
          continue;
        for (Value operand : call.getOperands()) {
          if (!isa<BaseMemRefType>(operand.getType()))
            continue;
          Roots passed = rootsOf(operand);
          allKnown &= passed.known;
          passedToCall.insert(passed.values.begin(), passed.values.end());
        }
      }
    };
    for (Value m : op.getMemrefs()) {
      memrefRoots.push_back(rootsOf(m));
      note(memrefRoots.back());
    }
    for (Value r : op.getRetained())
      note(rootsOf(r));
    // A root this pass cannot follow may be anything, any fresh buffer
    // included.
    if (!allKnown)
      return;

    SmallVector<Value> keptMemrefs, keptConditions;
    SmallVector<std::pair<Value, Value>> own;
    for (auto [m, c, roots] :
         llvm::zip(op.getMemrefs(), op.getConditions(), memrefRoots)) {
      Value root = roots.values.size() == 1 ? roots.values[0] : Value();
      if (root && isFresh(root, symbols) && count[root] == 1 &&
          !passedToCall.contains(root)) {
        own.emplace_back(m, c);
      } else {
        keptMemrefs.push_back(m);
        keptConditions.push_back(c);
      }
    }
    if (own.empty())
      return;
    OpBuilder b(op);
    for (auto [m, c] : own)
      bufferization::DeallocOp::create(b, op.getLoc(), ValueRange{m},
                                       ValueRange{c}, ValueRange{});
    // The split-off memrefs alias no retained value, so the updated
    // conditions come from the kept ones alone.
    if (!keptMemrefs.empty() || !op.getRetained().empty()) {
      auto kept = bufferization::DeallocOp::create(
          b, op.getLoc(), keptMemrefs, keptConditions, op.getRetained());
      op.replaceAllUsesWith(kept.getResults());
    }
    op.erase();
  }
};

} // namespace

//===- FuseParallelLoops.cpp - Sibling elementwise loops as one kernel ----===//
//
// The GPU targets launch one kernel per outermost scf.parallel, and every
// launch costs the host its issue time (bench/gpu/README.md: a small
// segment is bound by it). Adjacent elementwise loops of one iteration
// space (a layer's key and value appended to their windows, the backward's
// gradients of one shape) are merged here into one loop, so one kernel,
// when no work-item of the merged loop can see another's writes.
//
//===----------------------------------------------------------------------===//

#include "txl/Conversion/Passes.h"

#include "mlir/Analysis/AliasAnalysis.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::txl {
#define GEN_PASS_DEF_FUSEPARALLELLOOPSPASS
#include "txl/Conversion/Passes.h.inc"
} // namespace mlir::txl

using namespace mlir;

namespace {

/// A memref access of a loop body: the buffer, its indices, and whether it
/// writes.
struct Access {
  Value memref;
  ValueRange indices;
  bool write;
};

/// The accesses of `loop`'s body, or nothing when the body is not
/// elementwise: only pure ops, memref.load, memref.store and ops whose
/// effects are their regions' (scf.if), and no loop inside (a body with a
/// loop may be a reduction that txl-parallel-loops-to-gpu spreads over a
/// subgroup; merged with another body it would not be).
std::optional<SmallVector<Access>> elementwiseAccesses(scf::ParallelOp loop) {
  SmallVector<Access> accesses;
  WalkResult walk = loop.getBody()->walk([&](Operation *op) {
    if (isa<LoopLikeOpInterface>(op))
      return WalkResult::interrupt();
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      accesses.push_back({load.getMemRef(), load.getIndices(), false});
      return WalkResult::advance();
    }
    if (auto store = dyn_cast<memref::StoreOp>(op)) {
      accesses.push_back({store.getMemRef(), store.getIndices(), true});
      return WalkResult::advance();
    }
    if (op->hasTrait<OpTrait::HasRecursiveMemoryEffects>() ||
        isMemoryEffectFree(op))
      return WalkResult::advance();
    return WalkResult::interrupt();
  });
  if (walk.wasInterrupted())
    return std::nullopt;
  return accesses;
}

/// The function argument or allocation a memref is a view of (through
/// view-like ops), or the memref itself.
Value viewBase(Value memref) {
  while (auto view = memref.getDefiningOp<ViewLikeOpInterface>())
    memref = view.getViewSource();
  return memref;
}

/// Same lower bounds, upper bounds and steps: the same values or equal
/// constants.
bool sameIterationSpace(scf::ParallelOp a, scf::ParallelOp b) {
  auto same = [](ValueRange x, ValueRange y) {
    return x.size() == y.size() && llvm::all_of(llvm::zip(x, y), [](auto pair) {
             auto [u, v] = pair;
             std::optional<int64_t> cu = getConstantIntValue(u);
             return u == v || (cu && cu == getConstantIntValue(v));
           });
  };
  return same(a.getLowerBound(), b.getLowerBound()) &&
         same(a.getUpperBound(), b.getUpperBound()) &&
         same(a.getStep(), b.getStep());
}

struct FuseParallelLoopsPass
    : public txl::impl::FuseParallelLoopsPassBase<FuseParallelLoopsPass> {
  void runOnOperation() override {
    AliasAnalysis &aliases = getAnalysis<AliasAnalysis>();
    func::FuncOp func = getOperation();
    // Two buffers may overlap unless the alias analysis says no or they
    // are views of distinct arguments of the function (One-Shot Bufferize
    // gives every tensor argument the function writes a buffer of its own;
    // txlc's host functions are bufferized so).
    auto mayAlias = [&](Value x, Value y) {
      Value bx = viewBase(x), by = viewBase(y);
      auto isArg = [&](Value v) {
        auto arg = dyn_cast<BlockArgument>(v);
        return arg && arg.getOwner()->isEntryBlock() &&
               arg.getOwner()->getParentOp() == func;
      };
      if (bx != by && isArg(bx) && isArg(by))
        return false;
      return !aliases.alias(x, y).isNo();
    };
    // No work-item of the merged loop sees another's writes: every pair of
    // accesses of which one writes, one in each loop, either cannot
    // overlap or is to the same buffer at the same indices (the first
    // loop's induction variables taken as the second's).
    auto independent = [&](ArrayRef<Access> first, ArrayRef<Access> second,
                           const IRMapping &ivs) {
      for (const Access &x : first)
        for (const Access &y : second) {
          if (!x.write && !y.write)
            continue;
          if (x.memref == y.memref) {
            if (x.indices.size() != y.indices.size() ||
                !llvm::all_of(llvm::zip(x.indices, y.indices), [&](auto p) {
                  return ivs.lookupOrDefault(std::get<0>(p)) == std::get<1>(p);
                }))
              return false;
            continue;
          }
          if (mayAlias(x.memref, y.memref))
            return false;
        }
      return true;
    };

    func.walk([&](Block *block) {
      scf::ParallelOp previous;
      std::optional<SmallVector<Access>> previousAccesses;
      for (Operation &op : llvm::make_early_inc_range(*block)) {
        auto loop = dyn_cast<scf::ParallelOp>(&op);
        if (!loop) {
          // The first loop's body moves down to the second's: only ops
          // without effects may lie between them.
          if (op.getNumRegions() || !isMemoryEffectFree(&op))
            previous = nullptr;
          continue;
        }
        std::optional<SmallVector<Access>> accesses;
        if (loop.getNumResults() == 0)
          accesses = elementwiseAccesses(loop);
        if (previous && accesses && sameIterationSpace(previous, loop)) {
          IRMapping ivs;
          ivs.map(previous.getInductionVars(), loop.getInductionVars());
          if (independent(*previousAccesses, *accesses, ivs)) {
            OpBuilder builder = OpBuilder::atBlockBegin(loop.getBody());
            for (Operation &inner : previous.getBody()->without_terminator())
              builder.clone(inner, ivs);
            previous.erase();
            accesses = elementwiseAccesses(loop);
          }
        }
        previous = accesses ? loop : nullptr;
        previousAccesses = std::move(accesses);
      }
    });
  }
};

} // namespace

//===- FuseParallelLoops.cpp - Sibling elementwise loops as one kernel ----===//
//
// The GPU targets launch one kernel per outermost scf.parallel, and every
// launch costs the host its issue time (bench/gpu/README.md: a small
// segment is bound by it). Elementwise loops of one iteration space (a
// layer's key and value appended to their windows, the backward's
// gradients of one shape) are merged here into one loop, so one kernel,
// when no work-item of the merged loop can see another's writes. Loops of
// iteration spaces not known to be equal (the same shape read from two
// buffers' dims: a segment's hidden states copied to its outputs) merge
// into one loop over the larger of their linearized spaces, each body
// under a guard, when they touch no buffer in common. The two need not be
// adjacent: the first moves down to the second, or the second up to the
// first, past ops whose memory effects touch none of its buffers (a
// reduction over other buffers, allocations).
//
//===----------------------------------------------------------------------===//

#include "txl/Conversion/Passes.h"

#include "mlir/Analysis/AliasAnalysis.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"

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

/// Equal index values: the same SSA value or equal constants.
bool sameIndex(OpFoldResult a, OpFoldResult b) {
  std::optional<int64_t> ca = getConstantIntValue(a);
  return a == b || (ca && ca == getConstantIntValue(b));
}

/// Same lower bounds, upper bounds and steps: the same values or equal
/// constants.
bool sameIterationSpace(scf::ParallelOp a, scf::ParallelOp b) {
  auto same = [](ValueRange x, ValueRange y) {
    return x.size() == y.size() && llvm::all_of(llvm::zip(x, y), [](auto pair) {
             return sameIndex(std::get<0>(pair), std::get<1>(pair));
           });
  };
  return same(a.getLowerBound(), b.getLowerBound()) &&
         same(a.getUpperBound(), b.getUpperBound()) &&
         same(a.getStep(), b.getStep());
}

/// The parameters the kernel of `loops` merged would take, as
/// txl-parallel-loops-to-gpu passes them: every value the bodies use from
/// above but constants, and the bounds; a memref as its descriptor (two
/// pointers, the offset, sizes and strides), anything else as one. Each is
/// 8 bytes at most.
int64_t kernelParams(ArrayRef<scf::ParallelOp> loops) {
  llvm::SetVector<Value> above;
  for (scf::ParallelOp loop : loops) {
    getUsedValuesDefinedAbove(loop.getRegion(), above);
    above.insert_range(loop.getLowerBound());
    above.insert_range(loop.getUpperBound());
    above.insert_range(loop.getStep());
  }
  int64_t params = 0;
  for (Value v : above) {
    if (matchPattern(v, m_Constant()))
      continue;
    auto memref = dyn_cast<MemRefType>(v.getType());
    params += memref ? 3 + 2 * memref.getRank() : 1;
  }
  return params;
}

/// Lower bounds 0 and steps 1 (constants): the loop's space is the box
/// [0, ub) and its linearized size the product of the upper bounds.
bool isNormalized(scf::ParallelOp loop) {
  return llvm::all_of(loop.getLowerBound(),
                      [](Value v) { return isConstantIntValue(v, 0); }) &&
         llvm::all_of(loop.getStep(),
                      [](Value v) { return isConstantIntValue(v, 1); });
}

/// Merges the normalized loops `first` and `second` (in this order, no ops
/// with effects between them) into one new one-dimensional loop at
/// `second`'s place over [0, max(|first|, |second|)), |x| the product of
/// x's upper bounds (each clamped at 0, as the launch does). Each body runs
/// under `linear < |x|` with its induction variables the digits of the
/// linear index, innermost fastest (txl-parallel-loops-to-gpu's order, so
/// that consecutive work-items still touch consecutive elements). The
/// merged loop runs max(|first|, |second|) work-items where the two
/// kernels ran |first| + |second|. Returns the new loop.
scf::ParallelOp mergeLinearized(scf::ParallelOp first, scf::ParallelOp second) {
  Location loc = second.getLoc();
  OpBuilder b(second);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  auto size = [&](scf::ParallelOp loop) {
    Value total;
    for (Value ub : loop.getUpperBound()) {
      Value extent = b.createOrFold<arith::MaxSIOp>(loc, ub, zero);
      total =
          total ? b.createOrFold<arith::MulIOp>(loc, total, extent) : extent;
    }
    return total;
  };
  Value firstSize = size(first), secondSize = size(second);
  Value total = b.createOrFold<arith::MaxSIOp>(loc, firstSize, secondSize);
  auto merged = scf::ParallelOp::create(b, loc, ValueRange{zero},
                                        ValueRange{total}, ValueRange{one});
  Value linear = merged.getInductionVars().front();
  OpBuilder body = OpBuilder::atBlockBegin(merged.getBody());
  for (auto [loop, loopSize] :
       {std::pair(first, firstSize), std::pair(second, secondSize)}) {
    Value inside = arith::CmpIOp::create(body, loc, arith::CmpIPredicate::slt,
                                         linear, loopSize);
    auto guard = scf::IfOp::create(body, loc, inside, /*withElseRegion=*/false);
    OpBuilder then = guard.getThenBodyBuilder();
    IRMapping ivs;
    Value rest = linear;
    ValueRange ubs = loop.getUpperBound();
    for (int64_t d = ubs.size() - 1; d > 0; --d) {
      ivs.map(loop.getInductionVars()[d],
              arith::RemUIOp::create(then, loc, rest, ubs[d]));
      rest = arith::DivUIOp::create(then, loc, rest, ubs[d]);
    }
    ivs.map(loop.getInductionVars().front(), rest);
    for (Operation &inner : loop.getBody()->without_terminator())
      then.clone(inner, ivs);
  }
  first.erase();
  second.erase();
  return merged;
}

/// True when `x`'s indices [xo, xo + (xs - 1) · xt] in one dimension all
/// come before `y`'s, which start at yo: both ranges static and ordered so,
/// or x of unit stride ending where y starts (yo the value xo + xs: xs
/// itself when xo is 0, or their sum; a subview's sizes are not negative).
bool endsBefore(OpFoldResult xo, OpFoldResult xs, OpFoldResult xt,
                OpFoldResult yo) {
  std::optional<int64_t> o = getConstantIntValue(xo),
                         n = getConstantIntValue(xs),
                         t = getConstantIntValue(xt),
                         first = getConstantIntValue(yo);
  if (o && n && t && first && *t > 0)
    return *n <= 0 || *o + (*n - 1) * *t < *first;
  if (!t || *t != 1)
    return false;
  if (o == 0 && sameIndex(xs, yo))
    return true;
  auto start = dyn_cast_if_present<Value>(yo);
  auto sum = start ? start.getDefiningOp<arith::AddIOp>() : arith::AddIOp();
  return sum && ((sameIndex(sum.getLhs(), xo) && sameIndex(sum.getRhs(), xs)) ||
                 (sameIndex(sum.getLhs(), xs) && sameIndex(sum.getRhs(), xo)));
}

/// Subviews of one buffer of the identity layout (so that distinct indices
/// are distinct elements) that share no element: in some dimension one's
/// indices all come before the other's (endsBefore): a layer's q, k and v
/// gradients written into the columns of one qkv gradient, or a new
/// memory's rows from the old memory and from the segment.
bool disjointSubviews(memref::SubViewOp x, memref::SubViewOp y) {
  auto source = dyn_cast<MemRefType>(x.getSource().getType());
  if (x.getSource() != y.getSource() || !source ||
      !source.getLayout().isIdentity())
    return false;
  for (auto [xo, xs, xt, yo, ys, yt] :
       llvm::zip(x.getMixedOffsets(), x.getMixedSizes(), x.getMixedStrides(),
                 y.getMixedOffsets(), y.getMixedSizes(), y.getMixedStrides()))
    if (endsBefore(xo, xs, xt, yo) || endsBefore(yo, ys, yt, xo))
      return true;
  return false;
}

/// Ops scanned back from a loop for one to merge with (compile time).
constexpr int64_t kMaxScannedOps = 256;

/// Appends to `accesses` the buffers `root` (and the ops in its regions)
/// reads and writes, as its memory effects say: an allocation's effect on
/// its own result is none that an earlier loop can see, a free counts as a
/// write. False when an effect is on no particular buffer or an op does not
/// say its effects (a call, a kernel launch): the scan stops there.
bool collectEffects(Operation *root, SmallVectorImpl<Access> &accesses) {
  WalkResult walk = root->walk([&](Operation *op) {
    if (op->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
      return WalkResult::advance();
    auto effects = dyn_cast<MemoryEffectOpInterface>(op);
    if (!effects)
      return WalkResult::interrupt();
    SmallVector<MemoryEffects::EffectInstance> instances;
    effects.getEffects(instances);
    for (const MemoryEffects::EffectInstance &effect : instances) {
      if (isa<MemoryEffects::Allocate>(effect.getEffect()))
        continue;
      Value value = effect.getValue();
      if (!value || !isa<BaseMemRefType>(value.getType()))
        return WalkResult::interrupt();
      accesses.push_back(
          {value, {}, !isa<MemoryEffects::Read>(effect.getEffect())});
    }
    return WalkResult::advance();
  });
  return !walk.wasInterrupted();
}

/// The ops between `target` and `loop` (same block, `target` first) that
/// define values `loop` uses, in program order, when each is an
/// allocation or a pure op without regions whose own operands are defined
/// before `target` or by such ops: moved before `target`, they let `loop`
/// move up to it. Nothing when some value cannot be hoisted so.
std::optional<SmallVector<Operation *>> hoistedDefs(scf::ParallelOp loop,
                                                    Operation *target) {
  llvm::SetVector<Operation *> defs;
  SmallVector<Value> worklist(loop->getOperands());
  llvm::SetVector<Value> above;
  getUsedValuesDefinedAbove(loop.getRegion(), above);
  worklist.append(above.begin(), above.end());
  while (!worklist.empty()) {
    Operation *def = worklist.pop_back_val().getDefiningOp();
    if (!def || def->getBlock() != target->getBlock() ||
        def->isBeforeInBlock(target) || defs.contains(def))
      continue;
    bool allocation = isa<memref::AllocOp, memref::AllocaOp>(def);
    if (def->getNumRegions() || (!allocation && !isMemoryEffectFree(def)))
      return std::nullopt;
    defs.insert(def);
    worklist.append(def->operand_begin(), def->operand_end());
  }
  SmallVector<Operation *> ordered = defs.takeVector();
  llvm::sort(ordered,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return ordered;
}

struct FuseParallelLoopsPass
    : public txl::impl::FuseParallelLoopsPassBase<FuseParallelLoopsPass> {
  using Base::Base;

  void runOnOperation() override {
    AliasAnalysis &aliases = getAnalysis<AliasAnalysis>();
    func::FuncOp func = getOperation();
    // Two buffers may overlap unless the alias analysis says no or they
    // are views of distinct arguments of the function (One-Shot Bufferize
    // gives every tensor argument the function writes a buffer of its own;
    // txlc's host functions are bufferized so), or of an argument and a
    // result of a call of a function defined in the module, or of two such
    // calls' results. Such a result is a buffer the caller owns and frees:
    // upstream's ownership-based deallocation, which txlc's bufferization
    // runs, makes a callee return a buffer of its own (or a clone), and
    // drop-equivalent-buffer-results has already replaced a result that was
    // an argument updated in place by that argument at the call.
    auto isArg = [&](Value v) {
      auto arg = dyn_cast<BlockArgument>(v);
      return arg && arg.getOwner()->isEntryBlock() &&
             arg.getOwner()->getParentOp() == func;
    };
    SymbolTableCollection symbols;
    auto isCallResult = [&](Value v) {
      auto call = v.getDefiningOp<func::CallOp>();
      if (!call)
        return false;
      auto callee = symbols.lookupNearestSymbolFrom<func::FuncOp>(
          call, call.getCalleeAttr());
      return callee && !callee.isExternal();
    };
    auto mayAlias = [&](Value x, Value y) {
      auto sx = x.getDefiningOp<memref::SubViewOp>();
      auto sy = y.getDefiningOp<memref::SubViewOp>();
      if (sx && sy && disjointSubviews(sx, sy))
        return false;
      Value bx = viewBase(x), by = viewBase(y);
      if (bx != by && (isArg(bx) || isCallResult(bx)) &&
          (isArg(by) || isCallResult(by)))
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

    // Stricter, for bodies run at different points: no buffer that one
    // loop writes may overlap any buffer of the other.
    auto disjoint = [&](ArrayRef<Access> first, ArrayRef<Access> second) {
      return llvm::all_of(first, [&](const Access &x) {
        return llvm::all_of(second, [&](const Access &y) {
          return (!x.write && !y.write) || !mayAlias(x.memref, y.memref);
        });
      });
    };

    // The loops of each block in order; one merged into a later one is
    // erased, and the merged loop takes the later one's place.
    func.walk([&](Block *block) {
      SmallVector<scf::ParallelOp> loops;
      for (Operation &op : *block)
        if (auto loop = dyn_cast<scf::ParallelOp>(&op))
          loops.push_back(loop);
      for (scf::ParallelOp &loop : loops) {
        if (loop.getNumResults())
          continue;
        std::optional<SmallVector<Access>> accesses = elementwiseAccesses(loop);
        if (!accesses)
          continue;
        // Back from the loop: the nearest earlier elementwise loop that
        // merges with it, either sunk to it past the ops between (`between`:
        // their accesses) or with it hoisted up to that loop (and the
        // allocations and pure ops it uses from between, hoistedDefs).
        SmallVector<Access> between;
        int64_t scanned = 0;
        for (Operation *op = loop->getPrevNode();
             op && scanned < kMaxScannedOps;
             op = op->getPrevNode(), ++scanned) {
          auto previous = dyn_cast<scf::ParallelOp>(op);
          std::optional<SmallVector<Access>> previousAccesses;
          if (previous && !previous.getNumResults())
            previousAccesses = elementwiseAccesses(previous);
          if (previousAccesses && kernelParams({previous, loop}) <= maxParams) {
            bool same = sameIterationSpace(previous, loop);
            IRMapping ivs;
            ivs.map(previous.getInductionVars(), loop.getInductionVars());
            bool mergeable =
                same ? independent(*previousAccesses, *accesses, ivs)
                     : isNormalized(previous) && isNormalized(loop) &&
                           disjoint(*previousAccesses, *accesses);
            std::optional<SmallVector<Operation *>> defs;
            // A loop moves past the ops between the two when it and they
            // are disjoint: no buffer that one writes may overlap one that
            // the other accesses.
            bool sink = mergeable && disjoint(*previousAccesses, between);
            if (mergeable && !sink && disjoint(*accesses, between))
              defs = hoistedDefs(loop, previous);
            if (sink || defs) {
              if (!sink) {
                for (Operation *def : *defs)
                  def->moveBefore(previous);
                loop->moveAfter(previous);
              }
              if (same) {
                OpBuilder builder = OpBuilder::atBlockBegin(loop.getBody());
                for (Operation &inner :
                     previous.getBody()->without_terminator())
                  builder.clone(inner, ivs);
                previous.erase();
              } else {
                loop = mergeLinearized(previous, loop);
              }
              break;
            }
          }
          if (!collectEffects(op, between))
            break;
        }
      }
    });
  }
};

} // namespace

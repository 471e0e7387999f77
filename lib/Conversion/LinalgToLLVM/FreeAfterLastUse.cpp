//===- FreeAfterLastUse.cpp - memref.dealloc after the last use -*- C++ -*-===//
//
// Ownership-based deallocation frees what a block owns at the block's end.
// In a training segment that is the end of the whole forward and backward:
// every layer's saved activations and temporaries stayed allocated until
// the last layer's backward was done, and their pointers stayed alive
// through every later call, which made code generation grow with the square
// of the layers (2,617 frees in one block at 200 layers; issue #48). This
// pass moves each unconditional `memref.dealloc` to just after the last
// operation of its block that uses the buffer or any value that may alias
// it.
//
//===----------------------------------------------------------------------===//

#include "txl/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMTypes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir {
namespace txl {
#define GEN_PASS_DEF_FREEAFTERLASTUSEPASS
#include "txl/Conversion/Passes.h.inc"
} // namespace txl
} // namespace mlir

using namespace mlir;
using namespace mlir::txl;

namespace {

/// Whether a value of `type` can carry a buffer's address: a memref or an
/// LLVM pointer.
bool mayCarryAddress(Type type) {
  return isa<BaseMemRefType, LLVM::LLVMPointerType>(type);
}

/// The buffer `op` is a view of, when it is a view-like op or
/// memref.extract_strided_metadata (its base buffer); null otherwise.
Value viewSource(Operation *op) {
  if (auto view = dyn_cast<ViewLikeOpInterface>(op))
    return view.getViewSource();
  if (auto meta = dyn_cast<memref::ExtractStridedMetadataOp>(op))
    return meta.getSource();
  return {};
}

/// The buffer `v` is a view of, through viewSource; null past 64 levels.
Value rootOf(Value v) {
  for (unsigned depth = 0; depth < 64; ++depth) {
    Operation *def = v.getDefiningOp();
    Value source = def ? viewSource(def) : Value();
    if (!source)
      return v;
    v = source;
  }
  return {};
}

/// The last op of `dealloc`'s block that uses its buffer or a
/// value that may alias it. Every address-carrying result of an op that
/// takes an alias is an alias (views, casts), and so is every such result
/// of an op whose region yields one (scf.if, scf.for), but not a call's.
/// An address taken as an integer (memref.extract_aligned_pointer_as_index,
/// the BLAS calls' operands) makes every result computed from it an alias,
/// whatever its type.
///
/// `position` holds each op's index in its block before any move: a block
/// whose ops moved renumbers itself on the next isBeforeInBlock, once per
/// dealloc moved (quadratic: 2 s of a 400-layer compile). Returns the op
/// to move `dealloc` after (null: it stays), and in `chain` the ops that
/// move with it.
Operation *findLastUse(memref::DeallocOp dealloc,
                       const llvm::DenseMap<Operation *, unsigned> &position,
                       SmallVectorImpl<Operation *> &chain) {
  auto before = [&](Operation *a, Operation *b) {
    return position.lookup(a) < position.lookup(b);
  };
  Block *block = dealloc->getBlock();
  Value root = rootOf(dealloc.getMemref());
  if (!root)
    return nullptr;
  // The views and metadata extraction that only feed this dealloc (what the
  // lowering of the deallocations placed at the block's end) move with it.
  Operation *next = dealloc;
  for (Value v = dealloc.getMemref(); v != root;) {
    Operation *def = v.getDefiningOp();
    if (def->getBlock() != block ||
        !llvm::all_of(def->getUsers(),
                      [&](Operation *user) { return user == next; }))
      break;
    chain.push_back(def);
    next = def;
    v = viewSource(def);
  }
  // Each alias, and whether it is an address as an integer.
  SmallVector<std::pair<Value, bool>> aliases = {{root, false}};
  llvm::DenseSet<Value> seen = {root};
  Operation *last = nullptr;
  if (Operation *def = root.getDefiningOp())
    last = block->findAncestorOpInBlock(*def);
  for (unsigned i = 0; i < aliases.size(); ++i) {
    auto [alias, isInteger] = aliases[i];
    for (Operation *user : alias.getUsers()) {
      if (user == dealloc || llvm::is_contained(chain, user))
        continue;
      Operation *at = block->findAncestorOpInBlock(*user);
      // A use outside the block (which is then nested in the user's): the
      // buffer may be read after the block ends; leave the dealloc.
      if (!at)
        return nullptr;
      if (!last || before(last, at))
        last = at;
      // A call's results are buffers the callee allocated: ownership-based
      // deallocation makes a function clone what it would return of its
      // arguments (and drops the results equivalent to one), so the
      // results of a call never alias its operands.
      if (isa<func::CallOp>(user) && !isInteger)
        continue;
      bool taken =
          isInteger || isa<memref::ExtractAlignedPointerAsIndexOp>(user);
      // What a region yields may be a result of the op that holds it.
      Operation *producer = user;
      if (user->hasTrait<OpTrait::IsTerminator>())
        producer = user->getParentOp();
      for (Value result : producer->getResults())
        if (taken || mayCarryAddress(result.getType()))
          if (seen.insert(result).second)
            aliases.push_back({result, taken});
    }
  }
  // Only ever earlier than where it is.
  Operation *first = chain.empty() ? dealloc.getOperation() : chain.back();
  if (!last || !before(last, first) || last->getNextNode() == first)
    return nullptr;
  return last;
}

struct FreeAfterLastUsePass
    : public txl::impl::FreeAfterLastUsePassBase<FreeAfterLastUsePass> {
  void runOnOperation() override {
    SmallVector<memref::DeallocOp> deallocs;
    llvm::DenseMap<Operation *, unsigned> position;
    getOperation().walk([&](Block *block) {
      unsigned index = 0;
      for (Operation &op : *block) {
        position[&op] = index++;
        if (auto dealloc = dyn_cast<memref::DeallocOp>(op))
          deallocs.push_back(dealloc);
      }
    });
    // Every place is found before anything moves; nothing that moves (a
    // dealloc, the views only it uses) is the last use of another buffer.
    struct Move {
      memref::DeallocOp dealloc;
      Operation *after;
      SmallVector<Operation *> chain;
    };
    SmallVector<Move> moves;
    for (memref::DeallocOp dealloc : deallocs) {
      SmallVector<Operation *> chain;
      if (Operation *last = findLastUse(dealloc, position, chain))
        moves.push_back({dealloc, last, std::move(chain)});
    }
    for (Move &move : moves) {
      move.dealloc->moveAfter(move.after);
      // The buffer's end of the chain first: each op before its user.
      for (Operation *op : llvm::reverse(move.chain))
        op->moveBefore(move.dealloc);
    }
  }
};

} // namespace

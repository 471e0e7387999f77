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

/// Moves `dealloc` after the last op of its block that uses its buffer or a
/// value that may alias it. Every address-carrying result of an op that
/// takes an alias is an alias (views, casts), and so is every such result
/// of an op whose region yields one (scf.if, scf.for), but not a call's.
/// An address taken as an integer (memref.extract_aligned_pointer_as_index,
/// the BLAS calls' operands) makes every result computed from it an alias,
/// whatever its type.
void moveAfterLastUse(memref::DeallocOp dealloc) {
  Block *block = dealloc->getBlock();
  Value root = rootOf(dealloc.getMemref());
  if (!root)
    return;
  // The views and metadata extraction that only feed this dealloc (what the
  // lowering of the deallocations placed at the block's end) move with it.
  SmallVector<Operation *> chain;
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
        return;
      if (!last || last->isBeforeInBlock(at))
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
  if (!last || !last->isBeforeInBlock(first) || last->getNextNode() == first)
    return;
  dealloc->moveAfter(last);
  // The buffer's end of the chain first: each op before its user.
  for (Operation *op : llvm::reverse(chain))
    op->moveBefore(dealloc);
}

struct FreeAfterLastUsePass
    : public txl::impl::FreeAfterLastUsePassBase<FreeAfterLastUsePass> {
  void runOnOperation() override {
    SmallVector<memref::DeallocOp> deallocs;
    getOperation().walk([&](memref::DeallocOp op) { deallocs.push_back(op); });
    for (memref::DeallocOp dealloc : deallocs)
      moveAfterLastUse(dealloc);
  }
};

} // namespace

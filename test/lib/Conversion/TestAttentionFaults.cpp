//===- TestAttentionFaults.cpp - Break the attention kernels on purpose ---===//
//
// Test-only passes (registered in txl-opt only, as MLIR's test/lib) that
// break the attention kernels the CPU and GPU lowerings build, so that the
// negative-control tests can show that the numerics checks fail on a wrong
// kernel. Each acts on the ops the kernel builders mark (TxlDialect.td):
//
//   txl-test-drop-barrier{sync=ROLE}   erases the gpu.barrier ops marked
//                                      `txl.sync = ROLE`;
//   txl-test-rel-shift-offset{offset=N} adds N to every value marked
//                                      `txl.rel_shift_row` (BD read N rows
//                                      of r off: any N but 0 is wrong);
//   txl-test-whole-key-range           gives every key part of a split
//                                      forward kernel the whole range of
//                                      keys (`txl.key_part`: one part's
//                                      tiles become all tiles, its offset
//                                      0): the combined output stays right,
//                                      each part's log-sum-exp does not;
//   txl-test-interior-tile{interior=B} decides every whole key tile of the
//                                      tensor-core forward interior
//                                      (`txl.interior_tile` = B): true,
//                                      every tile skips the mask (the
//                                      diagonal's future keys count);
//                                      false, every tile takes it (right,
//                                      but the machine-code path budget
//                                      fails).
//   txl-test-rescale{rescale=B}        decides every key tile's rescale of
//                                      O in the tensor-core forward
//                                      (`txl.rescale` = B): false, no tile
//                                      rescales (a row whose maximum grows
//                                      past the threshold goes wrong);
//                                      true, every tile takes the branch
//                                      (right, but the machine-code path
//                                      budget fails).
//   txl-test-wait-at-issue             moves every txl.warpgroup_mma_wait
//                                      to just after its product, waiting
//                                      for all (pending 0): right, but
//                                      nothing overlaps an async product
//                                      (the machine-code order check
//                                      fails).
//
// Each fails when the module holds no marked op, so that a test cannot pass
// on a kernel it did not break.
//
//===----------------------------------------------------------------------===//

#include "TestPasses.h"

#include "txl/IR/TxlDialect.h"
#include "txl/IR/TxlOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;
using namespace mlir::txl;

namespace {

/// The ops of `module` carrying the discardable attribute `name`, in walk
/// order (collected first: the passes erase or rewrite them).
SmallVector<Operation *> markedOps(ModuleOp module, StringRef name) {
  SmallVector<Operation *> ops;
  module.walk([&](Operation *op) {
    if (op->hasAttr(name))
      ops.push_back(op);
  });
  return ops;
}

/// Replaces every i1 op of `module` marked `name` by the constant `value`;
/// fails, naming the pass `pass`, when none is marked.
LogicalResult decideMarked(ModuleOp module, StringRef name, bool value,
                           StringRef pass) {
  SmallVector<Operation *> marked = markedOps(module, name);
  if (marked.empty())
    return module.emitError(pass) << ": no value marked " << name;
  for (Operation *op : marked) {
    OpBuilder b(op);
    op->getResult(0).replaceAllUsesWith(
        arith::ConstantIntOp::create(b, op->getLoc(), value ? 1 : 0, 1));
    op->erase();
  }
  return success();
}

struct TestDropBarrierPass
    : public PassWrapper<TestDropBarrierPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestDropBarrierPass)

  TestDropBarrierPass() = default;
  TestDropBarrierPass(const TestDropBarrierPass &pass) : PassWrapper(pass) {}

  StringRef getArgument() const final { return "txl-test-drop-barrier"; }
  StringRef getDescription() const final {
    return "Test only: erase the attention kernels' gpu.barrier ops marked "
           "txl.sync = <sync>";
  }

  Option<std::string> sync{
      *this, "sync",
      llvm::cl::desc("The role of the barriers to erase: reads-done, "
                     "stores-done, ds-stored or kv-staged")};

  void runOnOperation() override {
    ModuleOp module = getOperation();
    int64_t erased = 0;
    for (Operation *op : markedOps(module, TxlDialect::kSyncAttrName)) {
      auto role = op->getAttrOfType<StringAttr>(TxlDialect::kSyncAttrName);
      if (role && role.getValue() == sync) {
        op->erase();
        ++erased;
      }
    }
    if (erased == 0) {
      module.emitError("txl-test-drop-barrier: no gpu.barrier marked "
                       "txl.sync = \"")
          << sync << "\"";
      return signalPassFailure();
    }
  }
};

struct TestRelShiftOffsetPass
    : public PassWrapper<TestRelShiftOffsetPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestRelShiftOffsetPass)

  TestRelShiftOffsetPass() = default;
  TestRelShiftOffsetPass(const TestRelShiftOffsetPass &pass)
      : PassWrapper(pass) {}

  StringRef getArgument() const final { return "txl-test-rel-shift-offset"; }
  StringRef getDescription() const final {
    return "Test only: add <offset> to every r row marked txl.rel_shift_row "
           "(the attention kernels read BD that many rows off)";
  }

  Option<int64_t> offset{
      *this, "offset",
      llvm::cl::desc("Rows added to the r row of every BD tile (not 0)"),
      llvm::cl::init(0)};

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (offset == 0) {
      module.emitError("txl-test-rel-shift-offset: offset must not be 0");
      return signalPassFailure();
    }
    SmallVector<Operation *> rows =
        markedOps(module, TxlDialect::kRelShiftRowAttrName);
    if (rows.empty()) {
      module.emitError("txl-test-rel-shift-offset: no value marked "
                       "txl.rel_shift_row");
      return signalPassFailure();
    }
    for (Operation *op : rows) {
      Value row = op->getResult(0);
      OpBuilder b(op->getContext());
      b.setInsertionPointAfter(op);
      Value shift = arith::ConstantOp::create(
          b, op->getLoc(), b.getIntegerAttr(row.getType(), offset));
      Value shifted = arith::AddIOp::create(b, op->getLoc(), row, shift);
      row.replaceAllUsesExcept(shifted, shifted.getDefiningOp());
    }
  }
};

struct TestWholeKeyRangePass
    : public PassWrapper<TestWholeKeyRangePass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestWholeKeyRangePass)

  StringRef getArgument() const final { return "txl-test-whole-key-range"; }
  StringRef getDescription() const final {
    return "Test only: every key part of the split forward attention "
           "kernels walks all the visible keys (txl.key_part)";
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<Operation *> marked =
        markedOps(module, TxlDialect::kKeyPartAttrName);
    if (marked.empty()) {
      module.emitError("txl-test-whole-key-range: no value marked "
                       "txl.key_part");
      return signalPassFailure();
    }
    for (Operation *op : marked) {
      auto role = op->getAttrOfType<StringAttr>(TxlDialect::kKeyPartAttrName);
      Value result = op->getResult(0);
      if (role.getValue() == "tiles") {
        // ceil(tiles / parts) -> tiles: a part holds every tile.
        result.replaceAllUsesWith(op->getOperand(0));
      } else {
        // part · keys per part -> 0: every part starts at the first key.
        OpBuilder b(op);
        result.replaceAllUsesWith(arith::ConstantOp::create(
            b, op->getLoc(), b.getIntegerAttr(result.getType(), 0)));
      }
      op->erase();
    }
  }
};

struct TestInteriorTilePass
    : public PassWrapper<TestInteriorTilePass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestInteriorTilePass)

  TestInteriorTilePass() = default;
  TestInteriorTilePass(const TestInteriorTilePass &pass) : PassWrapper(pass) {}

  StringRef getArgument() const final { return "txl-test-interior-tile"; }
  StringRef getDescription() const final {
    return "Test only: decide every whole key tile of the tensor-core "
           "attention forward interior (skipping the mask) or not "
           "(txl.interior_tile)";
  }

  Option<bool> interior{
      *this, "interior",
      llvm::cl::desc("true: every whole key tile skips the mask; false: "
                     "every one takes it"),
      llvm::cl::init(true)};

  void runOnOperation() override {
    if (failed(decideMarked(getOperation(), TxlDialect::kInteriorTileAttrName,
                            interior, getArgument())))
      signalPassFailure();
  }
};

struct TestRescalePass
    : public PassWrapper<TestRescalePass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestRescalePass)

  TestRescalePass() = default;
  TestRescalePass(const TestRescalePass &pass) : PassWrapper(pass) {}

  StringRef getArgument() const final { return "txl-test-rescale"; }
  StringRef getDescription() const final {
    return "Test only: decide every key tile's rescale of O in the "
           "tensor-core attention forward (txl.rescale)";
  }

  Option<bool> rescale{*this, "rescale",
                       llvm::cl::desc("true: every key tile rescales; false: "
                                      "none does"),
                       llvm::cl::init(false)};

  void runOnOperation() override {
    if (failed(decideMarked(getOperation(), TxlDialect::kRescaleAttrName,
                            rescale, getArgument())))
      signalPassFailure();
  }
};

struct TestWaitAtIssuePass
    : public PassWrapper<TestWaitAtIssuePass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestWaitAtIssuePass)

  StringRef getArgument() const final { return "txl-test-wait-at-issue"; }
  StringRef getDescription() const final {
    return "Test only: wait for every asynchronous warpgroup product where "
           "it is issued (txl.warpgroup_mma_wait moved after it, pending 0)";
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<WarpgroupMmaWaitOp> waits;
    module.walk([&](WarpgroupMmaWaitOp op) { waits.push_back(op); });
    if (waits.empty()) {
      module.emitError("txl-test-wait-at-issue: no txl.warpgroup_mma_wait");
      return signalPassFailure();
    }
    for (WarpgroupMmaWaitOp op : waits) {
      op->moveAfter(op.getProduct().getDefiningOp());
      op.setPending(0);
    }
  }
};

} // namespace

void mlir::txl::test::registerTestAttentionFaultPasses() {
  PassRegistration<TestDropBarrierPass>();
  PassRegistration<TestRelShiftOffsetPass>();
  PassRegistration<TestWholeKeyRangePass>();
  PassRegistration<TestInteriorTilePass>();
  PassRegistration<TestRescalePass>();
  PassRegistration<TestWaitAtIssuePass>();
}

//===- PrepareGpuHost.cpp - Bufferized host code for the GPU targets -*- C++
//-*-===//
//
// On the GPU targets every memref.alloc of a host function becomes device
// memory (finalize-memref-to-llvm's generic allocation functions, which the
// runtime implements with the device's allocator), and the host never reads
// or writes device memory. This pass brings bufferized host code to that
// form:
// - memref.copy becomes linalg.copy, so that it runs as a kernel like every
//   other linalg op (txl-parallel-loops-to-gpu);
// - the small index/i1 arrays that the buffer-deallocation lowering keeps
//   on the host (which buffers to free) become memref.alloca.
//
//===----------------------------------------------------------------------===//

#include "txl/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir::txl {
#define GEN_PASS_DEF_PREPAREGPUHOSTPASS
#include "txl/Conversion/Passes.h.inc"
} // namespace mlir::txl

using namespace mlir;
using namespace mlir::txl;

namespace {

/// True when every use of `value` (through memref.cast) is a host access,
/// a deallocation or a call: the bookkeeping arrays of the deallocation
/// lowering, which the host reads.
bool onlyHostBookkeeping(Value value) {
  for (Operation *user : value.getUsers()) {
    if (auto cast = dyn_cast<memref::CastOp>(user)) {
      if (!onlyHostBookkeeping(cast.getResult()))
        return false;
      continue;
    }
    if (!isa<memref::LoadOp, memref::StoreOp, memref::DeallocOp, func::CallOp>(
            user))
      return false;
  }
  return true;
}

struct PrepareGpuHostPass
    : public txl::impl::PrepareGpuHostPassBase<PrepareGpuHostPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<memref::CopyOp> copies;
    SmallVector<memref::AllocOp> hostArrays;
    module.walk([&](Operation *op) {
      if (op->getParentOfType<gpu::GPUModuleOp>())
        return;
      if (auto copy = dyn_cast<memref::CopyOp>(op))
        copies.push_back(copy);
      if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
        Type element = alloc.getType().getElementType();
        if ((element.isIndex() || element.isInteger(1)) &&
            alloc.getType().hasStaticShape() &&
            onlyHostBookkeeping(alloc.getResult()))
          hostArrays.push_back(alloc);
      }
    });
    for (memref::CopyOp copy : copies) {
      OpBuilder b(copy);
      linalg::CopyOp::create(b, copy.getLoc(), copy.getSource(),
                             copy.getTarget());
      copy.erase();
    }
    for (memref::AllocOp alloc : hostArrays) {
      OpBuilder b(alloc);
      auto alloca =
          memref::AllocaOp::create(b, alloc.getLoc(), alloc.getType());
      SmallVector<Operation *> deallocs;
      for (Operation *user : alloc->getUsers())
        if (isa<memref::DeallocOp>(user))
          deallocs.push_back(user);
      for (Operation *dealloc : deallocs)
        dealloc->erase();
      alloc.replaceAllUsesWith(alloca.getResult());
      alloc.erase();
    }
  }
};

} // namespace

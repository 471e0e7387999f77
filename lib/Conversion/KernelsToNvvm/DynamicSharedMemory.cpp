//===- DynamicSharedMemory.cpp - Wide workgroup tiles as dynamic shared ---===//
//
// PTX caps a kernel's static shared memory at 48 KiB. Kernels whose
// workgroup attributions need more (the attention backward's tiles at
// d_head 128) take them from CUDA's dynamic shared memory instead: one
// gpu.dynamic_shared_memory buffer, a memref.view per former attribution,
// and the byte count on every launch of the kernel. After the NVVM
// lowering, the buffer's global becomes an extern declaration.
//
//===----------------------------------------------------------------------===//

#include "txl/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/MathExtras.h"

namespace mlir::txl {
#define GEN_PASS_DEF_DYNAMICSHAREDMEMORYPASS
#define GEN_PASS_DEF_EXTERNDYNAMICSHAREDPASS
#include "txl/Conversion/Passes.h.inc"
} // namespace mlir::txl

using namespace mlir;

namespace {

/// Alignment of each view in the dynamic buffer (the widest vector access
/// a kernel makes, and what the NVVM lowering aligns the buffer to).
constexpr int64_t kViewAlignment = 16;

/// Bytes of a workgroup attribution of static shape.
int64_t attributionBytes(BlockArgument tile) {
  auto type = cast<MemRefType>(tile.getType());
  return type.getNumElements() * type.getElementTypeBitWidth() / 8;
}

/// Moves `func`'s workgroup attributions into views of one dynamic shared
/// memory buffer; returns the buffer's size in bytes.
int64_t moveToDynamicShared(gpu::GPUFuncOp func) {
  ArrayRef<BlockArgument> tiles = func.getWorkgroupAttributions();
  Block &entry = func.getBody().front();
  OpBuilder b = OpBuilder::atBlockBegin(&entry);
  Location loc = func.getLoc();
  MLIRContext *ctx = func.getContext();
  auto bytesType = [&](Attribute space) {
    return MemRefType::get({ShapedType::kDynamic}, IntegerType::get(ctx, 8),
                           MemRefLayoutAttrInterface{}, space);
  };
  auto workgroup =
      gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  Value buffer =
      gpu::DynamicSharedMemoryOp::create(b, loc, bytesType(workgroup));
  // The attributions' memory space when they spell it as NVVM's 3 (the
  // attention kernels do): the same memory, so the cast lowers to nothing.
  Attribute space = cast<MemRefType>(tiles.front().getType()).getMemorySpace();
  if (space != workgroup)
    buffer =
        memref::MemorySpaceCastOp::create(b, loc, bytesType(space), buffer);
  int64_t offset = 0;
  for (BlockArgument tile : tiles) {
    offset = llvm::alignTo(offset, kViewAlignment);
    Value at = arith::ConstantIndexOp::create(b, loc, offset);
    Value view = memref::ViewOp::create(b, loc, tile.getType(), buffer, at,
                                        ValueRange{});
    tile.replaceAllUsesWith(view);
    offset += attributionBytes(tile);
  }
  unsigned first = func.getFirstWorkgroupAttributionIndex();
  entry.eraseArguments(first, tiles.size());
  func->removeAttr(gpu::GPUFuncOp::getNumWorkgroupAttributionsAttrName());
  func->removeAttr("workgroup_attrib_attrs");
  func->setAttr(txl::kDynamicSharedMemoryAttrName,
                b.getI32IntegerAttr(int32_t(offset)));
  return offset;
}

struct DynamicSharedMemoryPass
    : public txl::impl::DynamicSharedMemoryPassBase<DynamicSharedMemoryPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Kernel (as @module::@func) -> dynamic bytes.
    llvm::DenseMap<SymbolRefAttr, int64_t> moved;
    bool failedKernel = false;
    module.walk([&](gpu::GPUFuncOp func) {
      if (!func.isKernel() || func.getNumWorkgroupAttributions() == 0)
        return;
      int64_t bytes = 0;
      for (BlockArgument tile : func.getWorkgroupAttributions())
        bytes = llvm::alignTo(bytes, kViewAlignment) + attributionBytes(tile);
      if (bytes <= staticLimit)
        return;
      if (bytes > maxBytes) {
        func.emitError("kernel needs ")
            << bytes << " bytes of workgroup memory, more than the "
            << int64_t(maxBytes) << " bytes of dynamic shared memory allowed";
        failedKernel = true;
        return;
      }
      // One buffer holds every tile: one memory space.
      Attribute space =
          cast<MemRefType>(func.getWorkgroupAttributions().front().getType())
              .getMemorySpace();
      for (BlockArgument tile : func.getWorkgroupAttributions())
        if (cast<MemRefType>(tile.getType()).getMemorySpace() != space) {
          func.emitError("workgroup attributions in different memory spaces");
          failedKernel = true;
          return;
        }
      auto gpuModule = func->getParentOfType<gpu::GPUModuleOp>();
      moved[SymbolRefAttr::get(gpuModule.getNameAttr(),
                               {FlatSymbolRefAttr::get(func.getNameAttr())})] =
          moveToDynamicShared(func);
    });
    if (failedKernel)
      return signalPassFailure();

    WalkResult walk = module.walk([&](gpu::LaunchFuncOp launch) {
      auto found = moved.find(launch.getKernel());
      if (found == moved.end())
        return WalkResult::advance();
      if (launch.getDynamicSharedMemorySize()) {
        launch.emitError("launch of ")
            << launch.getKernel()
            << " already has a dynamic shared memory size";
        return WalkResult::interrupt();
      }
      OpBuilder b(launch);
      Value bytes = arith::ConstantIntOp::create(b, launch.getLoc(),
                                                 b.getI32Type(), found->second);
      launch.getDynamicSharedMemorySizeMutable().assign(bytes);
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      signalPassFailure();
  }
};

/// NVVM's address space of shared memory.
constexpr unsigned kSharedAddressSpace = 3;

struct ExternDynamicSharedPass
    : public txl::impl::ExternDynamicSharedPassBase<ExternDynamicSharedPass> {
  void runOnOperation() override {
    for (auto global : getOperation().getOps<LLVM::GlobalOp>()) {
      auto array = dyn_cast<LLVM::LLVMArrayType>(global.getGlobalType());
      if (global.getAddrSpace() != kSharedAddressSpace || !array ||
          array.getNumElements() != 0 || global.getValueOrNull() ||
          !global.getInitializerRegion().empty())
        continue;
      global.setLinkage(LLVM::Linkage::External);
      global.setDsoLocal(false);
    }
  }
};

} // namespace

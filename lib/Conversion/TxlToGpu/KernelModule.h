//===- KernelModule.h - The gpu.module of txlc's kernels ----------*- C++
//-*-===//
//
// Every GPU kernel txlc generates lives in one gpu.module, @txl_kernels,
// which the GPU targets compile once (PTX or SPIR-V) and embed.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_LIB_CONVERSION_TXLTOGPU_KERNELMODULE_H
#define TXL_LIB_CONVERSION_TXLTOGPU_KERNELMODULE_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::txl {

/// `module`'s gpu.module @txl_kernels, created (and `module` marked as a
/// gpu.container_module) on first use.
inline gpu::GPUModuleOp getOrCreateKernelModule(ModuleOp module) {
  StringRef name = "txl_kernels";
  if (auto existing = module.lookupSymbol<gpu::GPUModuleOp>(name))
    return existing;
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                  b.getUnitAttr());
  return gpu::GPUModuleOp::create(b, module.getLoc(), name);
}

} // namespace mlir::txl

#endif // TXL_LIB_CONVERSION_TXLTOGPU_KERNELMODULE_H

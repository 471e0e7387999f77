//===- KernelModule.h - The gpu.module of txlc's kernels ----------*- C++
//-*-===//
//
// Every GPU kernel txlc generates lives in one gpu.module, @txl_kernels,
// which the GPU targets compile once (PTX or SPIR-V) and embed.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_CONVERSION_KERNELMODULE_H
#define TXL_CONVERSION_KERNELMODULE_H

#include "txl/Conversion/KernelBuffers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::txl {

/// The subgroup (warp) size every kernel assumes: 32, the CUDA warp, and
/// what the OpenCL kernels require (`intel_reqd_sub_group_size`).
inline constexpr int64_t kSubgroupSize = 32;

/// `v` summed (or maxed, `isMax`) over groups of `lanes` consecutive lanes
/// of the subgroup (a power of two up to 32; 4: the quads of an mma
/// fragment's rows): a butterfly of xor shuffles, so that every lane of a
/// group gets its group's result.
inline Value subgroupReduce(ImplicitLocOpBuilder &b, Value v, bool isMax,
                            int64_t lanes = kSubgroupSize) {
  for (int64_t offset = lanes / 2; offset > 0; offset /= 2) {
    Value other = gpu::ShuffleOp::create(b, v, offset, kSubgroupSize,
                                         gpu::ShuffleMode::XOR)
                      .getShuffleResult();
    v = isMax ? Value(arith::MaximumFOp::create(b, v, other))
              : Value(arith::AddFOp::create(b, v, other));
  }
  return v;
}

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

#endif // TXL_CONVERSION_KERNELMODULE_H

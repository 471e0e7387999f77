//===- LaunchEffects.cpp - Memory effects of gpu.launch_func --------------===//
//
// gpu.launch_func declares no memory effects, so MLIR's ownership-based
// buffer deallocation rejects a function that launches a kernel on its
// buffers ("ops with unknown memory side effects are not supported"). The
// GPU targets launch kernels before bufferization's deallocation runs
// (txl-rel-attention-to-gpu), so this external model declares what a launch
// does: it may read and write every memref it is given (any memory, once
// its operands are LLVM values).
//
//===----------------------------------------------------------------------===//

#include "txl/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;

namespace {

struct LaunchFuncEffects
    : public MemoryEffectOpInterface::ExternalModel<LaunchFuncEffects,
                                                    gpu::LaunchFuncOp> {
  void
  getEffects(Operation *op,
             SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
                 &effects) const {
    bool any = false;
    for (OpOperand &operand : op->getOpOperands()) {
      if (!isa<MemRefType>(operand.get().getType()))
        continue;
      effects.emplace_back(MemoryEffects::Read::get(), &operand);
      effects.emplace_back(MemoryEffects::Write::get(), &operand);
      any = true;
    }
    // After gpu-to-llvm the buffers are pointers and integers: the launch
    // still reads and writes memory (and must never count as dead).
    if (!any) {
      effects.emplace_back(MemoryEffects::Read::get());
      effects.emplace_back(MemoryEffects::Write::get());
    }
  }
};

} // namespace

void mlir::txl::registerGpuLaunchEffectsExternalModel(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, gpu::GPUDialect *) {
    gpu::LaunchFuncOp::attachInterface<LaunchFuncEffects>(*ctx);
  });
}

//===- RequireSubgroupSize.cpp - Kernels' subgroups of 32 for OpenCL ------===//
//
// txl-require-subgroup-size: every kernel of a gpu.module requires
// subgroups of kSubgroupSize (32) work-items on OpenCL
// (`intel_reqd_sub_group_size`), the CUDA warp that the kernels' shuffles
// and tensor-core fragments assume, and without which convert-gpu-to-llvm-spv
// does not legalize gpu.shuffle.
//
//===----------------------------------------------------------------------===//

#include "txl/Conversion/KernelModule.h"
#include "txl/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"

namespace mlir::txl {
#define GEN_PASS_DEF_REQUIRESUBGROUPSIZEPASS
#include "txl/Conversion/Passes.h.inc"
} // namespace mlir::txl

using namespace mlir;
using namespace mlir::txl;

namespace {

/// The kernel attribute Intel's OpenCL extension (and
/// convert-gpu-to-llvm-spv) reads.
constexpr llvm::StringLiteral kRequiredSize = "intel_reqd_sub_group_size";

struct RequireSubgroupSizePass
    : public txl::impl::RequireSubgroupSizePassBase<RequireSubgroupSizePass> {
  void runOnOperation() override {
    Builder b(&getContext());
    auto size = b.getI32IntegerAttr(kSubgroupSize);
    for (auto func : getOperation().getOps<gpu::GPUFuncOp>()) {
      if (!func.isKernel())
        continue;
      Attribute existing = func->getAttr(kRequiredSize);
      if (existing && existing != size) {
        func.emitError("txl-require-subgroup-size: the kernel requires ")
            << existing << " as its subgroup size; txlc's kernels assume "
            << kSubgroupSize << " (the CUDA warp)";
        return signalPassFailure();
      }
      func->setAttr(kRequiredSize, size);
    }
  }
};

} // namespace

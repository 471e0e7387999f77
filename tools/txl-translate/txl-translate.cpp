//===- txl-translate.cpp - mlir-translate with the GPU kernel emitters ----===//
//
// mlir-translate's translations plus txlc's emitters:
//   --host-llvm-ir                      an LLVM-dialect module as LLVM IR,
//                                       optimized by the CPU target's
//                                       pipeline (txlc -O 3)
// and the GPU targets' kernel emitters, on a module holding gpu.module
// @txl_kernels (e.g. after txl-opt --txl-rel-attention-to-gpu):
//   --kernels-to-ptx --ptx-chip=sm_90   the kernels' PTX (as txlc --emit=ptx)
//   --kernels-to-spirv                  a binary SPIR-V module (as txlc
//                                       --emit=spirv)
//   --kernels-to-opencl-image           the image the runtime's OpenCL
//                                       backend loads (txl/device.h)
//
//===----------------------------------------------------------------------===//

#include "txl/InitAll.h"
#include "txl/Pipelines/Pipelines.h"
#include "txl/Target/GpuKernels.h"
#include "txl/Target/ObjectEmitter.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/CommandLine.h"

#include <optional>

using namespace mlir;
using namespace mlir::txl;

static llvm::cl::opt<std::string>
    ptxChip("ptx-chip", llvm::cl::desc("--kernels-to-ptx: CUDA architecture"),
            llvm::cl::init("sm_90"));
static llvm::cl::opt<std::string>
    cudaPath("cuda-path", llvm::cl::desc("CUDA toolkit (libdevice)"),
             llvm::cl::init("/usr/local/cuda"));

/// Lowers a copy of `op`'s kernels with `build` and writes `emit`'s result.
template <typename BuildFn, typename EmitFn>
static LogicalResult translateKernels(Operation *op, llvm::raw_ostream &os,
                                      BuildFn &&build, EmitFn &&emit) {
  OwningOpRef<ModuleOp> kernels = cloneKernelModule(cast<ModuleOp>(op));
  if (!kernels)
    return failure();
  PassManager pm(op->getContext());
  build(*kernels, pm);
  if (failed(pm.run(*kernels)))
    return failure();
  FailureOr<std::string> text = emit(*kernels);
  if (failed(text))
    return failure();
  os << *text;
  return success();
}

int main(int argc, char **argv) {
  registerAllTxlPasses();
  auto dialects = [](DialectRegistry &registry) {
    registerAllTxlDialects(registry);
  };
  TranslateFromMLIRRegistration toHostIr(
      "host-llvm-ir",
      "an LLVM-dialect module as LLVM IR, optimized as txlc's CPU target "
      "optimizes its code (-O 3)",
      [](Operation *op, llvm::raw_ostream &os) {
        llvm::LLVMContext context;
        std::unique_ptr<llvm::Module> module =
            translateAndOptimize(cast<ModuleOp>(op), context, {});
        if (!module)
          return failure();
        module->print(os, nullptr);
        return success();
      },
      dialects);
  TranslateFromMLIRRegistration toPtx(
      "kernels-to-ptx", "the GPU kernels as PTX (--ptx-chip)",
      [](Operation *op, llvm::raw_ostream &os) {
        return translateKernels(
            op, os,
            [](ModuleOp, OpPassManager &pm) {
              buildKernelsToPtxPipeline(pm, ptxChip, ptxFeatures(ptxChip),
                                        cudaPath);
            },
            [](ModuleOp m) { return getPtx(m); });
      },
      dialects);
  TranslateFromMLIRRegistration toSpirv(
      "kernels-to-spirv", "the GPU kernels as a binary SPIR-V module",
      [](Operation *op, llvm::raw_ostream &os) {
        return translateKernels(
            op, os,
            [](ModuleOp, OpPassManager &pm) {
              buildKernelsToLlvmSpvPipeline(pm);
            },
            [](ModuleOp m) { return emitSpirv(m); });
      },
      dialects);
  TranslateFromMLIRRegistration toImage(
      "kernels-to-opencl-image",
      "the GPU kernels as the OpenCL kernel image the runtime loads "
      "(txl/device.h: argument table + SPIR-V)",
      [](Operation *op, llvm::raw_ostream &os) {
        std::optional<OpenCLKernelTable> table;
        return translateKernels(
            op, os,
            [&](ModuleOp m, OpPassManager &pm) {
              FailureOr<OpenCLKernelTable> built = buildOpenCLKernelTable(m);
              if (succeeded(built))
                table = std::move(*built);
              buildKernelsToLlvmSpvPipeline(pm);
            },
            [&](ModuleOp m) -> FailureOr<std::string> {
              if (!table)
                return failure();
              FailureOr<llvm::StringMap<std::string>> spirv =
                  emitSpirvPerKernel(m);
              if (failed(spirv))
                return failure();
              return buildOpenCLImage(m.getLoc(), *table, *spirv);
            });
      },
      dialects);
  return failed(mlirTranslateMain(argc, argv, "txl translation driver\n"));
}

//===- GpuKernels.cpp - The kernels' gpu.module as PTX or SPIR-V ----------===//

#include "txl/Target/GpuKernels.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

#include <mutex>

extern "C" {
void LLVMInitializeSPIRVTargetInfo();
void LLVMInitializeSPIRVTarget();
void LLVMInitializeSPIRVTargetMC();
void LLVMInitializeSPIRVAsmPrinter();
}

using namespace mlir;
using namespace mlir::txl;

namespace {

/// The subgroup size the kernels' shuffles assume (the CUDA warp).
constexpr int32_t kSubgroupSize = 32;

const char *const kSpirvTriple = "spirv64-unknown-unknown";

} // namespace

OwningOpRef<ModuleOp> mlir::txl::cloneKernelModule(ModuleOp module) {
  auto kernels = module.lookupSymbol<gpu::GPUModuleOp>(kKernelModuleName);
  if (!kernels) {
    module.emitError("no gpu.module @") << kKernelModuleName;
    return nullptr;
  }
  OpBuilder b(module.getContext());
  OwningOpRef<ModuleOp> copy = ModuleOp::create(module.getLoc());
  copy->getOperation()->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                                b.getUnitAttr());
  b.setInsertionPointToEnd(copy->getBody());
  b.clone(*kernels);
  return copy;
}

void mlir::txl::setOpenCLSubgroupSize(ModuleOp module) {
  OpBuilder b(module.getContext());
  module.walk([&](gpu::GPUFuncOp func) {
    if (func.isKernel())
      func->setAttr("intel_reqd_sub_group_size",
                    b.getI32IntegerAttr(kSubgroupSize));
  });
}

FailureOr<std::string> mlir::txl::getPtx(ModuleOp module) {
  std::optional<std::string> ptx;
  WalkResult walk = module.walk([&](gpu::BinaryOp binary) {
    for (Attribute attr : binary.getObjects()) {
      auto object = dyn_cast<gpu::ObjectAttr>(attr);
      if (!object || object.getFormat() != gpu::CompilationTarget::Assembly ||
          ptx)
        return WalkResult::interrupt();
      ptx = object.getObject().str();
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted() || !ptx) {
    module.emitError("expected one gpu.binary with one PTX object");
    return failure();
  }
  return *ptx;
}

FailureOr<std::string> mlir::txl::emitSpirv(ModuleOp module, bool assembly) {
  auto kernels = module.lookupSymbol<gpu::GPUModuleOp>(kKernelModuleName);
  if (!kernels) {
    module.emitError("no gpu.module @") << kKernelModuleName;
    return failure();
  }
  // The kernels' LLVM dialect functions, as the body of a plain module.
  OpBuilder b(module.getContext());
  OwningOpRef<ModuleOp> body = ModuleOp::create(kernels.getLoc());
  b.setInsertionPointToEnd(body->getBody());
  for (Operation &op : kernels.getBody()->without_terminator())
    b.clone(op);

  static std::once_flag initialized;
  std::call_once(initialized, [] {
    LLVMInitializeSPIRVTargetInfo();
    LLVMInitializeSPIRVTarget();
    LLVMInitializeSPIRVTargetMC();
    LLVMInitializeSPIRVAsmPrinter();
  });
  std::string error;
  llvm::Triple triple(kSpirvTriple);
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target) {
    module.emitError("LLVM has no SPIR-V backend: ") << error;
    return failure();
  }
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, "", "", llvm::TargetOptions(), std::nullopt));

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(body.get(), llvmContext, "txl_kernels");
  if (!llvmModule) {
    module.emitError("translating the kernels to LLVM IR failed");
    return failure();
  }
  llvmModule->setTargetTriple(triple);
  llvmModule->setDataLayout(machine->createDataLayout());

  // -O2, as `opt -O2`: LLVM's SPIR-V backend emits modules that spirv-val
  // rejects from unoptimized IR.
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder passBuilder(machine.get());
  passBuilder.registerModuleAnalyses(mam);
  passBuilder.registerCGSCCAnalyses(cgam);
  passBuilder.registerFunctionAnalyses(fam);
  passBuilder.registerLoopAnalyses(lam);
  passBuilder.crossRegisterProxies(lam, fam, cgam, mam);
  passBuilder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2)
      .run(*llvmModule, mam);

  std::string spirv;
  {
    llvm::raw_string_ostream os(spirv);
    llvm::buffer_ostream stream(os);
    llvm::legacy::PassManager codegen;
    if (machine->addPassesToEmitFile(codegen, stream, nullptr,
                                     assembly
                                         ? llvm::CodeGenFileType::AssemblyFile
                                         : llvm::CodeGenFileType::ObjectFile)) {
      module.emitError("LLVM's SPIR-V backend cannot emit an object");
      return failure();
    }
    codegen.run(*llvmModule);
  }
  return spirv;
}

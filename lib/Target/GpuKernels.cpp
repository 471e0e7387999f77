//===- GpuKernels.cpp - The kernels' gpu.module as PTX or SPIR-V ----------===//

#include "txl/Target/GpuKernels.h"
#include "txl/Target/SpirvKernels.h"

#include "txl/device.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVAttributes.h"
#include "mlir/IR/Builders.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
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

namespace {

template <typename T> void append(std::string &out, T value) {
  static_assert(std::is_integral_v<T>);
  for (size_t i = 0; i < sizeof(T); ++i)
    out.push_back(char((uint64_t(value) >> (8 * i)) & 0xff));
}

void appendArg(std::string &out, txl_kernel_arg_kind_t kind, uint32_t bytes) {
  append(out, uint8_t(kind));
  append(out, bytes);
}

} // namespace

FailureOr<OpenCLKernelTable>
mlir::txl::buildOpenCLKernelTable(ModuleOp module) {
  auto kernels = module.lookupSymbol<gpu::GPUModuleOp>(kKernelModuleName);
  if (!kernels) {
    module.emitError("no gpu.module @") << kKernelModuleName;
    return failure();
  }
  OpenCLKernelTable table;
  for (auto func : kernels.getOps<gpu::GPUFuncOp>()) {
    if (!func.isKernel())
      continue;
    std::string args;
    uint32_t count = 0;
    auto add = [&](txl_kernel_arg_kind_t kind, uint32_t bytes) {
      appendArg(args, kind, bytes);
      ++count;
    };
    for (Type type : func.getArgumentTypes()) {
      if (auto memref = dyn_cast<MemRefType>(type)) {
        add(TXL_KERNEL_ARG_BUFFER, 8);
        add(TXL_KERNEL_ARG_BUFFER, 8);
        for (int64_t i = 0, e = 1 + 2 * memref.getRank(); i < e; ++i)
          add(TXL_KERNEL_ARG_I64, 8);
      } else if (type.isIndex() || type.isInteger(64)) {
        add(TXL_KERNEL_ARG_I64, 8);
      } else if (type.isInteger(32)) {
        add(TXL_KERNEL_ARG_I32, 4);
      } else if (type.isF32()) {
        add(TXL_KERNEL_ARG_F32, 4);
      } else {
        return func.emitError("no OpenCL kernel argument for type ") << type;
      }
    }
    // OpenCL holds bf16 and f16 tiles as f32 (txl-emulate-mma widens
    // them): 4 bytes per element.
    for (BlockArgument tile : func.getWorkgroupAttributions()) {
      auto memref = cast<MemRefType>(tile.getType());
      Type element = memref.getElementType();
      int64_t bits = element.isBF16() || element.isF16()
                         ? 32
                         : memref.getElementTypeBitWidth();
      add(TXL_KERNEL_ARG_LOCAL, uint32_t(memref.getNumElements() * bits / 8));
    }
    std::string encoded;
    append(encoded, count);
    table.push_back({func.getName().str(), encoded + args});
  }
  return table;
}

FailureOr<std::string>
mlir::txl::buildOpenCLImage(Location loc, const OpenCLKernelTable &table,
                            const llvm::StringMap<std::string> &spirv) {
  std::string image = TXL_OPENCL_IMAGE_MAGIC;
  append(image, uint32_t(TXL_OPENCL_IMAGE_VERSION));
  append(image, uint32_t(table.size()));
  for (const OpenCLKernelEntry &kernel : table) {
    auto found = spirv.find(kernel.name);
    if (found == spirv.end() || found->second.empty())
      return emitError(loc, "no SPIR-V for kernel ") << kernel.name;
    append(image, uint32_t(kernel.name.size()));
    image += kernel.name;
    image += kernel.args;
    append(image, uint64_t(found->second.size()));
    image += found->second;
  }
  return image;
}

llvm::StringRef mlir::txl::ptxFeatures(llvm::StringRef chip) {
  return chip.starts_with("sm_8") || chip.starts_with("sm_9") ? "+ptx80" : "";
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

namespace {

/// The SPIR-V target machine (LLVM's SPIR-V backend, initialized once).
std::unique_ptr<llvm::TargetMachine> createSpirvMachine(ModuleOp module) {
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
    return nullptr;
  }
  return std::unique_ptr<llvm::TargetMachine>(target->createTargetMachine(
      triple, "", "", llvm::TargetOptions(), std::nullopt));
}

/// The LLVM dialect functions of `module`'s @txl_kernels (after
/// buildKernelsToLlvmSpvPipeline) as an LLVM IR module for `machine`.
std::unique_ptr<llvm::Module>
translateKernelsToLlvmIr(ModuleOp module, llvm::TargetMachine &machine,
                         llvm::LLVMContext &llvmContext) {
  auto kernels = module.lookupSymbol<gpu::GPUModuleOp>(kKernelModuleName);
  if (!kernels) {
    module.emitError("no gpu.module @") << kKernelModuleName;
    return nullptr;
  }
  // The kernels' LLVM dialect functions, as the body of a plain module.
  OpBuilder b(module.getContext());
  OwningOpRef<ModuleOp> body = ModuleOp::create(kernels.getLoc());
  b.setInsertionPointToEnd(body->getBody());
  for (Operation &op : kernels.getBody()->without_terminator())
    b.clone(op);
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(body.get(), llvmContext, "txl_kernels");
  if (!llvmModule) {
    module.emitError("translating the kernels to LLVM IR failed");
    return nullptr;
  }
  llvmModule->setTargetTriple(llvm::Triple(kSpirvTriple));
  llvmModule->setDataLayout(machine.createDataLayout());
  return llvmModule;
}

/// `llvmModule` optimized at -O2 and emitted by LLVM's SPIR-V backend
/// (binary, or its assembly when `assembly`).
FailureOr<std::string> optimizeAndEmitSpirv(ModuleOp module,
                                            llvm::Module &llvmModule,
                                            llvm::TargetMachine &machine,
                                            bool assembly) {
  // -O2, as `opt -O2`: LLVM's SPIR-V backend emits modules that spirv-val
  // rejects from unoptimized IR.
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder passBuilder(&machine);
  passBuilder.registerModuleAnalyses(mam);
  passBuilder.registerCGSCCAnalyses(cgam);
  passBuilder.registerFunctionAnalyses(fam);
  passBuilder.registerLoopAnalyses(lam);
  passBuilder.crossRegisterProxies(lam, fam, cgam, mam);
  passBuilder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2)
      .run(llvmModule, mam);

  std::string spirv;
  {
    llvm::raw_string_ostream os(spirv);
    llvm::buffer_ostream stream(os);
    llvm::legacy::PassManager codegen;
    if (machine.addPassesToEmitFile(codegen, stream, nullptr,
                                    assembly
                                        ? llvm::CodeGenFileType::AssemblyFile
                                        : llvm::CodeGenFileType::ObjectFile)) {
      module.emitError("LLVM's SPIR-V backend cannot emit an object");
      return failure();
    }
    codegen.run(llvmModule);
  }
  return spirv;
}

} // namespace

FailureOr<std::string> mlir::txl::emitSpirv(ModuleOp module, bool assembly) {
  std::unique_ptr<llvm::TargetMachine> machine = createSpirvMachine(module);
  if (!machine)
    return failure();
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateKernelsToLlvmIr(module, *machine, llvmContext);
  if (!llvmModule)
    return failure();
  return optimizeAndEmitSpirv(module, *llvmModule, *machine, assembly);
}

FailureOr<llvm::StringMap<std::string>>
mlir::txl::emitSpirvPerKernel(ModuleOp module) {
  FailureOr<std::string> whole = emitSpirv(module);
  if (failed(whole))
    return failure();
  llvm::Expected<llvm::StringMap<std::string>> kernels =
      splitSpirvKernels(*whole);
  if (!kernels) {
    module.emitError(llvm::toString(kernels.takeError()));
    return failure();
  }
  return std::move(*kernels);
}

/// Replaces @txl_kernels by a gpu.binary of one object: `image` in
/// `format` for `target`.
static void replaceKernelsWithObject(ModuleOp module, Attribute target,
                                     gpu::CompilationTarget format,
                                     llvm::StringRef image,
                                     DictionaryAttr properties = {}) {
  auto kernels = module.lookupSymbol<gpu::GPUModuleOp>(kKernelModuleName);
  MLIRContext *ctx = module.getContext();
  auto object = gpu::ObjectAttr::get(ctx, target, format,
                                     StringAttr::get(ctx, image), properties,
                                     nullptr);
  OpBuilder b(kernels);
  gpu::BinaryOp::create(b, kernels.getLoc(), kKernelModuleName, Attribute(),
                        b.getArrayAttr({object}));
  kernels.erase();
}

void mlir::txl::replaceKernelsWithOpenCLImage(ModuleOp module,
                                              llvm::StringRef image) {
  // The object's target only has to be a GPU target attribute: the runtime
  // reads the image's own header. SPIR-V 1.4 kernels, as LLVM emits them.
  Attribute target = parseAttribute(
      "#spirv.target_env<#spirv.vce<v1.4, [Kernel, Addresses, Int64], []>, "
      "#spirv.resource_limits<>>",
      module.getContext());
  replaceKernelsWithObject(module, target, gpu::CompilationTarget::Binary,
                           image);
}

void mlir::txl::replaceKernelsWithCudaFatbin(ModuleOp module,
                                             llvm::StringRef fatbin,
                                             llvm::StringRef chip) {
  Attribute target = NVVM::NVVMTargetAttr::get(
      module.getContext(), /*optLevel=*/3, "nvptx64-nvidia-cuda", chip);
  // In the ELF section where nvcc puts fatbins, so that the toolkit's
  // cuobjdump lists the executable's cubins and PTX.
  MLIRContext *ctx = module.getContext();
  auto properties = DictionaryAttr::get(
      ctx, {NamedAttribute(StringAttr::get(ctx, gpu::elfSectionName),
                           StringAttr::get(ctx, ".nv_fatbin"))});
  replaceKernelsWithObject(module, target, gpu::CompilationTarget::Fatbin,
                           fatbin, properties);
}

namespace {

/// Temporary files of one fatbin build, removed when it is done.
class TempFiles {
public:
  ~TempFiles() {
    for (const std::string &path : paths_)
      llvm::sys::fs::remove(path);
  }

  /// A new empty temporary file "txlc-<stem>-%%%%%%.<ext>".
  FailureOr<std::string> create(Location loc, llvm::StringRef stem,
                                llvm::StringRef ext) {
    llvm::SmallString<128> path;
    if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
            "txlc-" + stem.str(), ext, path)) {
      emitError(loc) << "cannot create a temporary file: " << ec.message();
      return failure();
    }
    paths_.push_back(path.str().str());
    return paths_.back();
  }

private:
  std::vector<std::string> paths_;
};

/// Runs `tool` (a path) with `args`; on failure, an error on `loc` with
/// the command's diagnostics (its stderr, kept in a temporary file).
LogicalResult runTool(Location loc, TempFiles &temps, llvm::StringRef tool,
                      ArrayRef<std::string> args) {
  if (!llvm::sys::fs::can_execute(tool))
    return emitError(loc) << "--target=cuda needs " << tool
                          << " (from the CUDA toolkit; --cuda-path names "
                             "its root)";
  FailureOr<std::string> log = temps.create(loc, "tool", "log");
  if (failed(log))
    return failure();
  SmallVector<llvm::StringRef> argv = {tool};
  argv.append(args.begin(), args.end());
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, std::nullopt,
                                                llvm::StringRef(*log)};
  std::string error;
  int rc = llvm::sys::ExecuteAndWait(tool, argv, std::nullopt, redirects, 0, 0,
                                     &error);
  if (rc == 0)
    return success();
  auto output = llvm::MemoryBuffer::getFile(*log);
  InFlightDiagnostic diag = emitError(loc)
                            << llvm::sys::path::filename(tool) << " failed";
  if (!error.empty())
    diag << ": " << error;
  if (output && !(*output)->getBuffer().empty())
    diag << ":\n" << (*output)->getBuffer().rtrim();
  return failure();
}

/// The numeric part of "sm_90a" (90), for choosing the newest architecture.
unsigned archNumber(llvm::StringRef arch) {
  unsigned number = 0;
  arch.drop_front(3).take_while(llvm::isDigit).getAsInteger(10, number);
  return number;
}

/// True for an architecture whose PTX runs only on its own GPU ("sm_90a",
/// "sm_100f"): its PTX is no use for JIT compilation on newer GPUs.
bool isArchSpecific(llvm::StringRef arch) {
  return arch.ends_with("a") || arch.ends_with("f");
}

} // namespace

FailureOr<std::string>
mlir::txl::buildCudaFatbin(Location loc, ArrayRef<CudaArchPtx> archs,
                           llvm::StringRef cudaPath) {
  llvm::SmallString<128> ptxas(cudaPath), fatbinary(cudaPath);
  llvm::sys::path::append(ptxas, "bin", "ptxas");
  llvm::sys::path::append(fatbinary, "bin", "fatbinary");
  TempFiles temps;
  std::vector<std::string> fatbinArgs = {"-64"};
  // The newest architecture whose PTX other GPUs can JIT, and its file.
  std::string jitArch, jitPtxPath;
  for (const CudaArchPtx &arch : archs) {
    FailureOr<std::string> ptxPath = temps.create(loc, arch.arch, "ptx");
    FailureOr<std::string> cubinPath = temps.create(loc, arch.arch, "cubin");
    if (failed(ptxPath) || failed(cubinPath))
      return failure();
    std::error_code ec;
    {
      llvm::raw_fd_ostream os(*ptxPath, ec);
      os << arch.ptx;
    }
    if (ec)
      return emitError(loc) << "cannot write " << *ptxPath << ": "
                            << ec.message();
    if (failed(runTool(loc, temps, ptxas,
                       {"-arch=" + arch.arch, "-O3", *ptxPath, "-o",
                        *cubinPath})))
      return failure();
    llvm::StringRef sm = llvm::StringRef(arch.arch).drop_front(3);
    fatbinArgs.push_back(("--image3=kind=elf,sm=" + sm + ",file=" + *cubinPath)
                             .str());
    if (!isArchSpecific(arch.arch) &&
        (jitArch.empty() || archNumber(arch.arch) > archNumber(jitArch))) {
      jitArch = arch.arch;
      jitPtxPath = *ptxPath;
    }
  }
  if (!jitArch.empty())
    fatbinArgs.push_back(("--image3=kind=ptx,sm=" +
                          llvm::StringRef(jitArch).drop_front(3) +
                          ",file=" + jitPtxPath)
                             .str());
  FailureOr<std::string> fatbinPath = temps.create(loc, "kernels", "fatbin");
  if (failed(fatbinPath))
    return failure();
  fatbinArgs.push_back("--create=" + *fatbinPath);
  if (failed(runTool(loc, temps, fatbinary, fatbinArgs)))
    return failure();
  auto fatbin = llvm::MemoryBuffer::getFile(*fatbinPath);
  if (!fatbin)
    return emitError(loc) << "cannot read " << *fatbinPath << ": "
                          << fatbin.getError().message();
  return (*fatbin)->getBuffer().str();
}

int64_t mlir::txl::normTensorsPerKernel() {
  return TXL_NORM_TENSORS_PER_KERNEL;
}

int64_t mlir::txl::normSums() { return TXL_NORM_SUMS; }

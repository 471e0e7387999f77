//===- Driver.cpp - The txlc compiler driver ---------------------*- C++
//-*-===//

#include "txl/Driver/Driver.h"

#include "txl/Frontend/SegmentBuilder.h"
#include "txl/Frontend/TrainingBuilder.h"
#include "txl/IR/TxlDialect.h"
#include "txl/InitAll.h"
#include "txl/Pipelines/Pipelines.h"
#include "txl/Target/GpuKernels.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

#include <optional>

using namespace mlir;
using namespace mlir::txl;

namespace {

/// Prints `module` (MLIR or LLVM IR) to the output path.
template <typename Printable>
LogicalResult writeText(const DriverOptions &options, Printable &&print) {
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> out = openOutputFile(
      options.outputPath.empty() ? "-" : options.outputPath, &error);
  if (!out) {
    llvm::errs() << "txlc: error: " << error << "\n";
    return failure();
  }
  print(out->os());
  out->keep();
  return success();
}

/// txlc's spelling of `stage` (--emit), of the text stages a module can be
/// written at and read back from (--input-ir).
llvm::StringRef stageName(EmitAction stage) {
  switch (stage) {
  case EmitAction::Txl:
    return "txl";
  case EmitAction::TxlOpt:
    return "txl-opt";
  case EmitAction::TxlGrad:
    return "txl-grad";
  case EmitAction::Linalg:
    return "linalg";
  case EmitAction::LLVMMLIR:
    return "llvm-mlir";
  default:
    return "";
  }
}

llvm::StringRef targetName(Target target) {
  switch (target) {
  case Target::Cpu:
    return "cpu";
  case Target::Cuda:
    return "cuda";
  case Target::OpenCL:
    return "opencl";
  }
  return "";
}

/// Prints `module` at the text stage `--emit` names, recording on it the
/// stage, target and precision it was compiled for (`txl.emitted`), which
/// `txlc --input-ir` reads back.
LogicalResult writeModule(const DriverOptions &options, ModuleOp module) {
  Builder b(module.getContext());
  module->setAttr(
      TxlDialect::kEmittedAttrName,
      b.getDictionaryAttr(
          {b.getNamedAttr("stage", b.getStringAttr(stageName(options.emit))),
           b.getNamedAttr("target",
                          b.getStringAttr(targetName(options.target))),
           b.getNamedAttr("precision",
                          b.getStringAttr(precisionName(options.precision)))}));
  return writeText(options, [&](llvm::raw_ostream &os) { module.print(os); });
}

/// The stages a compilation resumed from --input-ir has behind it: every
/// stage up to the one the module was emitted at.
struct Resume {
  std::optional<EmitAction> stage;
  /// Whether `s` already ran (and is skipped).
  bool done(EmitAction s) const { return stage && *stage >= s; }
};

/// Reads --input-ir: a module `txlc --emit=<stage>` wrote (possibly
/// transformed since, e.g. by txl-opt), for the same target and precision.
/// Errors name the file (and line:col for the parser's).
FailureOr<OwningOpRef<ModuleOp>> readInputIr(const DriverOptions &options,
                                             MLIRContext &context,
                                             Resume &resume) {
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(
      options.inputIrPath, sourceMgr, ParserConfig(&context));
  if (!module)
    return failure();
  auto fail = [&](const llvm::Twine &message) {
    llvm::errs() << "txlc: error: --input-ir " << options.inputIrPath << ": "
                 << message << "\n";
    return failure();
  };
  auto emitted =
      (*module)->getAttrOfType<DictionaryAttr>(TxlDialect::kEmittedAttrName);
  if (!emitted)
    return fail("not a module txlc wrote with --emit=txl, txl-opt, txl-grad, "
                "linalg or llvm-mlir (no txl.emitted attribute)");
  // The dialect verified the dictionary's keys and values.
  llvm::StringRef stage = emitted.getAs<StringAttr>("stage").getValue();
  llvm::StringRef target = emitted.getAs<StringAttr>("target").getValue();
  llvm::StringRef precision = emitted.getAs<StringAttr>("precision").getValue();
  if (target != targetName(options.target))
    return fail("emitted for --target=" + target +
                ", not --target=" + targetName(options.target));
  if (precision != precisionName(options.precision))
    return fail("emitted for --precision=" + precision +
                ", not --precision=" + precisionName(options.precision));
  for (EmitAction s : {EmitAction::Txl, EmitAction::TxlOpt, EmitAction::TxlGrad,
                       EmitAction::Linalg, EmitAction::LLVMMLIR})
    if (stageName(s) == stage)
      resume.stage = s;
  if (!stageName(options.emit).empty() && options.emit <= *resume.stage)
    return fail("--emit=" + stageName(options.emit) +
                " is not after its stage, " + stage);
  // The GPU kernels are compiled into the module on the way to llvm-mlir.
  if ((options.emit == EmitAction::Ptx || options.emit == EmitAction::Spirv) &&
      *resume.stage >= EmitAction::LLVMMLIR)
    return fail(llvm::Twine("--emit=") +
                (options.emit == EmitAction::Ptx ? "ptx" : "spirv") +
                " needs a module from before the kernels were compiled "
                "(stage linalg or earlier), not " +
                stage);
  (*module)->removeAttr(TxlDialect::kEmittedAttrName);
  return module;
}

/// Whether any of mlir-opt's IR-printing options (--mlir-print-ir-before=,
/// --mlir-print-ir-after-all, ...) was given. The passes run per function
/// on a thread pool, and dumps printed from several threads at once
/// interleave line by line; txlc then compiles on one thread so that every
/// dump is whole and in pass order.
bool irPrintingRequested() {
  auto &options = llvm::cl::getRegisteredOptions();
  for (llvm::StringRef name :
       {"mlir-print-ir-before", "mlir-print-ir-after",
        "mlir-print-ir-before-all", "mlir-print-ir-after-all",
        "mlir-print-ir-after-change", "mlir-print-ir-after-failure"}) {
    auto it = options.find(name);
    if (it != options.end() && it->second->getNumOccurrences() > 0)
      return true;
  }
  return false;
}

/// Builds one stage's pass manager with `build`, applies mlir-opt's
/// command-line options to it (--mlir-print-ir-*, the crash reproducer,
/// --mlir-pass-statistics), times it under `timing` (one report for the
/// whole compilation with --mlir-timing), runs it on `module`, and reports a
/// failure as txlc's.
template <typename BuildFn>
LogicalResult runStage(ModuleOp module, TimingScope &timing,
                       llvm::StringRef what, BuildFn &&build) {
  PassManager pm(module->getName());
  build(pm);
  if (failed(applyPassManagerCLOptions(pm)))
    return failure();
  TimingScope stage = timing.nest(what);
  pm.enableTiming(stage);
  if (succeeded(pm.run(module)))
    return success();
  llvm::errs() << "txlc: error: " << what << " failed\n";
  return failure();
}

/// Compiles the generated model descriptor and links it with the objects of
/// the compiled segment into the executable.
LogicalResult linkExecutable(const DriverOptions &options,
                             const ModelConfig &config,
                             llvm::ArrayRef<std::string> objectPaths) {
  llvm::SmallString<128> infoPath;
  int fd;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
          "txl_model_info", "c", fd, infoPath)) {
    llvm::errs() << "txlc: error: cannot create a temporary file: "
                 << ec.message() << "\n";
    return failure();
  }
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    emitModelInfoSource(config, options.target, options.precision, os);
  }

  std::string linker = options.linker;
  if (linker.empty()) {
    for (const char *candidate :
         {"clang++-22", "/usr/lib/llvm-22/bin/clang++"}) {
      if (auto found = llvm::sys::findProgramByName(candidate)) {
        linker = *found;
        break;
      }
    }
  }
  if (linker.empty()) {
    llvm::errs()
        << "txlc: error: no linker found (clang++-22); pass --linker\n";
    return failure();
  }
  std::string runtimeLib = options.runtimeLibDir;
  for (const char *lib : {"libtxl_runtime.a", "libtxl_runtime_main.a"}) {
    llvm::SmallString<128> p(runtimeLib);
    llvm::sys::path::append(p, lib);
    if (!llvm::sys::fs::exists(p)) {
      llvm::errs() << "txlc: error: runtime library '" << p
                   << "' not found (pass --runtime-dir)\n";
      return failure();
    }
  }
  std::string out = options.outputPath;
  if (auto parent = llvm::sys::path::parent_path(out); !parent.empty())
    llvm::sys::fs::create_directories(parent);

  // A sanitizer build's runtime needs its sanitizer runtime linked in (and
  // the model descriptor compiled alike): runtime/CMakeLists.txt writes the
  // flags next to the libraries.
  SmallVector<std::string> runtimeFlags;
  llvm::SmallString<128> flagsPath(runtimeLib);
  llvm::sys::path::append(flagsPath, "txl_runtime.link");
  if (auto flags = llvm::MemoryBuffer::getFile(flagsPath)) {
    SmallVector<llvm::StringRef> words;
    llvm::SplitString((*flags)->getBuffer(), words);
    for (llvm::StringRef word : words)
      runtimeFlags.push_back(word.str());
  }

  SmallVector<std::string> args = {linker, "-O2"};
  args.append(runtimeFlags.begin(), runtimeFlags.end());
  args.append({"-I" + options.runtimeIncludeDir, "-x", "c",
               std::string(infoPath), "-x", "none"});
  args.append(objectPaths.begin(), objectPaths.end());
  args.append({"-L" + runtimeLib, "-ltxl_runtime_main", "-ltxl_runtime",
               "-lopenblas", "-lm", "-lpthread", "-o", out});
  SmallVector<llvm::StringRef> argRefs(args.begin(), args.end());
  std::string error;
  int rc = llvm::sys::ExecuteAndWait(linker, argRefs, std::nullopt, {}, 0, 0,
                                     &error);
  if (!options.keepTemps)
    llvm::sys::fs::remove(infoPath);
  if (rc != 0) {
    llvm::errs() << "txlc: error: linking '" << out << "' failed"
                 << (error.empty() ? "" : ": " + error) << "\n";
    return failure();
  }
  return success();
}

/// The kernels of `module`'s @txl_kernels (a copy, lowered for OpenCL) as
/// a SPIR-V module, or as the OpenCL kernel image the runtime loads (the
/// argument table, then the SPIR-V) when `image`.
FailureOr<std::string> compileOpenCLKernels(ModuleOp module,
                                            TimingScope &timing, bool image,
                                            bool assembly) {
  OwningOpRef<ModuleOp> kernels = cloneKernelModule(module);
  if (!kernels)
    return failure();
  OpenCLKernelTable table;
  if (image) {
    FailureOr<OpenCLKernelTable> built = buildOpenCLKernelTable(*kernels);
    if (failed(built))
      return failure();
    table = std::move(*built);
  }
  if (failed(runStage(*kernels, timing,
                      "lowering the kernels to LLVM (SPIR-V flavour)",
                      buildKernelsToLlvmSpvPipeline)))
    return failure();
  TimingScope codegen = timing.nest("LLVM: SPIR-V code generation");
  if (!image)
    return emitSpirv(*kernels, assembly);
  FailureOr<llvm::StringMap<std::string>> spirv = emitSpirvPerKernel(*kernels);
  if (failed(spirv))
    return failure();
  return buildOpenCLImage(module.getLoc(), table, *spirv);
}

/// The PTX of `module`'s kernels (a copy of them, lowered) for `chip`.
FailureOr<std::string> lowerKernelsToPtx(const DriverOptions &options,
                                         ModuleOp module,
                                         const std::string &chip,
                                         TimingScope &timing) {
  OwningOpRef<ModuleOp> kernels = cloneKernelModule(module);
  if (!kernels)
    return failure();
  if (failed(runStage(*kernels, timing,
                      "lowering the kernels to PTX (" + chip + ")",
                      [&](OpPassManager &pm) {
                        buildKernelsToPtxPipeline(pm, chip, ptxFeatures(chip),
                                                  options.cudaPath);
                      })))
    return failure();
  return getPtx(*kernels);
}

/// --emit=ptx: the PTX of `module`'s kernels, one module per --gpu-arch in
/// their order, each after a `// txl.ptx_module <arch>` line (with several,
/// split the text at those lines to give ptxas one module), all of them
/// after one `// txl.dynamic_shared_memory <kernel> <bytes>` line per
/// kernel that takes dynamic shared memory. The kernels are built once and
/// lowered per architecture, so several architectures cost one compile of
/// the model and one NVVM lowering each.
LogicalResult emitPtx(const DriverOptions &options, ModuleOp module,
                      TimingScope &timing) {
  std::vector<std::string> ptx;
  for (const std::string &chip : options.gpuArchs) {
    FailureOr<std::string> text =
        lowerKernelsToPtx(options, module, chip, timing);
    if (failed(text))
      return failure();
    ptx.push_back(std::move(*text));
  }
  return writeText(options, [&](llvm::raw_ostream &os) {
    // What a launch of each kernel needs besides its PTX (ptxas reports
    // static shared memory only).
    module.walk([&](gpu::GPUFuncOp func) {
      if (auto bytes =
              func->getAttrOfType<IntegerAttr>(kDynamicSharedMemoryAttrName))
        os << "// " << kDynamicSharedMemoryAttrName << " " << func.getName()
           << " " << bytes.getInt() << "\n";
    });
    for (size_t i = 0; i < ptx.size(); ++i)
      os << "// txl.ptx_module " << options.gpuArchs[i] << "\n" << ptx[i];
  });
}

/// --target=cuda executables: the kernels lowered to PTX once per
/// --gpu-arch, assembled and bundled into one fatbin (buildCudaFatbin).
FailureOr<std::string> compileCudaFatbin(const DriverOptions &options,
                                         ModuleOp module, TimingScope &timing) {
  std::vector<CudaArchPtx> archs;
  for (const std::string &chip : options.gpuArchs) {
    FailureOr<std::string> ptx = lowerKernelsToPtx(options, module, chip, timing);
    if (failed(ptx))
      return failure();
    archs.push_back({chip, std::move(*ptx)});
  }
  TimingScope tools = timing.nest("ptxas and fatbinary");
  return buildCudaFatbin(module.getLoc(), archs, options.cudaPath);
}

/// Checks that --emit fits --target and --gpu-arch.
LogicalResult checkTarget(const DriverOptions &options) {
  bool gpu = options.target != Target::Cpu;
  auto fail = [](const llvm::Twine &message) {
    llvm::errs() << "txlc: error: " << message << "\n";
    return failure();
  };
  if (llvm::Error err = checkCpuName(options.codegen.cpu))
    return fail(llvm::toString(std::move(err)));
  if (options.emit == EmitAction::Ptx && options.target != Target::Cuda)
    return fail("--emit=ptx needs --target=cuda");
  if (options.emit == EmitAction::Spirv && options.target != Target::OpenCL)
    return fail("--emit=spirv needs --target=opencl");
  if (options.precision == Precision::Fp16 && !gpu)
    return fail("--precision=fp16 needs --target=cuda or --target=opencl "
                "(the CPU target is f32 or bf16)");
  for (size_t i = 0; i < options.gpuArchs.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (options.gpuArchs[i] == options.gpuArchs[j])
        return fail("--gpu-arch: '" + options.gpuArchs[i] + "' given twice");
  // The architectures both LLVM 22's NVPTX backend and CUDA 13's ptxas
  // take, from sm_80 (the kernels' budgets are set for sm_80 and newer);
  // a/f: the arch- and family-specific variants of Hopper and Blackwell.
  static const llvm::Regex archPattern(
      "^sm_(80|86|87|89|90a?|(100|103|110|120|121)[af]?)$");
  for (const std::string &arch : options.gpuArchs)
    if (options.target == Target::Cuda && !archPattern.match(arch))
      return fail("--gpu-arch: '" + arch +
                  "' is not a CUDA architecture the kernels are built for "
                  "(sm_80, sm_86, sm_87, sm_89, sm_90, sm_90a, sm_100, "
                  "sm_103, sm_110, sm_120, sm_121; the last five also with "
                  "an a or f suffix)");
  // The toolkit's files the CUDA target needs, checked before compiling:
  // libdevice (linked into the PTX), then ptxas and fatbinary.
  if (options.target == Target::Cuda &&
      (options.emit == EmitAction::Ptx ||
       options.emit == EmitAction::Executable)) {
    std::vector<std::pair<const char *, bool>> needed = {
        {"nvvm/libdevice/libdevice.10.bc", false}};
    if (options.emit == EmitAction::Executable)
      needed.insert(needed.end(), {{"bin/ptxas", true}, {"bin/fatbinary", true}});
    for (auto [relative, executable] : needed) {
      llvm::SmallString<128> path(options.cudaPath);
      llvm::sys::path::append(path, relative);
      if (executable ? !llvm::sys::fs::can_execute(path)
                     : !llvm::sys::fs::exists(path))
        return fail("--target=cuda needs " + path +
                    " (from the CUDA toolkit; --cuda-path names its root)");
    }
  }
  if (gpu && (options.emit == EmitAction::LLVMIR ||
              options.emit == EmitAction::Object))
    return fail(llvm::Twine("--emit=") +
                (options.emit == EmitAction::LLVMIR ? "llvm" : "obj") +
                " is not available for the GPU targets yet");
  return success();
}

/// The LLVM dialect module to the executable: LLVM's optimization and code
/// generation in parallel parts, then the link with the runtime.
LogicalResult compileAndLink(const DriverOptions &options,
                             const ModelConfig &config, ModuleOp module,
                             TimingScope &root) {
  TimingScope codegenTiming =
      root.nest("LLVM: optimization and code generation (parallel parts)");
  SmallVector<std::string> objectPaths;
  LogicalResult emitted = emitObjectFilesInParallel(module, options.codegen,
                                                    objectPaths, codegenTiming);
  codegenTiming.stop();
  LogicalResult linked = failure();
  if (succeeded(emitted)) {
    TimingScope linkTiming = root.nest("linking");
    linked = linkExecutable(options, config, objectPaths);
  }
  if (!options.keepTemps)
    for (const std::string &path : objectPaths)
      llvm::sys::fs::remove(path);
  return linked;
}

LogicalResult lowerGpuKernelsAndHost(const DriverOptions &options,
                                     ModuleOp module, TimingScope &root);

/// The GPU targets after the txl-level passes: the attention kernels, the
/// lowering to linalg, bufferization and a kernel for every other loop
/// nest, then the kernels compiled (--emit=ptx / --emit=spirv stop there;
/// a CUDA executable embeds a fatbin, an OpenCL one a kernel image), the
/// host code to LLVM, and the executable.
LogicalResult runGpuTarget(const DriverOptions &options,
                           const ModelConfig &config, ModuleOp module,
                           TimingScope &root, const Resume &resume) {
  if (!resume.done(EmitAction::Linalg)) {
    ConvertRelAttentionToGpuPassOptions attention;
    attention.keyParts = options.attentionKeyParts;
    attention.precision = options.precision;
    if (failed(runStage(module, root, "the attention kernels",
                        [&](OpPassManager &pm) {
                          buildTxlToGpuPipeline(pm, attention);
                        })) ||
        failed(
            runStage(module, root, "lowering to linalg",
                     [](OpPassManager &pm) { buildTxlToLinalgPipeline(pm); })))
      return failure();
  }
  if (options.emit == EmitAction::Linalg)
    return writeModule(options, module);
  if (!resume.done(EmitAction::LLVMMLIR) &&
      failed(lowerGpuKernelsAndHost(options, module, root)))
    return failure();
  if (options.emit == EmitAction::Ptx || options.emit == EmitAction::Spirv)
    return success();
  if (options.emit == EmitAction::LLVMMLIR)
    return writeModule(options, module);
  return compileAndLink(options, config, module, root);
}

/// The GPU targets from linalg to the LLVM dialect: bufferization, a kernel
/// per loop nest, the kernels compiled (--emit=ptx and --emit=spirv write
/// them and stop there) and embedded, the host code lowered.
LogicalResult lowerGpuKernelsAndHost(const DriverOptions &options,
                                     ModuleOp module, TimingScope &root) {
  if (failed(runStage(module, root, "bufferizing; a kernel per loop nest",
                      [&](OpPassManager &pm) {
                        buildGpuLinalgToKernelsPipeline(
                            pm, options.precision, options.spreadReductions,
                            options.fuseLoops);
                      })))
    return failure();
  // CUDA: kernels with more than 48 KiB of workgroup tiles take them from
  // dynamic shared memory (OpenCL passes them as __local arguments).
  if (options.target == Target::Cuda &&
      failed(runStage(module, root, "dynamic shared memory",
                      [](OpPassManager &pm) {
                        pm.addPass(createDynamicSharedMemoryPass());
                      })))
    return failure();
  if (options.emit == EmitAction::Ptx)
    return emitPtx(options, module, root);
  if (options.target == Target::Cuda) {
    FailureOr<std::string> fatbin = compileCudaFatbin(options, module, root);
    if (failed(fatbin))
      return failure();
    replaceKernelsWithCudaFatbin(module, *fatbin, options.gpuArchs.front());
  } else {
    bool spirvOnly = options.emit == EmitAction::Spirv;
    FailureOr<std::string> kernels = compileOpenCLKernels(
        module, root, /*image=*/!spirvOnly,
        llvm::StringRef(options.outputPath).ends_with(".spvasm"));
    if (failed(kernels))
      return failure();
    if (spirvOnly)
      return writeText(options,
                       [&](llvm::raw_ostream &os) { os << *kernels; });
    replaceKernelsWithOpenCLImage(module, *kernels);
  }
  return runStage(module, root, "lowering the host code to LLVM",
                  buildGpuHostToLLVMPipeline);
}

} // namespace

int mlir::txl::runDriver(const DriverOptions &options) {
  if (failed(checkTarget(options)))
    return 1;
  llvm::Expected<ModelConfig> config = loadModelConfig(options.inputPath);
  if (!config) {
    llvm::errs() << llvm::toString(config.takeError()) << "\n";
    return 1;
  }

  DialectRegistry registry;
  registerAllTxlDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  if (irPrintingRequested())
    context.disableMultithreading();

  // One timing report for the whole compilation (--mlir-timing): every
  // pass of every stage, then LLVM's optimization and code generation.
  DefaultTimingManager timingManager;
  applyDefaultTimingManagerCLOptions(timingManager);
  TimingScope root = timingManager.getRootScope();

  // The module: built from the model file, or read back from --input-ir
  // with the stages it went through skipped.
  Resume resume;
  OwningOpRef<ModuleOp> owned;
  if (!options.inputIrPath.empty()) {
    FailureOr<OwningOpRef<ModuleOp>> read =
        readInputIr(options, context, resume);
    if (failed(read))
      return 1;
    owned = std::move(*read);
  } else {
    TimingScope frontendTiming = root.nest("building the segment (frontend)");
    FailureOr<OwningOpRef<ModuleOp>> built =
        buildSegmentModule(context, *config);
    if (failed(built))
      return 1;
    owned = std::move(*built);
    ModuleOp module = owned.get();
    // The key/value-cache entries, on every target (the runtime passes
    // the cache's windows as views of device buffers).
    if (options.kvCache && hasKvCacheFunctions(*config) &&
        failed(buildKvCacheFunctions(module, *config)))
      return 1;
    if (failed(buildTrainingFunctions(
            module, *config,
            options.target == Target::Cpu ? 0 : normTensorsPerKernel(),
            options.target == Target::Cpu ? 0 : normSums())) ||
        failed(verify(module)))
      return 1;
  }
  ModuleOp module = owned.get();
  if (options.emit == EmitAction::Txl)
    return failed(writeModule(options, module));

  TxlCpuPipelineOptions pipeline;
  pipeline.fuseAttention = options.fuseAttention;
  if (!resume.done(EmitAction::TxlOpt) &&
      failed(runStage(
          module, root, "txl-level optimization",
          [&](OpPassManager &pm) { buildTxlOptPipeline(pm, pipeline); })))
    return 1;
  if (options.emit == EmitAction::TxlOpt)
    return failed(writeModule(options, module));

  bool backward = options.backward;
  if (options.emit == EmitAction::TxlGrad && !backward) {
    llvm::errs() << "txlc: error: --emit=txl-grad needs --backward\n";
    return 1;
  }
  if (backward && !resume.done(EmitAction::TxlGrad) &&
      failed(runStage(module, root, "generating the backward segment",
                      [&](OpPassManager &pm) {
                        // The attention kernels of every target save each
                        // row's log-sum-exp (and the output) for the
                        // backward, which then does not run the forward
                        // again.
                        buildTxlBackwardPipeline(pm,
                                                 /*saveAttentionStats=*/true,
                                                 config->train.isAlRfou()
                                                     ? kAlRfouTrainFunctionName
                                                     : kSegmentFunctionName);
                      })))
    return 1;
  if (options.emit == EmitAction::TxlGrad)
    return failed(writeModule(options, module));

  if (options.target != Target::Cpu)
    return failed(runGpuTarget(options, *config, module, root, resume));

  if (!resume.done(EmitAction::Linalg) &&
      failed(
          runStage(module, root, "lowering to linalg", [&](OpPassManager &pm) {
            ConvertRelAttentionToCpuPassOptions attention;
            if (options.cpuAttention == CpuAttention::Auto)
              attention.minScoreBytes = kAutoAttentionScoreBytes;
            // The backward op too (@segment_grad).
            attention.grad = true;
            // Default: 512-bit when --mcpu has AVX-512, else both forms,
            // the executable choosing by cpuid.
            attention.vectorBits =
                options.cpuVectorBits
                    ? options.cpuVectorBits
                    : (cpuHasAvx512(options.codegen.cpu) ? 512 : 0);
            // The output layer's kernel at the same width.
            ConvertLinearNllToCpuPassOptions output =
                cpuOutputOptions(options.precision);
            output.vectorBits = attention.vectorBits;
            buildTxlToLinalgPipeline(pm, /*stridedAttention=*/true,
                                     options.cpuAttention != CpuAttention::Blas
                                         ? &attention
                                         : nullptr,
                                     &output);
          })))
    return 1;
  if (options.emit == EmitAction::Linalg)
    return failed(writeModule(options, module));

  if (!resume.done(EmitAction::LLVMMLIR) &&
      failed(runStage(module, root, "lowering to the LLVM dialect",
                      [&](OpPassManager &pm) {
                        buildLinalgToLLVMPipeline(pm, options.precision);
                      })))
    return 1;
  if (options.emit == EmitAction::LLVMMLIR)
    return failed(writeModule(options, module));

  if (options.emit == EmitAction::Executable)
    return failed(compileAndLink(options, *config, module, root)) ? 1 : 0;

  llvm::LLVMContext llvmContext;
  TimingScope optTiming = root.nest("LLVM: translation and optimization");
  std::unique_ptr<llvm::Module> llvmModule =
      translateAndOptimize(module, llvmContext, options.codegen);
  optTiming.stop();
  if (!llvmModule)
    return 1;
  if (options.emit == EmitAction::LLVMIR)
    return failed(writeText(options, [&](llvm::raw_ostream &os) {
      llvmModule->print(os, nullptr);
    }));

  TimingScope codegenTiming = root.nest("LLVM: code generation");
  if (llvm::Error err =
          emitObjectFile(*llvmModule, options.outputPath, options.codegen)) {
    llvm::errs() << "txlc: error: " << llvm::toString(std::move(err)) << "\n";
    return 1;
  }
  return 0;
}

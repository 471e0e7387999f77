//===- Driver.cpp - The txlc compiler driver ---------------------*- C++ -*-===//

#include "txl/Driver/Driver.h"

#include "txl/Frontend/TrainingBuilder.h"
#include "txl/InitAll.h"
#include "txl/Pipelines/Pipelines.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
using namespace mlir::txl;

namespace {

/// Prints `module` (MLIR or LLVM IR) to the output path.
template <typename Printable>
LogicalResult writeText(const DriverOptions &options, Printable &&print) {
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> out =
      openOutputFile(options.outputPath.empty() ? "-" : options.outputPath,
                     &error);
  if (!out) {
    llvm::errs() << "txlc: error: " << error << "\n";
    return failure();
  }
  print(out->os());
  out->keep();
  return success();
}

/// Runs `pm` and reports a failure as txlc's.
LogicalResult runStage(PassManager &pm, ModuleOp module, llvm::StringRef what) {
  if (succeeded(pm.run(module)))
    return success();
  llvm::errs() << "txlc: error: " << what << " failed\n";
  return failure();
}

/// Compiles the generated model descriptor and links the executable.
LogicalResult linkExecutable(const DriverOptions &options,
                             const ModelConfig &config,
                             llvm::StringRef objectPath) {
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
    emitModelInfoSource(config, os);
  }

  std::string linker = options.linker;
  if (linker.empty()) {
    for (const char *candidate : {"clang++-22", "/usr/lib/llvm-22/bin/clang++"}) {
      if (auto found = llvm::sys::findProgramByName(candidate)) {
        linker = *found;
        break;
      }
    }
  }
  if (linker.empty()) {
    llvm::errs() << "txlc: error: no linker found (clang++-22); pass --linker\n";
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

  SmallVector<std::string> args = {
      linker,  "-O2",
      "-I" + options.runtimeIncludeDir,
      "-x",    "c",
      std::string(infoPath), "-x", "none",
      std::string(objectPath),
      "-L" + runtimeLib, "-ltxl_runtime_main", "-ltxl_runtime",
      "-lopenblas", "-lm", "-lpthread", "-o", out};
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

} // namespace

int mlir::txl::runDriver(const DriverOptions &options) {
  llvm::Expected<ModelConfig> config = loadModelConfig(options.inputPath);
  if (!config) {
    llvm::errs() << llvm::toString(config.takeError()) << "\n";
    return 1;
  }

  DialectRegistry registry;
  registerAllTxlDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();

  FailureOr<OwningOpRef<ModuleOp>> built = buildSegmentModule(context, *config);
  if (failed(built))
    return 1;
  ModuleOp module = built->get();
  if (failed(buildTrainingFunctions(module, *config)) || failed(verify(module)))
    return 1;
  auto print = [&](llvm::raw_ostream &os) { module.print(os); };
  if (options.emit == EmitAction::Txl)
    return failed(writeText(options, print));

  TxlCpuPipelineOptions pipeline;
  pipeline.fuseAttention = options.fuseAttention;
  PassManager optPm(&context);
  buildTxlOptPipeline(optPm, pipeline);
  if (failed(runStage(optPm, module, "txl-level optimization")))
    return 1;
  if (options.emit == EmitAction::TxlOpt)
    return failed(writeText(options, print));

  bool backward = options.backward;
  if (options.emit == EmitAction::TxlGrad && !backward) {
    llvm::errs() << "txlc: error: --emit=txl-grad needs --backward\n";
    return 1;
  }
  if (backward) {
    PassManager gradPm(&context);
    buildTxlBackwardPipeline(gradPm);
    if (failed(runStage(gradPm, module, "generating the backward segment")))
      return 1;
  }
  if (options.emit == EmitAction::TxlGrad)
    return failed(writeText(options, print));

  PassManager linalgPm(&context);
  buildTxlToLinalgPipeline(linalgPm);
  if (failed(runStage(linalgPm, module, "lowering to linalg")))
    return 1;
  if (options.emit == EmitAction::Linalg)
    return failed(writeText(options, print));

  PassManager llvmPm(&context);
  buildLinalgToLLVMPipeline(llvmPm);
  if (failed(runStage(llvmPm, module, "lowering to the LLVM dialect")))
    return 1;
  if (options.emit == EmitAction::LLVMMLIR)
    return failed(writeText(options, print));

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateAndOptimize(module, llvmContext, options.codegen);
  if (!llvmModule)
    return 1;
  if (options.emit == EmitAction::LLVMIR)
    return failed(writeText(
        options, [&](llvm::raw_ostream &os) { llvmModule->print(os, nullptr); }));

  if (options.emit == EmitAction::Object) {
    if (llvm::Error err =
            emitObjectFile(*llvmModule, options.outputPath, options.codegen)) {
      llvm::errs() << "txlc: error: " << llvm::toString(std::move(err)) << "\n";
      return 1;
    }
    return 0;
  }

  llvm::SmallString<128> objectPath;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("txl_segment", "o", objectPath)) {
    llvm::errs() << "txlc: error: cannot create a temporary file: "
                 << ec.message() << "\n";
    return 1;
  }
  if (llvm::Error err = emitObjectFile(*llvmModule, objectPath, options.codegen)) {
    llvm::errs() << "txlc: error: " << llvm::toString(std::move(err)) << "\n";
    return 1;
  }
  LogicalResult linked = linkExecutable(options, *config, objectPath);
  if (!options.keepTemps)
    llvm::sys::fs::remove(objectPath);
  return failed(linked) ? 1 : 0;
}

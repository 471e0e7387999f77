//===- txlc.cpp - Transformer-XL model file -> executable ---------*- C++
//-*-===//

#include "txl/Driver/Driver.h"
#include "txl/InitAll.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"

namespace cl = llvm::cl;
using namespace mlir::txl;

static cl::OptionCategory txlcCategory("txlc options");

static cl::opt<std::string> inputFile(cl::cat(txlcCategory), cl::Positional,
                                      cl::desc("<model file (.toml)>"),
                                      cl::Required);
static cl::opt<std::string> outputFile(cl::cat(txlcCategory), "o",
                                       cl::desc("Output path (executable, "
                                                "object, or text; default "
                                                "stdout for text)"),
                                       cl::value_desc("path"), cl::init(""));
static cl::opt<EmitAction> emitAction(
    cl::cat(txlcCategory), "emit", cl::desc("Stage to stop after"),
    cl::init(EmitAction::Executable),
    cl::values(
        clEnumValN(EmitAction::Txl, "txl",
                   "the segment in the txl dialect, four-term form"),
        clEnumValN(EmitAction::TxlOpt, "txl-opt",
                   "after txl-level passes (attention fusion)"),
        clEnumValN(EmitAction::TxlGrad, "txl-grad",
                   "after txl-opt, with the generated backward segment "
                   "(@segment_grad)"),
        clEnumValN(EmitAction::Linalg, "linalg", "after lowering to linalg"),
        clEnumValN(EmitAction::LLVMMLIR, "llvm-mlir", "the MLIR LLVM dialect"),
        clEnumValN(EmitAction::LLVMIR, "llvm", "optimized LLVM IR"),
        clEnumValN(EmitAction::Object, "obj", "an object file (needs -o)"),
        clEnumValN(EmitAction::Executable, "exe",
                   "a standalone executable (default; needs -o)"),
        clEnumValN(
            EmitAction::Ptx, "ptx",
            "the GPU kernels as PTX (--target=cuda; a module per --gpu-arch)"),
        clEnumValN(EmitAction::Spirv, "spirv",
                   "the GPU kernels as a SPIR-V module (--target=opencl; "
                   "binary, or LLVM's SPIR-V assembly for -o *.spvasm)")));
static cl::opt<Target> target(
    cl::cat(txlcCategory), "target", cl::desc("What to compile for"),
    cl::init(Target::Cpu),
    cl::values(clEnumValN(Target::Cpu, "cpu",
                          "native code and OpenBLAS (default)"),
               clEnumValN(Target::Cuda, "cuda",
                          "NVIDIA GPUs: kernels through NVVM and ptxas, "
                          "one fatbin (a cubin per --gpu-arch + PTX); "
                          "executables that evaluate, generate and train on "
                          "the GPU"),
               clEnumValN(Target::OpenCL, "opencl",
                          "OpenCL 3.0 devices with SPIR-V: the same kernels "
                          "as SPIR-V; executables that evaluate, generate "
                          "and train on the device")));
static cl::list<std::string> gpuArchs(
    cl::cat(txlcCategory), "gpu-arch",
    cl::desc("--target=cuda: CUDA architectures, comma separated (default "
             "sm_80,sm_90a: cubins for A100- and H100/H200-class GPUs, the "
             "latter with wgmma, and sm_80's PTX for newer ones; --emit=ptx "
             "writes one PTX module per architecture, each after a line "
             "'// txl.ptx_module <arch>')"),
    cl::CommaSeparated);
static cl::opt<std::string>
    cudaPath(cl::cat(txlcCategory), "cuda-path",
             cl::desc("CUDA toolkit (libdevice, ptxas, fatbinary)"),
             cl::init("/usr/local/cuda"));
static cl::opt<Precision> precision(
    cl::cat(txlcCategory), "precision", cl::desc("Arithmetic of the products"),
    cl::init(Precision::F32),
    cl::values(clEnumValN(Precision::F32, "f32",
                          "f32 throughout, the exactness mode (default)"),
               clEnumValN(Precision::Bf16, "bf16",
                          "bf16 operands, f32 accumulation: the attention "
                          "forward and backward kernels on tensor cores "
                          "(mma.sync m16n8k16; wgmma m64nNk16 on sm_90a for "
                          "the products whose B the workgroup stages) and "
                          "cuBLAS products with CUBLAS_COMPUTE_32F_FAST_16BF; "
                          "on opencl the kernels' products are emulated "
                          "with shuffles and the library products stay f32; "
                          "on the CPU the BLAS products (oneMKL's "
                          "cblas_gemm_bf16bf16f32: AMX or AVX512-BF16 where "
                          "present; emulated without oneMKL) and the tiled "
                          "attention stays f32"),
               clEnumValN(Precision::Fp16, "fp16",
                          "f16 operands, f32 accumulation, as bf16 (cuBLAS: "
                          "CUBLAS_COMPUTE_32F_FAST_16F); train scales the "
                          "loss dynamically")));
static cl::opt<int64_t> attentionKeyParts(
    cl::cat(txlcCategory), "attention-key-parts",
    cl::desc("GPU targets: split the attention kernels' keys into this "
             "many parts, combined by a second kernel (flash-decoding); 0 "
             "(default) lets the runtime choose per launch: more than 1 "
             "only when the unsplit grid leaves the device's compute units "
             "idle, as with short segments over a long memory"),
    cl::init(0));
static cl::opt<bool> spreadReductions(
    cl::cat(txlcCategory), "gpu-spread-reductions",
    cl::desc("GPU targets: spread a generic kernel's reduction of 64 steps "
             "or more (a row's sum or max, a column sum over the segment's "
             "rows) over a subgroup or a workgroup (default true; false: one "
             "work-item per result element walks it, as before issue 51, "
             "for comparison)"),
    cl::init(true));
static cl::opt<bool> fuseLoops(
    cl::cat(txlcCategory), "gpu-fuse-loops",
    cl::desc("GPU targets: merge adjacent elementwise loop nests whose "
             "work-items see no other's writes (a layer's key and value "
             "appended to their windows, the backward's elementwise "
             "gradients, the segment's hidden states copied to its outputs, "
             "the optimizer's parameter updates) into one kernel, one launch "
             "where there were several (default true; false: a kernel per "
             "loop nest, for comparison)"),
    cl::init(true));
static cl::opt<bool> backward(
    cl::cat(txlcCategory), "backward",
    cl::desc("Generate the backward segment for training and --grad-segment "
             "(default true)"),
    cl::init(true));
static cl::opt<bool> kvCache(
    cl::cat(txlcCategory), "kv-cache",
    cl::desc("attn_type 0 (every target): also compile the key/value-cache "
             "forms of the evaluation forward (@segment_kv, "
             "@segment_log_probs_kv, @segment_r_head_k), which the "
             "executable's eval, run-segments, generate and score use unless "
             "given --no-kv-cache (default true)"),
    cl::init(true));
static cl::opt<std::string> inputIr(
    cl::cat(txlcCategory), "input-ir", cl::value_desc("file"),
    cl::desc("Resume from a module that txlc wrote for this model file with "
             "--emit=txl, txl-opt, txl-grad, linalg or llvm-mlir (possibly "
             "transformed since, e.g. by txl-opt), with the same --target "
             "and --precision; the stages before it are skipped (their "
             "options have no effect) and the model file gives the "
             "executable's model description"),
    cl::init(""));
static cl::opt<bool> fuseAttention(
    cl::cat(txlcCategory), "fuse-attention",
    cl::desc("Fuse the four-term relative attention (default true; false "
             "lowers the decomposed form)"),
    cl::init(true));
static cl::opt<CpuAttention> cpuAttention(
    cl::cat(txlcCategory), "cpu-attention",
    cl::desc("CPU target: how the fused attention is lowered"),
    cl::values(clEnumValN(CpuAttention::Auto, "auto",
                          "per call: the tiled kernel when the BLAS "
                          "products' scores would take more than 32 MiB, "
                          "else the products"),
               clEnumValN(CpuAttention::Tiled, "tiled",
                          "always one tiled kernel, forward and backward, "
                          "no qlen x klen buffers (default)"),
               clEnumValN(CpuAttention::Blas, "blas",
                          "BLAS products over whole score matrices")),
    cl::init(CpuAttention::Tiled));
static cl::opt<int64_t> cpuVectorBits(
    cl::cat(txlcCategory), "cpu-vector-bits",
    cl::desc("CPU target: the vector width of the tiled attention kernel "
             "and the output layer's kernel, 256 or 512 (default: 512 when "
             "--mcpu has AVX-512; else both, "
             "the executable running the 512-bit kernel when the CPU has "
             "AVX-512 and TXL_X86_64_V4 is not 0)"),
    cl::init(0));
static cl::opt<std::string> mcpu(cl::cat(txlcCategory), "mcpu",
                                 cl::desc("Target CPU (LLVM name, or "
                                          "'native')"),
                                 cl::init("x86-64-v3"));
static cl::opt<bool> cpuVariants(
    cl::cat(txlcCategory), "cpu-variants",
    cl::desc("Also compile the functions with loops for x86-64-v4 "
             "(AVX-512), the executable choosing them at start-up by cpuid "
             "(TXL_X86_64_V4=0 keeps the --mcpu code); about 1.5x the code "
             "generation time for 1-4 % of speed (bench/README.md)"),
    cl::init(false));
static cl::opt<unsigned> optLevel(cl::cat(txlcCategory), "O",
                                  cl::desc("LLVM optimization level 0-3"),
                                  cl::Prefix, cl::init(3));
static cl::opt<std::string> runtimeDir(
    cl::cat(txlcCategory), "runtime-dir",
    cl::desc("Directory with libtxl_runtime.a (default: ../lib beside txlc)"),
    cl::init(""));
static cl::opt<std::string>
    runtimeInclude(cl::cat(txlcCategory), "runtime-include",
                   cl::desc("Directory with txl/runtime.h"),
                   cl::init(TXL_DEFAULT_RUNTIME_INCLUDE_DIR));
static cl::opt<std::string> linker(cl::cat(txlcCategory), "linker",
                                   cl::desc("C++ compiler driver used to link "
                                            "(default clang++-22)"),
                                   cl::init(""));
static cl::opt<unsigned>
    jobs(cl::cat(txlcCategory), "j",
         cl::desc("Threads for LLVM optimization and code generation of an "
                  "executable (0 = one per core)"),
         cl::Prefix, cl::init(0));
static cl::opt<bool> keepTemps(cl::cat(txlcCategory), "keep-temps",
                               cl::desc("Keep the intermediate object and C "
                                        "files"),
                               cl::init(false));

/// mlir-opt's debugging options, shown in txlc's --help next to its own.
static cl::OptionCategory mlirCategory("MLIR options (as in mlir-opt)");

/// Registers mlir-opt's pass-manager, timing, printing and context options
/// (--mlir-print-ir-after-all, --mlir-timing, the crash reproducer,
/// --mlir-disable-threading, ...) and files them under `mlirCategory`.
static void registerMlirOptions() {
  mlir::registerPassManagerCLOptions();
  mlir::registerDefaultTimingManagerCLOptions();
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  for (auto &[name, option] : cl::getRegisteredOptions())
    if (name.starts_with("mlir-"))
      option->addCategory(mlirCategory);
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // The GPU kernels' pipelines name upstream passes (Pipelines.cpp); first,
  // so that --mlir-print-ir-before/after=<pass> know every pass.
  registerAllTxlPasses();
  registerMlirOptions();
  // libLLVM registers its own options globally; show only txlc's and
  // mlir-opt's.
  cl::HideUnrelatedOptions({&txlcCategory, &mlirCategory});
  cl::ParseCommandLineOptions(
      argc, argv,
      "txlc: compile a Transformer-XL model file into a standalone "
      "executable\n\n"
      "  txlc models/ptb_small.toml -o build/ptb_small\n"
      "  txlc models/ptb_small.toml --emit=txl\n"
      "  txlc models/ptb_small.toml --target=opencl -o build/ptb_small_ocl\n"
      "  txlc models/ptb_small.toml --target=cuda -o build/ptb_small_cuda\n"
      "  txlc models/ptb_small.toml --target=cuda --gpu-arch=sm_90 "
      "--emit=ptx\n"
      "  txlc models/ptb_small.toml --input-ir=edited.mlir -o "
      "build/ptb_small\n");

  DriverOptions options;
  options.inputPath = inputFile;
  options.inputIrPath = inputIr;
  options.outputPath = outputFile;
  options.emit = emitAction;
  options.target = target;
  if (!gpuArchs.empty())
    options.gpuArchs.assign(gpuArchs.begin(), gpuArchs.end());
  options.cudaPath = cudaPath;
  options.fuseAttention = fuseAttention;
  options.cpuAttention = cpuAttention;
  if (cpuVectorBits != 0 && cpuVectorBits != 256 && cpuVectorBits != 512) {
    llvm::errs() << "txlc: error: --cpu-vector-bits must be 256 or 512, not "
                 << cpuVectorBits << "\n";
    return 1;
  }
  options.cpuVectorBits = cpuVectorBits;
  if (attentionKeyParts < 0) {
    llvm::errs() << "txlc: error: --attention-key-parts must be 0 (chosen at "
                    "run time) or a number of parts, not "
                 << attentionKeyParts << "\n";
    return 1;
  }
  options.attentionKeyParts = attentionKeyParts;
  options.spreadReductions = spreadReductions;
  options.fuseLoops = fuseLoops;
  options.precision = precision;
  options.backward = backward;
  options.kvCache = kvCache;
  options.codegen.cpu = mcpu;
  options.codegen.x86_64V4Variants = cpuVariants;
  if (optLevel > 3) {
    llvm::errs() << "txlc: error: -O" << optLevel
                 << ": the optimization level is 0, 1, 2 or 3\n";
    return 1;
  }
  options.codegen.optLevel = optLevel;
  options.codegen.threads = jobs;
  options.runtimeIncludeDir = runtimeInclude;
  options.linker = linker;
  options.keepTemps = keepTemps;
  if ((options.emit == EmitAction::Object ||
       options.emit == EmitAction::Executable) &&
      options.outputPath.empty()) {
    llvm::errs() << "txlc: error: -o is required for --emit=obj and exe\n";
    return 1;
  }
  // An output that is the model file (the same file, however spelled) or
  // a directory: refused before anything is compiled (issue 48, items 3
  // and 17).
  if (!options.outputPath.empty() && options.outputPath != "-") {
    llvm::sys::fs::file_status out, in;
    if (options.outputPath.back() == '/' ||
        llvm::sys::fs::is_directory(options.outputPath)) {
      llvm::errs() << "txlc: error: -o " << options.outputPath
                   << " is a directory: give the output file's path\n";
      return 1;
    }
    for (const auto &[path, what] :
         {std::pair(options.inputPath, "the model file"),
          std::pair(options.inputIrPath, "the --input-ir file")})
      if (!path.empty() && !llvm::sys::fs::status(options.outputPath, out) &&
          !llvm::sys::fs::status(path, in) &&
          llvm::sys::fs::equivalent(out, in)) {
        llvm::errs() << "txlc: error: -o " << options.outputPath << " is "
                     << what << " " << path << ": refusing to overwrite it\n";
        return 1;
      }
  }
  options.runtimeLibDir = runtimeDir;
  if (options.runtimeLibDir.empty()) {
    std::string self = llvm::sys::fs::getMainExecutable(argv[0], (void *)&main);
    llvm::SmallString<128> dir(llvm::sys::path::parent_path(self));
    llvm::sys::path::append(dir, "..", "lib");
    options.runtimeLibDir = std::string(dir);
  }
  return runDriver(options);
}

//===- Driver.h - The txlc compiler driver -----------------------*- C++
//-*-===//
//
// Model file -> txl IR -> txl-opt -> linalg -> LLVM dialect -> LLVM IR ->
// object -> executable (Toy's toyc staging: each --emit level stops there).
//
//===----------------------------------------------------------------------===//

#ifndef TXL_DRIVER_DRIVER_H
#define TXL_DRIVER_DRIVER_H

#include "txl/Conversion/Precision.h"
#include "txl/Frontend/ModelConfig.h"
#include "txl/Frontend/SegmentBuilder.h"
#include "txl/Target/ObjectEmitter.h"

#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace mlir {
namespace txl {

/// Where `txlc` stops.
enum class EmitAction {
  Txl,
  TxlOpt,
  TxlGrad,
  Linalg,
  LLVMMLIR,
  LLVMIR,
  Object,
  Executable,
  Ptx,
  Spirv
};

/// What `txlc` compiles for.
enum class Target { Cpu, Cuda, OpenCL };

/// The CPU target's lowering of the fused attention (`txlc --cpu-attention`):
/// the tiled kernel (txl-rel-attention-to-cpu) always, never (BLAS products
/// over whole score matrices, convert-txl-to-linalg), or per call where the
/// products' scores would exceed kAutoAttentionScoreBytes.
enum class CpuAttention { Auto, Tiled, Blas };

/// `--cpu-attention=auto`: the tiled kernel for the calls whose BLAS-product
/// scores (n_head · batch · qlen · (klen + 1) floats) would take more bytes.
inline constexpr int64_t kAutoAttentionScoreBytes = 32 << 20;

struct DriverOptions {
  /// The model file (TOML).
  std::string inputPath;
  /// --input-ir: a module `txlc --emit=<stage>` wrote for this model file,
  /// target and precision (its `txl.emitted` attribute), possibly
  /// transformed since (txl-opt); the compilation resumes after that stage
  /// instead of building the module from the model file, which still gives
  /// the executable's model description. Empty: build from the model file.
  std::string inputIrPath;
  std::string outputPath; ///< "-" = stdout for textual stages
  EmitAction emit = EmitAction::Executable;
  Target target = Target::Cpu;
  /// --target=cuda: the architectures to build for (`sm_90a`, ...). The
  /// default runs the fastest kernels on A100- and H100/H200-class GPUs
  /// (sm_90a: the warpgroup products, which sm_90 lacks), and sm_80's PTX
  /// on newer ones.
  std::vector<std::string> gpuArchs = {"sm_80", "sm_90a"};
  /// The CUDA toolkit (libdevice, ptxas).
  std::string cudaPath = "/usr/local/cuda";
  bool fuseAttention = true;
  /// CPU target: how txl.rel_attention is lowered.
  CpuAttention cpuAttention = CpuAttention::Tiled;
  /// CPU target: the tiled attention kernel's vector width in bits, 256 or
  /// 512; 0: 512 when codegen.cpu has AVX-512 (cpuHasAvx512), else both,
  /// the executable running the 512-bit one on a CPU with x86-64-v4.
  int64_t cpuVectorBits = 0;
  /// GPU targets: the forward attention kernels' parts of the keys
  /// (txl-rel-attention-to-gpu's key-parts): 0, chosen per launch by the
  /// runtime for the device; N >= 1, always N.
  int64_t attentionKeyParts = 0;
  /// GPU targets: a generic kernel's reduction of 64 steps or more spread
  /// over a subgroup or a workgroup (txl-parallel-loops-to-gpu's
  /// spread-reductions); false: one work-item per result element.
  bool spreadReductions = true;
  /// GPU targets: adjacent elementwise parallel loops fused into one kernel
  /// (buildGpuLinalgToKernelsPipeline's fuseLoops).
  bool fuseLoops = true;
  /// The products' operand type: f32; bf16 (bf16 operands, f32
  /// accumulation: on the GPU targets the attention kernel's and cuBLAS's
  /// tensor-core products, on the CPU the BLAS products through
  /// txl_rt_sgemm_bf16); on the GPU targets also fp16.
  Precision precision = Precision::F32;
  /// Add @segment_grad (txl-generate-backward) and its txl_segment_grad
  /// entry (fused or decomposed attention).
  bool backward = true;
  /// attn_type 0 (every target): add the key/value-cache functions
  /// (buildKvCacheFunctions) and their txl_segment_kv,
  /// txl_segment_log_probs_kv and txl_segment_r_head_k entries.
  bool kvCache = true;
  CodegenOptions codegen;
  std::string runtimeLibDir;     ///< libtxl_runtime*.a
  std::string runtimeIncludeDir; ///< txl/runtime.h
  std::string linker;            ///< C/C++ compiler driver used to link
  bool keepTemps = false;
};

/// Writes the C definition of `txl_model_info` (runtime.h) for `config`,
/// compiled for `target` with products at `precision` (the table's
/// txl_backend_t and txl_precision_t).
void emitModelInfoSource(const ModelConfig &config, Target target,
                         Precision precision, llvm::raw_ostream &os);

/// Runs the driver; diagnostics go to stderr. Returns the process exit code.
int runDriver(const DriverOptions &options);

} // namespace txl
} // namespace mlir

#endif // TXL_DRIVER_DRIVER_H

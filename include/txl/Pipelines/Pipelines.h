//===- Pipelines.h - txlc pass pipelines -------------------------*- C++
//-*-===//
//
// The CPU pipeline, in stages that `txlc --emit=...` stops after:
//   txl-opt : fuse the relative attention (optional)
//   txl-grad: generate the backward segment @segment_grad (optional)
//   linalg  : lower rel_shift (and its backward) to index arithmetic, convert
//             txl to linalg/tensor
//   llvm    : bufferize, matmuls to cblas_sgemm, loops, LLVM dialect, and the
//             packed runtime entry point
//
//===----------------------------------------------------------------------===//

#ifndef TXL_PIPELINES_PIPELINES_H
#define TXL_PIPELINES_PIPELINES_H

#include "txl/Conversion/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir {
namespace txl {

/// Options of the CPU pipeline (also `txl-opt --txl-cpu-pipeline=...`).
struct TxlCpuPipelineOptions
    : public PassPipelineOptions<TxlCpuPipelineOptions> {
  PassOptions::Option<bool> fuseAttention{
      *this, "fuse-attention",
      llvm::cl::desc("Fuse the four-term relative attention into "
                     "txl.rel_attention (off: the decomposed form is lowered)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> generateBackward{
      *this, "generate-backward",
      llvm::cl::desc("Add @segment_grad (txl-generate-backward) after the "
                     "txl-level passes, and its txl_segment_grad entry"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> tiledAttention{
      *this, "tiled-attention",
      llvm::cl::desc("Lower txl.rel_attention to calls of the tiled CPU "
                     "kernel (txl-rel-attention-to-cpu, as txlc's default "
                     "--cpu-attention=tiled; off: the BLAS-product lowering "
                     "of convert-txl-to-linalg, --cpu-attention=blas)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> outputKernel{
      *this, "output-kernel",
      llvm::cl::desc("Lower the f32 output layer and NLL (txl.linear_nll of a "
                     "forward segment, txl.linear_nll_fwd and _grad of a "
                     "training one) to calls of the CPU kernels "
                     "(txl-linear-nll-to-cpu with train; off: "
                     "convert-txl-to-linalg's blocked lowering)"),
      llvm::cl::init(true)};
  PassOptions::Option<Precision> precision{
      *this, "precision",
      llvm::cl::desc("The matrix products' operand type (txlc --precision; "
                     "txl-linalg-to-blas precision): f32, cblas_sgemm; bf16, "
                     "the runtime's txl_rt_sgemm_bf16"),
      llvm::cl::init(Precision::F32), precisionValues()};
};

/// Options of the GPU targets' stage pipelines in txl-opt
/// (`txl-to-gpu-pipeline`, `txl-gpu-linalg-to-kernels-pipeline`).
struct TxlGpuPipelineOptions
    : public PassPipelineOptions<TxlGpuPipelineOptions> {
  PassOptions::Option<Precision> precision{
      *this, "precision",
      llvm::cl::desc("The products' operand type (txlc --precision): the "
                     "attention kernels' (tensor cores at bf16 and fp16) and "
                     "the library products'"),
      llvm::cl::init(Precision::F32), precisionValues()};
  PassOptions::Option<int64_t> keyParts{
      *this, "key-parts",
      llvm::cl::desc("txl-to-gpu-pipeline: the forward attention kernels' "
                     "parts of the keys (txl-rel-attention-to-gpu key-parts; "
                     "0: chosen by the runtime per launch)"),
      llvm::cl::init(0)};
  PassOptions::Option<bool> spreadReductions{
      *this, "spread-reductions",
      llvm::cl::desc("txl-gpu-linalg-to-kernels-pipeline: "
                     "txl-parallel-loops-to-gpu's spread-reductions"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> fuseLoops{
      *this, "fuse-loops",
      llvm::cl::desc("txl-gpu-linalg-to-kernels-pipeline: merge adjacent "
                     "elementwise parallel loops into one kernel "
                     "(txl-fuse-parallel-loops)"),
      llvm::cl::init(true)};
};

/// Options of `txl-kernels-to-ptx-pipeline` (buildKernelsToPtxPipeline).
struct TxlPtxPipelineOptions
    : public PassPipelineOptions<TxlPtxPipelineOptions> {
  PassOptions::Option<std::string> chip{
      *this, "chip", llvm::cl::desc("The CUDA architecture (txlc --gpu-arch)"),
      llvm::cl::init("sm_80")};
  PassOptions::Option<std::string> features{
      *this, "features",
      llvm::cl::desc("The PTX ISA as an NVPTX feature (txlc picks it per "
                     "architecture)"),
      llvm::cl::init("+ptx80")};
  PassOptions::Option<std::string> cudaPath{
      *this, "cuda-path",
      llvm::cl::desc("The CUDA toolkit (libdevice; txlc --cuda-path)"),
      llvm::cl::init("/usr/local/cuda")};
};

/// txl -> txl: --txl-fuse-rel-attention (if enabled), canonicalize, CSE.
void buildTxlOptPipeline(OpPassManager &pm,
                         const TxlCpuPipelineOptions &options);
/// txl -> txl: --txl-generate-backward{loss-scale} on `function` (@segment,
/// or objective "alrfou"'s @segment_train, which is then erased; adds
/// @segment_grad, whose last argument is the runtime's loss scale), then
/// canonicalization and CSE. With `saveAttentionStats` (what txlc and
/// buildTxlCpuPipeline pass, every target and precision),
/// --txl-save-attention-stats first: the fused attention's backward reads
/// the forward's row log-sum-exp and output.
void buildTxlBackwardPipeline(OpPassManager &pm,
                              bool saveAttentionStats = false,
                              StringRef function = "segment");
/// --txl-linear-nll-to-cpu's options for the CPU target whose products take
/// `products` operands (txlc, txl-cpu-pipeline): the training forms too, and
/// at bf16 the blocked sweep alone (tile-columns 0), whose product is the
/// BLAS call that txl-linalg-to-blas makes bf16, where the eval row tiles'
/// FMAs would compute it in f32.
ConvertLinearNllToCpuPassOptions cpuOutputOptions(Precision products);
/// txl -> linalg/tensor/arith/math: --txl-fuse-linear-nll, then
/// --txl-lower-rel-shift, --convert-txl-to-linalg, canonicalize, CSE,
/// --txl-fuse-elementwise.
/// `stridedAttention`: --convert-txl-to-linalg's strided-attention (the
/// CPU target, whose txl-linalg-to-blas lowers linalg.contract).
/// `cpuAttention` (the CPU target): --txl-rel-attention-to-cpu with these
/// options, every fused attention it can take becoming a call of the tiled
/// kernel. `cpuOutput` (the CPU target): --txl-linear-nll-to-cpu with these
/// options, every f32 txl.linear_nll (with `train`, txl.linear_nll_fwd and
/// txl.linear_nll_grad too) becoming a call of its kernel.
void buildTxlToLinalgPipeline(
    OpPassManager &pm, bool stridedAttention = false,
    const ConvertRelAttentionToCpuPassOptions *cpuAttention = nullptr,
    const ConvertLinearNllToCpuPassOptions *cpuOutput = nullptr);
/// linalg on tensors -> LLVM dialect with `txl_segment_forward` (and
/// `txl_segment_grad`, `txl_optimizer_update`, `txl_learning_rate`, ... for the
/// functions of those that exist). `products` bf16: the f32 products call
/// txl_rt_sgemm_bf16 (bf16 operands, f32 accumulation) instead of
/// cblas_sgemm (fp16: an error, the CPU has no fp16 product).
void buildLinalgToLLVMPipeline(OpPassManager &pm,
                               Precision products = Precision::F32);
/// All of the above.
void buildTxlCpuPipeline(OpPassManager &pm,
                         const TxlCpuPipelineOptions &options);

/// The GPU targets, so far: txl -> txl + gpu: --txl-rel-attention-to-gpu
/// (one flash-style kernel launch per attention layer, kernels in
/// gpu.module @txl_kernels); `attention` carries its options (the
/// negative-control tests' test-* hooks).
void buildTxlToGpuPipeline(
    OpPassManager &pm, const ConvertRelAttentionToGpuPassOptions &attention = {});
/// The GPU targets, linalg on tensors -> host code on memrefs whose every
/// computation is a gpu.launch_func of a kernel in @txl_kernels:
/// bufferization as on the CPU, --txl-prepare-gpu-host,
/// --convert-linalg-to-parallel-loops, --txl-parallel-loops-to-gpu;
/// `products` bf16 or fp16: the products' calls are
/// txl_device_sgemm_bf16 or txl_device_sgemm_f16 (`--precision=bf16`,
/// `--precision=fp16`); f32: txl_device_sgemm. `spreadReductions`:
/// txl-parallel-loops-to-gpu's spread-reductions (txlc
/// --gpu-spread-reductions). `fuseLoops`: before the kernels are made,
/// txl-fuse-parallel-loops merges adjacent elementwise scf.parallel loops
/// whose work-items see no other's writes (say a layer's key and value
/// appended to their windows, or the optimizer's parameter updates), so
/// that they are one launch (txlc --gpu-fuse-loops).
void buildGpuLinalgToKernelsPipeline(OpPassManager &pm,
                                     Precision products = Precision::F32,
                                     bool spreadReductions = true,
                                     bool fuseLoops = true);
/// The GPU targets' host code, once @txl_kernels is a gpu.binary -> LLVM
/// dialect: every host allocation through the generic allocation functions
/// (device memory, txl/device.h), gpu-to-llvm, and the packed entry points.
void buildGpuHostToLLVMPipeline(OpPassManager &pm);
/// The kernels' module (a module holding gpu.module @txl_kernels: gpu, scf,
/// memref, arith, math, and the bf16 kernels' nvgpu.mma.sync, lowered by
/// --txl-mma-to-nvvm, and nvgpu.ldmatrix, by upstream's
/// convert-nvgpu-to-nvvm) -> gpu.binary with the PTX of `chip` (ptx ISA
/// `ptxFeatures`, e.g. "+ptx80"), gpu-module-to-binary in format isa;
/// libdevice (math.exp is __nv_expf) from the CUDA toolkit at `cudaPath`.
void buildKernelsToPtxPipeline(OpPassManager &pm, llvm::StringRef chip,
                               llvm::StringRef ptxFeatures,
                               llvm::StringRef cudaPath);
/// The kernels' module -> gpu.module of LLVM dialect functions in the
/// OpenCL (SPIR-V) flavour: --txl-require-subgroup-size (every kernel
/// `intel_reqd_sub_group_size = 32`, without which gpu.shuffle does not
/// legalize), --txl-emulate-mma (the bf16 kernels' products as shuffles),
/// convert-gpu-to-llvm-spv with 64-bit indices, then the usual conversions
/// to LLVM.
void buildKernelsToLlvmSpvPipeline(OpPassManager &pm);

/// Registers the CPU pipelines (`txl-cpu-pipeline`, `txl-opt-pipeline`,
/// `txl-to-linalg-pipeline`, `txl-linalg-to-llvm-pipeline`) and the GPU
/// targets' stages as txlc runs them (`txl-to-gpu-pipeline`,
/// `txl-gpu-linalg-to-kernels-pipeline`, `txl-kernels-to-ptx-pipeline`,
/// `txl-kernels-to-llvm-spv-pipeline`, `txl-gpu-host-to-llvm-pipeline`).
void registerTxlPipelines();

} // namespace txl
} // namespace mlir

#endif // TXL_PIPELINES_PIPELINES_H

//===- Pipelines.cpp - txlc pass pipelines -----------------------*- C++
//-*-===//

#include "txl/Pipelines/Pipelines.h"

#include "txl/Autodiff/Passes.h"
#include "txl/Conversion/Passes.h"
#include "txl/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::txl;

// Passes that rewrite one function at a time run in a nested
// func.func pass manager, so that MLIR's threading compiles @segment,
// @segment_grad, the per-layer functions and the training functions in
// parallel; only the passes that add or change functions, their
// signatures or module-level symbols run on the module.

/// Bufferization as on the CPU: caller-allocated outputs, identity layouts
/// at function boundaries, ownership-based deallocation.
/// txl-emit-packed-entry's options: every model has a forward segment.
static EmitPackedEntryPassOptions packedEntries() {
  EmitPackedEntryPassOptions options;
  options.required = {"txl_segment_forward"}; // runtime.h
  return options;
}

static void addBufferization(OpPassManager &pm) {
  // Module: they change function signatures across call sites.
  pm.addPass(createResultsToDestinationsPass());
  // Upstream's one-shot-bufferize with function boundaries and identity
  // layouts at them, its argument attributes dropped in one step.
  pm.addPass(createOneShotBufferizeModulePass());
  // A private function's result that is its argument updated in place (the
  // key/value-cache windows of @decoder_layer_kv) becomes that argument at
  // the call, so the caller's write into its destination is a self-copy.
  pm.addPass(bufferization::createDropEquivalentBufferResultsPass());
  pm.addPass(createDropDestinationResultsPass());
  // Upstream's buffer-deallocation-pipeline, with txl-split-unique-deallocs
  // before the deallocs are lowered: the saved activations and gradients
  // the layer functions return are freed one by one, not through a helper
  // that checks every pair for aliasing.
  pm.addPass(memref::createExpandReallocPass(
      memref::ExpandReallocPassOptions{/*emitDeallocs=*/false}));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(bufferization::createOwnershipBasedBufferDeallocationPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createSplitUniqueDeallocsPass());
  pm.addPass(bufferization::createBufferDeallocationSimplificationPass());
  pm.addPass(createSplitUniqueDeallocsPass());
  pm.addPass(bufferization::createLowerDeallocationsPass());
  pm.addPass(createCSEPass());
  pm.addPass(createCanonicalizerPass());
  // Deallocation clones a returned buffer whose ownership is ambiguous;
  // clones become alloc + copy.
  pm.addPass(createConvertBufferizationToMemRefPass());
}

void mlir::txl::buildTxlOptPipeline(OpPassManager &pm,
                                    const TxlCpuPipelineOptions &options) {
  OpPassManager &fn = pm.nest<func::FuncOp>();
  if (options.fuseAttention)
    fn.addPass(createFuseRelAttentionPass());
  fn.addPass(createCanonicalizerPass());
  fn.addPass(createNarrowLinearSlicesPass());
  fn.addPass(createCanonicalizerPass());
  fn.addPass(createCSEPass());
}

void mlir::txl::buildTxlBackwardPipeline(OpPassManager &pm,
                                         bool saveAttentionStats,
                                         StringRef function) {
  if (saveAttentionStats)
    pm.nest<func::FuncOp>().addPass(createSaveAttentionStatsPass());
  // Module: it adds @segment_grad (with the runtime's loss scale argument)
  // and the per-layer _fwd/_grad functions.
  GenerateBackwardPassOptions backward;
  backward.lossScale = true;
  backward.function = function.str();
  backward.gradFunction = "segment_grad";
  backward.gradEntry = "txl_segment_grad"; // runtime.h
  pm.addPass(createGenerateBackwardPass(backward));
  // A separate training forward (@segment_train) is dead once differentiated.
  if (function != "segment")
    pm.addPass(createSymbolDCEPass());
  OpPassManager &fn = pm.nest<func::FuncOp>();
  fn.addPass(createAccumulateEmbeddingGradPass());
  fn.addPass(createCanonicalizerPass());
  fn.addPass(createNarrowLinearSlicesPass());
  fn.addPass(createCanonicalizerPass());
  fn.addPass(createCSEPass());
}

ConvertLinearNllToCpuPassOptions
mlir::txl::cpuOutputOptions(Precision products) {
  ConvertLinearNllToCpuPassOptions options;
  options.train = true;
  if (products == Precision::Bf16)
    options.tileColumns = 0;
  return options;
}

void mlir::txl::buildTxlToLinalgPipeline(
    OpPassManager &pm, bool stridedAttention,
    const ConvertRelAttentionToCpuPassOptions *cpuAttention,
    const ConvertLinearNllToCpuPassOptions *cpuOutput) {
  // After the backward, which differentiates txl.nll and txl.linear and
  // (for the decomposed form) txl.rel_shift as txl ops.
  pm.nest<func::FuncOp>().addPass(createFuseLinearNllPass());
  // Module: they add the kernel functions.
  if (cpuAttention)
    pm.addPass(createConvertRelAttentionToCpuPass(*cpuAttention));
  if (cpuOutput)
    pm.addPass(createConvertLinearNllToCpuPass(*cpuOutput));
  OpPassManager &fn = pm.nest<func::FuncOp>();
  fn.addPass(createLowerRelShiftPass());
  ConvertTxlToLinalgPassOptions toLinalg;
  toLinalg.stridedAttention = stridedAttention;
  fn.addPass(createConvertTxlToLinalgPass(toLinalg));
  fn.addPass(createCanonicalizerPass());
  fn.addPass(createCSEPass());
  fn.addPass(createFuseElementwisePass());
}

void mlir::txl::buildLinalgToLLVMPipeline(OpPassManager &pm,
                                          Precision products) {
  addBufferization(pm);
  pm.nest<func::FuncOp>().addPass(createFreeAfterLastUsePass());
  // Module: declares the runtime's txl_rt_sgemm (or txl_rt_sgemm_bf16),
  // and cblas_dgemm for f64.
  ConvertLinalgToBlasPassOptions blas;
  blas.precision = products;
  blas.runtimeSgemm = true;
  pm.addPass(createConvertLinalgToBlasPass(blas));
  // Module: adds the functions the strided copies move into.
  pm.addPass(createOutlineStridedCopiesPass());
  {
    OpPassManager &fn = pm.nest<func::FuncOp>();
    fn.addPass(createExpandStridedCopiesPass());
    fn.addPass(createConvertLinalgToLoopsPass());
    fn.addPass(createPolynomialExpPass());
    fn.addPass(createCanonicalizerPass());
    fn.addPass(createLowerAffinePass());
    fn.addPass(createSCFToControlFlowPass());
    fn.addPass(createLowerContiguousReshapesPass());
    fn.addPass(memref::createExpandStridedMetadataPass());
    fn.addPass(createLowerAffinePass());
  }
  // Module: the conversion to the LLVM dialect rewrites every function and
  // declares the runtime functions it calls (malloc, free, ...). The vector
  // ops (the tiled attention kernel's) first, while their memrefs are
  // still memrefs.
  pm.addPass(createConvertVectorToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  // A failed run-time check reports an error and exits (no SIGABRT).
  pm.addPass(createLowerHostAssertsPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  // No null pointer from a failed allocation reaches the generated code.
  pm.addPass(createCheckHostAllocationsPass());
  pm.addPass(createEmitPackedEntryPass(packedEntries()));
  pm.addPass(createCanonicalizerPass());
}

void mlir::txl::buildTxlToGpuPipeline(
    OpPassManager &pm, const ConvertRelAttentionToGpuPassOptions &attention) {
  // Module: it adds the gpu.module of kernels.
  pm.addPass(createConvertRelAttentionToGpuPass(attention));
  pm.addPass(createConvertLayerNormToGpuPass());
  // Each feed-forward's first bias into its ReLU (one launch fewer).
  pm.nest<func::FuncOp>().addPass(createFuseBiasReluPass());
  // The output layer's txl.linear_nll (txl-to-linalg runs the fusion again,
  // finding nothing left).
  pm.nest<func::FuncOp>().addPass(createFuseLinearNllPass());
  pm.addPass(createConvertLinearNllToGpuPass());
  // After the attention's backward and the output layer, which make bias
  // gradients of their own.
  pm.addPass(createConvertSumLeadingToGpuPass());
  pm.addPass(createConvertEmbeddingGradToGpuPass());
}

void mlir::txl::buildGpuLinalgToKernelsPipeline(OpPassManager &pm,
                                                Precision products,
                                                bool spreadReductions,
                                                bool fuseLoops) {
  addBufferization(pm);
  // Matrix products: cuBLAS / CLBlast calls on the device's queue.
  ConvertLinalgToBlasPassOptions blas;
  blas.device = true;
  blas.precision = products;
  pm.addPass(createConvertLinalgToBlasPass(blas));
  pm.addPass(createPrepareGpuHostPass());
  // Reductions inside the kernels, not host loops of launches.
  pm.nest<func::FuncOp>().addPass(createParallelDimsOuterPass());
  pm.nest<func::FuncOp>().addPass(createConvertLinalgToParallelLoopsPass());
  // The training functions' scf.forall (one work-item per part).
  pm.nest<func::FuncOp>().addPass(createForallToParallelLoopPass());
  // Adjacent elementwise loops as one kernel (one launch fewer each;
  // run-counts-opencl.test counts them).
  if (fuseLoops)
    pm.nest<func::FuncOp>().addPass(createFuseParallelLoopsPass());
  ParallelLoopsToGpuPassOptions loops;
  loops.spreadReductions = spreadReductions;
  pm.addPass(createParallelLoopsToGpuPass(loops));
  pm.nest<func::FuncOp>().addPass(createCanonicalizerPass());
  // Each layer's loops gave it its own copies of the same kernels.
  pm.addPass(createDeduplicateKernelsPass());
}

void mlir::txl::buildGpuHostToLLVMPipeline(OpPassManager &pm) {
  {
    OpPassManager &fn = pm.nest<func::FuncOp>();
    fn.addPass(createLowerAffinePass());
    fn.addPass(createSCFToControlFlowPass());
    // As on the CPU: expand_shape of strided buffers first (upstream
    // expand-strided-metadata cannot take them).
    fn.addPass(createLowerContiguousReshapesPass());
    fn.addPass(memref::createExpandStridedMetadataPass());
    fn.addPass(createLowerAffinePass());
  }
  // Every host allocation is device memory: the generic allocation
  // functions, which the runtime implements with the device's allocator
  // (txl/device.h); aligned_alloc, so that the host never offsets a buffer
  // handle to align it.
  FinalizeMemRefToLLVMConversionPassOptions memrefOptions;
  memrefOptions.useGenericFunctions = true;
  memrefOptions.useAlignedAlloc = true;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memrefOptions));
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  // A failed run-time check reports an error and exits (no SIGABRT).
  pm.addPass(createLowerHostAssertsPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  // gpu.launch_func on LLVM values; gpu.binary and the launches become
  // mgpu* calls when translated to LLVM IR.
  pm.addPass(createGpuToLLVMConversionPass());
  // Launches in host loops: one stack scope each.
  pm.addPass(createScopeLaunchStackPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createEmitPackedEntryPass(packedEntries()));
  pm.addPass(createCanonicalizerPass());
}

/// Adds the passes of `pipeline` (textual, as mlir-opt takes it) to `pm`;
/// used for the kernels' fixed pipelines of upstream passes.
static void addPipeline(OpPassManager &pm, const std::string &pipeline) {
  if (failed(parsePassPipeline(pipeline, pm, llvm::errs())))
    llvm::report_fatal_error("txlc: bad built-in pass pipeline: " +
                             llvm::Twine(pipeline));
}

void mlir::txl::buildKernelsToPtxPipeline(OpPassManager &pm,
                                          llvm::StringRef chip,
                                          llvm::StringRef ptxFeatures,
                                          llvm::StringRef cudaPath) {
  // The tensor-core kernels' warp-level products (no-op without them)
  // and warpgroup products (wgmma on sm_90a, the only architecture with it).
  MmaToNvvmPassOptions mmaOptions;
  mmaOptions.wgmma = chip == "sm_90a";
  pm.nest<gpu::GPUModuleOp>().addPass(createMmaToNvvmPass(mmaOptions));
  // Every lowering is nested in the gpu.module: on a module that also
  // holds host code (txl-opt) it lowers the kernels only. Upstream's
  // convert-nvgpu-to-nvvm lowers what txl-mma-to-nvvm leaves of the nvgpu
  // dialect: nvgpu.ldmatrix (the attention forward's B fragments of X).
  addPipeline(pm,
              "gpu.module(convert-nvgpu-to-nvvm,convert-scf-to-cf,"
              "expand-strided-metadata),"
              "nvvm-attach-target{O=3 chip=" +
                  chip.str() + " features=" + ptxFeatures.str() +
                  "},gpu.module(lower-affine,convert-arith-to-llvm,"
                  "convert-index-to-llvm,canonicalize,cse,"
                  "strip-debuginfo,convert-gpu-to-nvvm,txl-extern-"
                  "dynamic-shared,"
                  "llvm.func(llvm-optimize-for-nvvm-target),canonicalize,cse,"
                  "reconcile-unrealized-casts),"
                  "gpu-module-to-binary{format=isa toolkit=" +
                  cudaPath.str() + "}");
}

void mlir::txl::buildKernelsToLlvmSpvPipeline(OpPassManager &pm) {
  // Subgroups of 32 (the shuffles legalize only then), and the tensor-core
  // kernels' warp-level products as shuffles (no-op without them).
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(createRequireSubgroupSizePass());
  kernels.addPass(createEmulateMmaPass());
  addPipeline(pm, "gpu.module(canonicalize,arith-expand,"
                  "expand-strided-metadata,lower-affine,canonicalize,"
                  "convert-gpu-to-llvm-spv{use-64bit-index=true}),"
                  "convert-scf-to-cf,convert-cf-to-llvm,convert-vector-to-llvm,"
                  "convert-arith-to-llvm,"
                  "convert-math-to-llvm,convert-index-to-llvm,"
                  "finalize-memref-to-llvm,reconcile-unrealized-casts");
}

void mlir::txl::buildTxlCpuPipeline(OpPassManager &pm,
                                    const TxlCpuPipelineOptions &options) {
  buildTxlOptPipeline(pm, options);
  if (options.generateBackward)
    buildTxlBackwardPipeline(pm, /*saveAttentionStats=*/true);
  ConvertRelAttentionToCpuPassOptions cpuAttention;
  ConvertLinearNllToCpuPassOptions cpuOutput =
      cpuOutputOptions(options.precision);
  buildTxlToLinalgPipeline(pm, /*stridedAttention=*/true,
                           options.tiledAttention ? &cpuAttention : nullptr,
                           options.outputKernel ? &cpuOutput : nullptr);
  buildLinalgToLLVMPipeline(pm, options.precision);
}

void mlir::txl::registerTxlPipelines() {
  PassPipelineRegistration<TxlCpuPipelineOptions>(
      "txl-cpu-pipeline",
      "Lower a txl segment to the LLVM dialect for the CPU (txl_rt_sgemm "
      "products, packed entry point)",
      buildTxlCpuPipeline);
  PassPipelineRegistration<TxlCpuPipelineOptions>(
      "txl-opt-pipeline", "The txl-level passes (fusion, rel_shift lowering)",
      buildTxlOptPipeline);
  PassPipelineRegistration<>(
      "txl-to-linalg-pipeline", "Lower txl ops to linalg on tensors",
      [](OpPassManager &pm) { buildTxlToLinalgPipeline(pm); });
  PassPipelineRegistration<>(
      "txl-linalg-to-llvm-pipeline",
      "Bufferize, call BLAS for products, and lower to the LLVM dialect",
      [](OpPassManager &pm) { buildLinalgToLLVMPipeline(pm); });

  // The GPU targets' stages, in txlc's order: txl-to-gpu, then
  // txl-to-linalg, txl-gpu-linalg-to-kernels, the kernels to PTX or to the
  // LLVM dialect of SPIR-V (txl-translate makes the OpenCL image), and the
  // host code to LLVM once @txl_kernels is a gpu.binary.
  PassPipelineRegistration<TxlGpuPipelineOptions>(
      "txl-to-gpu-pipeline",
      "GPU targets: the fused attention, layer norm and embedding gradients "
      "as kernels in gpu.module @txl_kernels, launched from the host code",
      [](OpPassManager &pm, const TxlGpuPipelineOptions &options) {
        ConvertRelAttentionToGpuPassOptions attention;
        attention.precision = options.precision;
        attention.keyParts = options.keyParts;
        buildTxlToGpuPipeline(pm, attention);
      });
  PassPipelineRegistration<TxlGpuPipelineOptions>(
      "txl-gpu-linalg-to-kernels-pipeline",
      "GPU targets: bufferize, the products as txl_device_sgemm calls, and a "
      "kernel for every other loop nest",
      [](OpPassManager &pm, const TxlGpuPipelineOptions &options) {
        buildGpuLinalgToKernelsPipeline(
            pm, options.precision, options.spreadReductions, options.fuseLoops);
      });
  PassPipelineRegistration<TxlPtxPipelineOptions>(
      "txl-kernels-to-ptx-pipeline",
      "CUDA: gpu.module @txl_kernels to a gpu.binary of PTX (NVVM, libdevice)",
      [](OpPassManager &pm, const TxlPtxPipelineOptions &options) {
        buildKernelsToPtxPipeline(pm, options.chip, options.features,
                                  options.cudaPath);
      });
  PassPipelineRegistration<>(
      "txl-kernels-to-llvm-spv-pipeline",
      "OpenCL: gpu.module @txl_kernels to LLVM dialect functions in the "
      "SPIR-V flavour (the tensor-core products emulated)",
      buildKernelsToLlvmSpvPipeline);
  PassPipelineRegistration<>(
      "txl-gpu-host-to-llvm-pipeline",
      "GPU targets: the host code, once @txl_kernels is a gpu.binary, to the "
      "LLVM dialect with mgpu* launches and the packed entry points",
      buildGpuHostToLLVMPipeline);
}

//===- GpuKernels.h - The kernels' gpu.module as PTX or SPIR-V ---*- C++
//-*-===//
//
// The GPU targets compile one gpu.module (`@txl_kernels`, written by the
// txl-*-to-gpu passes) twice: through NVVM and LLVM's NVPTX backend to PTX
// (`cuda`), and through convert-gpu-to-llvm-spv and LLVM's SPIR-V backend
// to a SPIR-V module (`opencl`). Both start from the same gpu.func ops.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_TARGET_GPUKERNELS_H
#define TXL_TARGET_GPUKERNELS_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include "llvm/ADT/StringMap.h"

#include <string>
#include <vector>

namespace mlir {
namespace txl {

/// The most gradients one kernel of @grad_squared_norm reads (the runtime's
/// TXL_NORM_TENSORS_PER_KERNEL, txl/device.h: a kernel's parameters stay
/// within sm_80's 4352 bytes).
int64_t normTensorsPerKernel();
/// The sums of the parts @grad_squared_norm leaves at the end of its
/// partials for the host (TXL_NORM_SUMS, txl/device.h).
int64_t normSums();

/// The name of the gpu.module holding the generated kernels.
inline constexpr llvm::StringLiteral kKernelModuleName = "txl_kernels";

/// The PTX ISA the kernels for `chip` are emitted as (NVPTX target
/// features): 8.0 for sm_8x and sm_9x, the oldest that covers sm_90a;
/// nothing for newer architectures, for which LLVM's NVPTX backend then
/// picks the oldest PTX ISA that has them (8.6 for sm_100, 8.7 for sm_120).
llvm::StringRef ptxFeatures(llvm::StringRef chip);

/// A new module holding a copy of `module`'s @txl_kernels gpu.module, or
/// null (with an error on `module`) when it has none.
OwningOpRef<ModuleOp> cloneKernelModule(ModuleOp module);

/// The PTX text of the (single) gpu.binary object in `module`, after
/// buildKernelsToPtxPipeline (Pipelines.h).
FailureOr<std::string> getPtx(ModuleOp module);

/// The gpu.module of `module`, after buildKernelsToLlvmSpvPipeline
/// (Pipelines.h), translated to LLVM IR for spirv64-unknown-unknown,
/// optimized at -O2 (without it spirv-val rejects LLVM's SPIR-V) and
/// emitted by LLVM's SPIR-V backend as a binary SPIR-V module, or as LLVM's
/// SPIR-V assembly when `assembly`.
FailureOr<std::string> emitSpirv(ModuleOp module, bool assembly = false);

/// Each kernel's SPIR-V module alone, by kernel name: emitSpirv's module
/// split by splitSpirvKernels (SpirvKernels.h). A kernel's bytes depend on
/// that kernel only (and the module's capabilities), so the OpenCL program
/// cache shares it between images.
FailureOr<llvm::StringMap<std::string>> emitSpirvPerKernel(ModuleOp module);

/// One kernel of an OpenCL kernel image: its name and its encoded argument
/// table (u32 count, then per argument u8 kind and u32 bytes).
struct OpenCLKernelEntry {
  std::string name;
  std::string args;
};
using OpenCLKernelTable = std::vector<OpenCLKernelEntry>;

/// The argument table of each kernel of `module`'s @txl_kernels, as the
/// SPIR-V kernel takes them: expanded memref descriptors (two buffers, then
/// i64 offset, sizes and strides), index as i64, i32, f32, then the
/// workgroup attributions as workgroup memory of their size (bf16 and f16
/// tiles at 4 bytes per element: txl-emulate-mma makes them f32 tiles).
/// Call it on the gpu dialect form, before buildKernelsToLlvmSpvPipeline.
/// Fails (with an error on the kernel) for an argument type the OpenCL
/// runtime cannot set.
FailureOr<OpenCLKernelTable> buildOpenCLKernelTable(ModuleOp module);

/// The image mgpuModuleLoad takes on the OpenCL backend (txl/device.h):
/// "TXLCLIMG", version 2, and per kernel of `table` its name, arguments and
/// SPIR-V module from `spirv` (emitSpirvPerKernel). Fails (at `loc`) when
/// `spirv` has no module for a kernel of the table.
FailureOr<std::string>
buildOpenCLImage(Location loc, const OpenCLKernelTable &table,
                 const llvm::StringMap<std::string> &spirv);

/// Replaces `module`'s gpu.module @txl_kernels by a gpu.binary of the same
/// name holding `image` (format bin) for the OpenCL target: what the
/// translation to LLVM IR embeds and loads with mgpuModuleLoad.
void replaceKernelsWithOpenCLImage(ModuleOp module, llvm::StringRef image);

/// The PTX of the kernels for one CUDA architecture ("sm_90a").
struct CudaArchPtx {
  std::string arch;
  std::string ptx;
};

/// The fatbin of a --target=cuda executable: `ptxas -arch=<arch>` of each
/// PTX (without -c, so that an unresolved libdevice function fails) as that
/// architecture's cubin, plus the PTX of the newest architecture without an
/// `a`/`f` suffix (those PTX only run on their own GPU), which the driver
/// compiles for GPUs newer than every cubin; bundled by the toolkit's
/// `fatbinary`. `cudaPath` is the toolkit's root. Fails with an error on
/// `loc` naming the tool and its output when a tool is missing or fails.
FailureOr<std::string> buildCudaFatbin(Location loc,
                                       ArrayRef<CudaArchPtx> archs,
                                       llvm::StringRef cudaPath);

/// Replaces `module`'s gpu.module @txl_kernels by a gpu.binary of the same
/// name holding `fatbin` (format fatbin, NVVM target of `chip`): embedded
/// and loaded with mgpuModuleLoad (cuModuleLoadDataEx takes a fatbin).
void replaceKernelsWithCudaFatbin(ModuleOp module, llvm::StringRef fatbin,
                                  llvm::StringRef chip);

} // namespace txl
} // namespace mlir

#endif // TXL_TARGET_GPUKERNELS_H

/*===- device.h - The device ABI of txlc's GPU targets -------------*- C -*-===*
 *
 * What code compiled for --target=cuda or --target=opencl calls, and what a
 * host program (a session, a test) calls to choose the device first. The
 * mgpu* functions keep the names and signatures of MLIR's GPU runtime ABI
 * (what gpu-to-llvm and gpu.binary's translation emit), implemented here
 * over the runtime's device layer (txl/rt/device/Device.h) for both backends.
 *
 * Semantics shared by both backends:
 * - One device and one in-order queue per process: every "stream" is that
 *   queue. mgpuStreamSynchronize does not wait: nothing on the host reads
 *   device memory inside a segment, and the queue keeps the order; the
 *   runtime waits once, when it copies results back (txl_device_sync).
 * - Buffers are opaque handles (CUdeviceptr, cl_mem); compiled code keeps
 *   element offsets beside them (memref descriptors).
 * - Module images: a CUDA fatbin, cubin or PTX (loaded with
 *   cuModuleLoadDataEx), or an OpenCL kernel image:
 *     "TXLCLIMG", u32 version (2), u32 kernel count, per kernel: u32 name
 *     length, the name, u32 argument count, per argument: u8 kind
 *     (0 buffer, 1 i64, 2 i32, 3 f32, 4 workgroup memory), u32 bytes;
 *     then u64 SPIR-V size and a SPIR-V module of that kernel alone (all
 *     little endian).
 *   OpenCL needs each argument's size, which the host code does not pass;
 *   workgroup-memory arguments (the kernels' workgroup attributions) are
 *   set by the runtime, after the host's arguments. Each kernel's program
 *   is built (or taken from the program cache) on its first
 *   mgpuModuleGetFunction, so a run builds only the kernels it launches.
 * - Modules load lazily: mgpuModuleLoad (called from a global constructor,
 *   before main) only records the image; the first mgpuModuleGetFunction
 *   loads it on the open device.
 * - A failure inside an mgpu* call (which returns no status) prints one
 *   line "error: <what failed>" to stderr and exits with status 2.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TXL_DEVICE_H
#define TXL_DEVICE_H

#include "txl/runtime.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The OpenCL kernel image (above): its magic, version and argument kinds,
 * shared by the compiler that writes it and the runtime that reads it. */
#define TXL_OPENCL_IMAGE_MAGIC "TXLCLIMG"
#define TXL_OPENCL_IMAGE_VERSION 2

/* The GPU form of @grad_squared_norm (TrainingBuilder.h) sums the squares of
 * at most this many gradients per kernel, so that a kernel's parameters stay
 * within sm_80's 4352 bytes (a 1-D memref descriptor is 40 bytes); group g
 * of ceil(T / this) writes its parts to partials[g * parts + p]. */
#define TXL_NORM_TENSORS_PER_KERNEL 64
/* ... and then sums those parts into the last TXL_NORM_SUMS entries of
 * partials: sum c adds parts c, c + TXL_NORM_SUMS, ... (in a fixed order),
 * so that the host reads these sums only. */
#define TXL_NORM_SUMS 256
typedef enum txl_kernel_arg_kind {
  TXL_KERNEL_ARG_BUFFER = 0, /* a cl_mem */
  TXL_KERNEL_ARG_I64 = 1,
  TXL_KERNEL_ARG_I32 = 2,
  TXL_KERNEL_ARG_F32 = 3,
  TXL_KERNEL_ARG_LOCAL = 4, /* workgroup memory of the given size */
} txl_kernel_arg_kind_t;

/* Opens device `ordinal` of `backend` (a txl_backend_t: TXL_BACKEND_CUDA or
 * TXL_BACKEND_OPENCL) for the mgpu* calls. Returns 0, or TXL_UNAVAILABLE (5)
 * / TXL_INVALID_ARGUMENT with the one-line reason in `error` (e.g. "no CUDA
 * driver: dlopen(libcuda.so.1) failed: ..."). */
int txl_device_open(int32_t backend, int ordinal, char *error,
                    size_t error_size);
/* The open device, e.g. "AMD EPYC (Intel(R) OpenCL, OpenCL 3.0, 23.4 GiB)",
 * or "" when none is open. */
const char *txl_device_description(void);
/* Waits until the device's queue is empty. */
void txl_device_sync(void);
/* The open device's queue as its API names it (CUDA: the CUstream every
 * operation is enqueued on, for NCCL's collectives to join), or NULL where
 * the backend has none to share (OpenCL) or no device is open. */
void *txl_device_native_stream(void);
/* Copies between host memory and a buffer (`offset` in bytes). */
void txl_device_write(void *buffer, size_t offset, const void *host,
                      size_t bytes);
void txl_device_read(void *host, const void *buffer, size_t offset,
                     size_t bytes);
/* Device memory in bytes: `total`; `free`, as the driver reports it
 * (CUDA), or total minus what this process holds through the ABI where
 * the API cannot tell (OpenCL); `in_use`, what the ABI's allocations hold
 * now; `peak`, the most they held at once since the device was opened.
 * All 0 when no device is open. Any pointer may be NULL. */
void txl_device_memory(size_t *total, size_t *free, size_t *in_use,
                       size_t *peak);
/* Dry runs: between txl_device_begin_dry_run and txl_device_end_dry_run
 * the ABI runs nothing on the device and counts the memory the host code
 * asks for. mgpuMemAlloc (and the generic allocation functions) return a
 * handle that no device memory backs, counted in `in_use` and `peak` as a
 * buffer of its size, and mgpuMemFree releases one; copies into buffers,
 * fills, launches and matrix products do nothing; copies and reads out of
 * buffers write zeros to the host; modules are not loaded. Compiled code
 * run in between allocates what a real run of the same shapes allocates,
 * in the same order, so the peak is what that run needs (the session's
 * device-memory check: txl_session_check_device_memory). A real buffer
 * passed in is only read through those calls, so it stays as it was.
 * Not reentrant; begin with no dry run open. txl_device_end_dry_run frees
 * the dry run's handles still held and returns the most bytes held at once
 * (the real buffers held at the begin and the dry run's) since the begin. */
void txl_device_begin_dry_run(void);
size_t txl_device_end_dry_run(void);
/* min(count, bound), or `bound` in a dry run: compiled host code passes a
 * count that a kernel computed (which a dry run reads as 0) through it with
 * the most it can be (the adaptive softmax's tokens of a cluster, at most
 * the segment's), so that a dry run allocates for the largest count. */
int64_t txl_device_count_bound(int64_t count, int64_t bound);
/* Called by compiled host code right before a launch of a generic kernel
 * (txl-parallel-loops-to-gpu) whose work-items run loops over device
 * memory: the most loop steps one work-item runs, -1 when the host code
 * cannot tell. The next launch on this thread takes it for the counters'
 * serial launches (txl_device_counters_t); with TXL_PROFILE=counts, the
 * first serial launch of each kernel prints a `counts: serial kernel`
 * line naming it. */
void txl_device_serial_steps(int64_t steps);
/* What the open device has been asked to do since it was opened (dry runs
 * count nothing): kernel launches; library calls (matrix products);
 * copies from the host and to it, with their bytes; copies within the
 * device; host synchronisations (the host waited for the device's queue:
 * txl_device_sync, and every copy to the host, which waits for it first);
 * buffers allocated and freed. With TXL_PROFILE=counts in the
 * environment, the session prints the difference per segment and per
 * optimizer step (docs/gpu.md). */
typedef struct {
  uint64_t launches;
  uint64_t library_calls;
  uint64_t uploads, upload_bytes;
  uint64_t downloads, download_bytes;
  uint64_t device_copies;
  uint64_t syncs;
  uint64_t allocations, frees;
  /* Launches whose work-items each run more than 64 loop steps over device
   * memory (or a number the host code cannot tell) on a grid of fewer than
   * 132 workgroups (an H100/H200's multiprocessors): the kernels that
   * leave a GPU idle while a few work-items walk a loop
   * (txl_device_serial_steps). */
  uint64_t serial_launches;
  /* The work asked for, as bench/gpu/cost_model.py reads it: the
   * work-items of every launch (grid size times workgroup size, summed),
   * and the matrix products' floating-point operations (2 m n k per
   * matrix of a batch) and the bytes their operands and results take in
   * device memory (f32: A, B and C once each, C twice where beta != 0). */
  uint64_t work_items;
  uint64_t product_flops, product_bytes;
} txl_device_counters_t;
/* The open device's counters (all 0 when none is open). */
void txl_device_counters(txl_device_counters_t *out);

/* Frees every module and closes the device. With TXL_PROFILE=1 in the
 * environment (each launch and matrix product then waits for the queue
 * before and after it), first prints to stderr the wall time, launches
 * and time per launch of each kernel, longest total first. */
void txl_device_close(void);

/* One strided-batched f32 matrix product, row-major (as
 * `txl-linalg-to-blas{device=true}` emits it): for each b < batch,
 * C_b = alpha op(A_b) op(B_b) + beta C_b, with op(A_b) m x k, op(B_b)
 * k x n and C_b m x n, op a transpose when trans_a / trans_b is nonzero.
 * Each matrix is a buffer handle with, in elements, the offset of the
 * first matrix, the row stride (ld) and the batch stride. Enqueued on the
 * queue through cuBLAS or CLBlast (txl/rt/device/Gemm.h); an empty C is
 * skipped. A failure prints one line and exits with status 2, like the mgpu*
 * calls. */
void txl_device_sgemm(int32_t trans_a, int32_t trans_b, int64_t m, int64_t n,
                      int64_t k, float alpha, void *a, int64_t a_offset,
                      int64_t lda, int64_t a_stride, void *b, int64_t b_offset,
                      int64_t ldb, int64_t b_stride, float beta, void *c,
                      int64_t c_offset, int64_t ldc, int64_t c_stride,
                      int64_t batch);

/* txl_device_sgemm for `--precision=bf16`: the same product, same
 * arguments, on f32 buffers, with A and B rounded to bf16 for tensor cores
 * and f32 accumulation (cuBLAS CUBLAS_COMPUTE_32F_FAST_16BF). CLBlast has
 * no such mode: on OpenCL it is txl_device_sgemm. */
void txl_device_sgemm_bf16(int32_t trans_a, int32_t trans_b, int64_t m,
                           int64_t n, int64_t k, float alpha, void *a,
                           int64_t a_offset, int64_t lda, int64_t a_stride,
                           void *b, int64_t b_offset, int64_t ldb,
                           int64_t b_stride, float beta, void *c,
                           int64_t c_offset, int64_t ldc, int64_t c_stride,
                           int64_t batch);

/* txl_device_sgemm for `--precision=fp16`: as txl_device_sgemm_bf16 with A
 * and B rounded to f16 (cuBLAS CUBLAS_COMPUTE_32F_FAST_16F); on OpenCL it
 * is txl_device_sgemm. */
void txl_device_sgemm_f16(int32_t trans_a, int32_t trans_b, int64_t m,
                          int64_t n, int64_t k, float alpha, void *a,
                          int64_t a_offset, int64_t lda, int64_t a_stride,
                          void *b, int64_t b_offset, int64_t ldb,
                          int64_t b_stride, float beta, void *c,
                          int64_t c_offset, int64_t ldc, int64_t c_stride,
                          int64_t batch);

/* The number of parts (grid z) of a launch of the rel_attention
 * kernel: `workgroups` its unsplit grid, `resident` its workgroups per
 * compute unit, `key_tiles` its klen in tiles of 32 keys; the open device's
 * compute units decide (txl::rt::attentionKeyParts). Called by compiled
 * host code before each such launch. */
int64_t txl_device_attention_parts(int64_t workgroups, int64_t resident,
                                   int64_t key_tiles);

/* MLIR's GPU runtime ABI. */
void *mgpuModuleLoad(void *data, size_t size);
void *mgpuModuleLoadJIT(void *data, int opt_level);
void mgpuModuleUnload(void *module);
void *mgpuModuleGetFunction(void *module, const char *name);
void mgpuLaunchKernel(void *function, intptr_t grid_x, intptr_t grid_y,
                      intptr_t grid_z, intptr_t block_x, intptr_t block_y,
                      intptr_t block_z, int32_t shared_bytes, void *stream,
                      void **params, void **extra, size_t param_count);
void *mgpuStreamCreate(void);
void mgpuStreamDestroy(void *stream);
void mgpuStreamSynchronize(void *stream);
void *mgpuMemAlloc(uint64_t bytes, void *stream, bool host_shared);
void mgpuMemFree(void *buffer, void *stream);
/* Host-to-device, device-to-host or device-to-device, by which of the two
 * pointers are buffers of the open device. */
void mgpuMemcpy(void *dst, void *src, size_t bytes, void *stream);
void mgpuMemset32(void *dst, unsigned int value, size_t count, void *stream);

/* finalize-memref-to-llvm's generic allocation functions (use-generic-
 * functions): every allocation of GPU-target host code is a device buffer. */
void *_mlir_memref_to_llvm_alloc(size_t bytes);
void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment, size_t bytes);
void _mlir_memref_to_llvm_free(void *buffer);

#ifdef __cplusplus
}
#endif

#endif /* TXL_DEVICE_H */

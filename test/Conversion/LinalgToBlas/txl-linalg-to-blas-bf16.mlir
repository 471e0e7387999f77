// RUN: txl-opt %s --split-input-file --txl-linalg-to-blas=precision=bf16 \
// RUN:   | FileCheck %s --implicit-check-not=@cblas_sgemm
// RUN: txl-opt %s --split-input-file --txl-linalg-to-blas \
// RUN:   | FileCheck %s --check-prefix=F32 --implicit-check-not=@txl_rt_sgemm_bf16
// RUN: txl-opt %s --split-input-file --txl-linalg-to-blas=runtime-sgemm=true \
// RUN:   | FileCheck %s --check-prefix=RT --implicit-check-not=@cblas_sgemm
// RUN: txl-opt %s --split-input-file "--txl-linalg-to-blas=runtime-sgemm=true precision=bf16" \
// RUN:   | FileCheck %s --implicit-check-not=@cblas_sgemm '--implicit-check-not=@txl_rt_sgemm('
// RUN: not txl-opt %s --split-input-file --txl-linalg-to-blas=precision=fp16 2>&1 \
// RUN:   | FileCheck %s --check-prefix=F16
// RUN: not txl-opt %s --split-input-file --txl-linalg-to-blas=precision=f16 2>&1 \
// RUN:   | FileCheck %s --check-prefix=SPELLING

// --precision=bf16 on the CPU: every f32 product calls the runtime's
// txl_rt_sgemm_bf16 (txl/rt/device/Bf16Gemm.h), cblas_sgemm's signature and
// arguments (bf16 operands, f32 accumulation); f64 products stay
// cblas_dgemm. Without precision=bf16 the same products call cblas_sgemm
// (the negative control: F32). The CPU has no fp16 product (F16), and the
// precision is spelled as txlc's --precision (f16 is MLIR's type: SPELLING).
// With runtime-sgemm (the CPU pipeline's setting) the f32 products call the
// runtime's txl_rt_sgemm (txl/rt/device/HostGemm.h), same arguments, and
// f64 ones still cblas_dgemm (RT); precision=bf16 takes precedence.
// RT-LABEL: func.func private @txl_rt_sgemm(i32, i32, i32, i32, i32, i32, f32, !llvm.ptr, i32, !llvm.ptr, i32, f32, !llvm.ptr, i32)
// RT-LABEL: func.func @matmul
// RT: func.call @txl_rt_sgemm(
// CHECK-LABEL: func.func private @txl_rt_sgemm_bf16(i32, i32, i32, i32, i32, i32, f32, !llvm.ptr, i32, !llvm.ptr, i32, f32, !llvm.ptr, i32)
// CHECK-LABEL: func.func @matmul
// CHECK: scf.if
// CHECK: func.call @txl_rt_sgemm_bf16(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) : (i32, i32, i32, i32, i32, i32, f32, !llvm.ptr, i32, !llvm.ptr, i32, f32, !llvm.ptr, i32) -> ()
// F32-LABEL: func.func @matmul
// F32: func.call @cblas_sgemm(
// F16: error: txl-linalg-to-blas: fp16 products need device=true (the CPU's products are f32 or bf16)
// SPELLING: Cannot find option named 'f16'!
func.func @matmul(%a: memref<?x32xf32>, %b: memref<32x64xf32>, %c: memref<?x64xf32>) {
  linalg.matmul ins(%a, %b : memref<?x32xf32>, memref<32x64xf32>)
                outs(%c : memref<?x64xf32>)
  return
}

// -----

// A batched product: the loop over the batch calls the bf16 product.
// CHECK-LABEL: func.func @batch
// CHECK: scf.for
// CHECK: func.call @txl_rt_sgemm_bf16(
// F32-LABEL: func.func @batch
// F32: func.call @cblas_sgemm(
// RT-LABEL: func.func @batch
// RT: func.call @txl_rt_sgemm(
func.func @batch(%a: memref<4x8x16xf32>, %b: memref<4x16x8xf32>, %c: memref<4x8x8xf32>) {
  linalg.batch_matmul ins(%a, %b : memref<4x8x16xf32>, memref<4x16x8xf32>)
                      outs(%c : memref<4x8x8xf32>)
  return
}

// -----

// f64 (the gradient checks' modules) stays cblas_dgemm.
// CHECK-LABEL: func.func private @cblas_dgemm(
// CHECK-LABEL: func.func @matmul_f64
// CHECK: func.call @cblas_dgemm(
// F32-LABEL: func.func @matmul_f64
// F32: func.call @cblas_dgemm(
// RT-LABEL: func.func @matmul_f64
// RT: func.call @cblas_dgemm(
func.func @matmul_f64(%a: memref<8x16xf64>, %b: memref<16x8xf64>, %c: memref<8x8xf64>) {
  linalg.matmul ins(%a, %b : memref<8x16xf64>, memref<16x8xf64>)
                outs(%c : memref<8x8xf64>)
  return
}

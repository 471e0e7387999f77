// RUN: txl-opt %s --split-input-file --txl-linalg-to-blas=device=true --verify-diagnostics | FileCheck %s --implicit-check-not=cblas_
// RUN: txl-opt %s --split-input-file --txl-linalg-to-blas="device=true precision=bf16" --verify-diagnostics \
// RUN:   | FileCheck %s --check-prefix=BF16 '--implicit-check-not=@txl_device_sgemm('
// RUN: txl-opt %s --split-input-file --txl-linalg-to-blas="device=true precision=fp16" --verify-diagnostics \
// RUN:   | FileCheck %s --check-prefix=F16 '--implicit-check-not=@txl_device_sgemm('

// precision=bf16 (--precision=bf16): the same calls, to txl_device_sgemm_bf16.
// BF16: func.func private @txl_device_sgemm_bf16(i32, i32, i64, i64, i64, f32, !llvm.ptr, i64, i64, i64, !llvm.ptr, i64, i64, i64, f32, !llvm.ptr, i64, i64, i64, i64)
// BF16: call @txl_device_sgemm_bf16(
// precision=fp16 (--precision=fp16): to txl_device_sgemm_f16.
// F16: func.func private @txl_device_sgemm_f16(i32, i32, i64, i64, i64, f32, !llvm.ptr, i64, i64, i64, !llvm.ptr, i64, i64, i64, f32, !llvm.ptr, i64, i64, i64, i64)
// F16: call @txl_device_sgemm_f16(

// The GPU targets: a product on device buffers becomes one call of the
// runtime's txl_device_sgemm (txl/device.h), row-major like cblas. Each
// operand is its buffer handle (the aligned pointer as it is: host code
// never offsets a handle, so no getelementptr) with its element offset,
// row stride (at least 1) and batch stride (0 for a plain matmul). A zero
// fill of a fresh output that only the product reads is folded into
// beta = 0; the call is unconditional (the runtime skips empty products).
// CHECK-LABEL: func.func private @txl_device_sgemm(i32, i32, i64, i64, i64, f32, !llvm.ptr, i64, i64, i64, !llvm.ptr, i64, i64, i64, f32, !llvm.ptr, i64, i64, i64, i64)
// CHECK-LABEL: func.func @matmul_nt
// CHECK-SAME: (%[[A:[^:]+]]: memref<?x32xf32>, %[[B:[^:]+]]: memref<64x32xf32>, %[[N:.+]]: index)
// CHECK: %[[C:.+]] = memref.alloc(%[[N]]) : memref<?x64xf32>
// CHECK-NOT: linalg.fill
// CHECK-DAG: %[[NOTRANS:.+]] = arith.constant 0 : i32
// CHECK-DAG: %[[TRANS:.+]] = arith.constant 1 : i32
// CHECK: %{{[^,]+}}, %[[OFFA:[^,]+]], %[[SA:[^:]+]]:2, %[[STA:[^:]+]]:2 = memref.extract_strided_metadata %[[A]]
// CHECK-NEXT: %[[IA:.+]] = memref.extract_aligned_pointer_as_index %[[A]]
// CHECK-NEXT: %[[IA64:.+]] = arith.index_cast %[[IA]] : index to i64
// CHECK-NEXT: %[[HA:.+]] = llvm.inttoptr %[[IA64]] : i64 to !llvm.ptr
// CHECK-NEXT: %[[OA:.+]] = arith.index_cast %[[OFFA]] : index to i64
// CHECK: %[[LDA:.+]] = arith.maxui %[[STA]]#0, %{{.+}} : index
// CHECK-NEXT: %[[LDA64:.+]] = arith.index_cast %[[LDA]] : index to i64
// CHECK-NEXT: %[[ZERO:.+]] = arith.constant 0 : i64
// CHECK: %[[HB:.+]] = llvm.inttoptr
// CHECK: %{{[^,]+}}, %{{[^,]+}}, %[[SC:[^:]+]]:2, %{{[^:]+}}:2 = memref.extract_strided_metadata %[[C]]
// CHECK: %[[HC:.+]] = llvm.inttoptr
// CHECK: %[[M:.+]] = arith.index_cast %[[SC]]#0 : index to i64
// CHECK-NEXT: %[[NN:.+]] = arith.index_cast %[[SC]]#1 : index to i64
// CHECK-NEXT: %[[K:.+]] = arith.index_cast %[[SA]]#1 : index to i64
// CHECK-DAG: %[[ONE:.+]] = arith.constant 1.000000e+00 : f32
// CHECK-DAG: %[[BETA:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[BATCH:.+]] = arith.constant 1 : i64
// CHECK: call @txl_device_sgemm(%[[NOTRANS]], %[[TRANS]], %[[M]], %[[NN]], %[[K]], %[[ONE]], %[[HA]], %[[OA]], %[[LDA64]], %[[ZERO]], %[[HB]], %{{.+}}, %{{.+}}, %{{.+}}, %[[BETA]], %[[HC]], %{{.+}}, %{{.+}}, %{{.+}}, %[[BATCH]])
// CHECK-NOT: linalg.matmul
// CHECK: return %[[C]]
func.func @matmul_nt(%a: memref<?x32xf32>, %b: memref<64x32xf32>, %n: index) -> memref<?x64xf32> {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc(%n) : memref<?x64xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<?x64xf32>)
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
    ins(%a, %b : memref<?x32xf32>, memref<64x32xf32>) outs(%c : memref<?x64xf32>)
  return %c : memref<?x64xf32>
}

// -----

// A batch_matmul is one strided-batched call: the batch strides come from
// each operand's outer stride (here of strided views with offsets), the
// batch count from C; accumulating into C is beta = 1. A transposed A takes
// k from its middle dimension.
// CHECK-LABEL: func.func @batch_matmul_tn
// CHECK-SAME: (%[[A:[^:]+]]: memref<4x32x?xf32, strided<[?, ?, 1], offset: ?>>, %[[B:[^:]+]]: memref<4x32x16xf32, strided<[1024, 32, 1], offset: 8>>, %[[C:[^:]+]]: memref<4x?x16xf32>)
// CHECK-DAG: %[[TRANS:.+]] = arith.constant 1 : i32
// CHECK-DAG: %[[NOTRANS:.+]] = arith.constant 0 : i32
// CHECK: %{{[^,]+}}, %[[OFFA:[^,]+]], %[[SA:[^:]+]]:3, %[[STA:[^:]+]]:3 = memref.extract_strided_metadata %[[A]]
// CHECK: %[[OA:.+]] = arith.index_cast %[[OFFA]] : index to i64
// CHECK: arith.maxui %[[STA]]#1
// CHECK: %[[BSA:.+]] = arith.index_cast %[[STA]]#0 : index to i64
// CHECK: %{{[^,]+}}, %{{[^,]+}}, %[[SC:[^:]+]]:3, %{{[^:]+}}:3 = memref.extract_strided_metadata %[[C]]
// CHECK: %[[K:.+]] = arith.index_cast %[[SA]]#1 : index to i64
// CHECK: arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[BETA:.+]] = arith.constant 1.000000e+00 : f32
// CHECK: %[[BATCH:.+]] = arith.index_cast %[[SC]]#0 : index to i64
// CHECK: call @txl_device_sgemm(%[[TRANS]], %[[NOTRANS]], %{{.+}}, %{{.+}}, %[[K]], %{{.+}}, %{{.+}}, %[[OA]], %{{.+}}, %[[BSA]], %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[BETA]], %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[BATCH]])
func.func @batch_matmul_tn(%a: memref<4x32x?xf32, strided<[?, ?, 1], offset: ?>>, %b: memref<4x32x16xf32, strided<[1024, 32, 1], offset: 8>>, %c: memref<4x?x16xf32>) {
  linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, k) -> (b, k, m)>, affine_map<(b, m, n, k) -> (b, k, n)>, affine_map<(b, m, n, k) -> (b, m, n)>]
    ins(%a, %b : memref<4x32x?xf32, strided<[?, ?, 1], offset: ?>>, memref<4x32x16xf32, strided<[1024, 32, 1], offset: 8>>) outs(%c : memref<4x?x16xf32>)
  return
}

// -----

// The GPU targets are f32: an f64 product (which the CPU sends to
// cblas_dgemm) has no device call.
func.func @matmul_f64(%a: memref<?x32xf64>, %b: memref<32x64xf64>, %c: memref<?x64xf64>) {
  // expected-error @+1 {{'linalg.matmul' op device products need f32 memrefs with a unit inner stride}}
  linalg.matmul ins(%a, %b : memref<?x32xf64>, memref<32x64xf64>) outs(%c : memref<?x64xf64>)
  return
}

// -----

// Rows must be unit-stride: a column-major view is rejected.
func.func @matmul_column_major(%a: memref<?x32xf32, strided<[1, ?]>>, %b: memref<32x64xf32>, %c: memref<?x64xf32>) {
  // expected-error @+1 {{'linalg.matmul' op device products need f32 memrefs with a unit inner stride}}
  linalg.matmul ins(%a, %b : memref<?x32xf32, strided<[1, ?]>>, memref<32x64xf32>) outs(%c : memref<?x64xf32>)
  return
}

// -----

// Maps outside the four transpose layouts, and products on tensors, are
// refused as on the CPU.
func.func @matmul_broadcast_a(%a: memref<32xf32>, %b: memref<32x64xf32>, %c: memref<?x64xf32>) {
  // expected-error @+1 {{'linalg.matmul' op unsupported indexing maps for a BLAS product}}
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
    ins(%a, %b : memref<32xf32>, memref<32x64xf32>) outs(%c : memref<?x64xf32>)
  return
}

// -----

func.func @matmul_on_tensors(%a: tensor<?x32xf32>, %b: tensor<32x64xf32>, %c: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{'linalg.matmul' op txl-linalg-to-blas expects bufferized operands}}
  %0 = linalg.matmul ins(%a, %b : tensor<?x32xf32>, tensor<32x64xf32>) outs(%c : tensor<?x64xf32>) -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

// linalg.contract (lowerContractToBlas, CPU only) is refused on devices
// rather than left for a slow loop lowering.
func.func @contract_on_device(%q: memref<?x2x4x8xf32>, %k: memref<?x2x4x8xf32>, %s: memref<2x4x?x?xf32>) {
  // expected-error @+1 {{'linalg.contract' op has no device gemm lowering yet (CPU targets only)}}
  linalg.contract indexing_maps = [
      affine_map<(b, h, i, j, d) -> (i, b, h, d)>,
      affine_map<(b, h, i, j, d) -> (j, b, h, d)>,
      affine_map<(b, h, i, j, d) -> (b, h, i, j)>]
    ins(%q, %k : memref<?x2x4x8xf32>, memref<?x2x4x8xf32>) outs(%s : memref<2x4x?x?xf32>)
  return
}

// RUN: txl-opt %s --split-input-file --txl-linalg-to-blas --verify-diagnostics | FileCheck %s

// A bufferized f32 linalg.matmul with the default maps becomes one row-major
// cblas_sgemm call (101) with both operands untransposed (111/111):
// m, n from C, k from A, lda/ldb/ldc the row strides (at least 1), alpha =
// beta = 1 (linalg accumulates into C), pointers = aligned base + offset. The
// call is skipped when m·n·k = 0.
// CHECK-LABEL: func.func private @cblas_sgemm(i32, i32, i32, i32, i32, i32, f32, !llvm.ptr, i32, !llvm.ptr, i32, f32, !llvm.ptr, i32)
// CHECK-LABEL: func.func @matmul
// CHECK-SAME: (%[[A:[^:]+]]: memref<?x32xf32>, %[[B:[^:]+]]: memref<32x64xf32>, %[[C:[^:]+]]: memref<?x64xf32>)
// CHECK: %{{[^,]+}}, %[[OFFA:[^,]+]], %[[SA:[^:]+]]:2, %[[STA:[^:]+]]:2 = memref.extract_strided_metadata %[[A]]
// CHECK-NEXT: %[[IA:.+]] = memref.extract_aligned_pointer_as_index %[[A]]
// CHECK-NEXT: %[[IA64:.+]] = arith.index_cast %[[IA]] : index to i64
// CHECK-NEXT: %[[BASEA:.+]] = llvm.inttoptr %[[IA64]] : i64 to !llvm.ptr
// CHECK-NEXT: %[[OA64:.+]] = arith.index_cast %[[OFFA]] : index to i64
// CHECK-NEXT: %[[PA:.+]] = llvm.getelementptr %[[BASEA]][%[[OA64]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK: %{{[^,]+}}, %{{[^,]+}}, %{{[^:]+}}:2, %[[STB:[^:]+]]:2 = memref.extract_strided_metadata %[[B]]
// CHECK: %[[PB:.+]] = llvm.getelementptr
// CHECK: %{{[^,]+}}, %{{[^,]+}}, %[[SC:[^:]+]]:2, %[[STC:[^:]+]]:2 = memref.extract_strided_metadata %[[C]]
// CHECK: %[[PC:.+]] = llvm.getelementptr
// CHECK: %[[LDA:.+]] = arith.maxui %[[STA]]#0, %{{.+}} : index
// CHECK: %[[LDB:.+]] = arith.maxui %[[STB]]#0, %{{.+}} : index
// CHECK: %[[LDC:.+]] = arith.maxui %[[STC]]#0, %{{.+}} : index
// CHECK: %[[MN:.+]] = arith.muli %[[SC]]#0, %[[SC]]#1 : index
// CHECK: %[[MNK:.+]] = arith.muli %[[MN]], %[[SA]]#1 : index
// CHECK: %[[NONEMPTY:.+]] = arith.cmpi ne, %[[MNK]], %{{.+}} : index
// CHECK: scf.if %[[NONEMPTY]] {
// CHECK-DAG: %[[ONE:.+]] = arith.constant 1.000000e+00 : f32
// CHECK-DAG: %[[ROWMAJOR:.+]] = arith.constant 101 : i32
// CHECK-DAG: %[[TA:.+]] = arith.constant 111 : i32
// CHECK-DAG: %[[TB:.+]] = arith.constant 111 : i32
// CHECK-DAG: %[[M:.+]] = arith.index_cast %[[SC]]#0 : index to i32
// CHECK-DAG: %[[N:.+]] = arith.index_cast %[[SC]]#1 : index to i32
// CHECK-DAG: %[[K:.+]] = arith.index_cast %[[SA]]#1 : index to i32
// CHECK-DAG: %[[LDA32:.+]] = arith.index_cast %[[LDA]] : index to i32
// CHECK-DAG: %[[LDB32:.+]] = arith.index_cast %[[LDB]] : index to i32
// CHECK-DAG: %[[LDC32:.+]] = arith.index_cast %[[LDC]] : index to i32
// CHECK: func.call @cblas_sgemm(%[[ROWMAJOR]], %[[TA]], %[[TB]], %[[M]], %[[N]], %[[K]], %[[ONE]], %[[PA]], %[[LDA32]], %[[PB]], %[[LDB32]], %[[ONE]], %[[PC]], %[[LDC32]])
// CHECK-NOT: linalg.matmul
// CHECK: return
func.func @matmul(%a: memref<?x32xf32>, %b: memref<32x64xf32>, %c: memref<?x64xf32>) {
  linalg.matmul ins(%a, %b : memref<?x32xf32>, memref<32x64xf32>) outs(%c : memref<?x64xf32>)
  return
}

// -----

// B read as [n, k] (the map convert-txl-to-linalg gives txl.linear's weight)
// is passed transposed: 111 for A, 112 for B; k still comes from A.
// CHECK-LABEL: func.func @matmul_transposed_b
// CHECK-SAME: (%[[A:[^:]+]]: memref<?x32xf32>, %[[B:[^:]+]]: memref<64x32xf32>, %[[C:[^:]+]]: memref<?x64xf32>)
// CHECK: %{{[^,]+}}, %{{[^,]+}}, %[[SA:[^:]+]]:2, %{{[^:]+}}:2 = memref.extract_strided_metadata %[[A]]
// CHECK: %{{[^,]+}}, %{{[^,]+}}, %{{[^:]+}}:2, %[[STB:[^:]+]]:2 = memref.extract_strided_metadata %[[B]]
// CHECK: %[[LDB:.+]] = arith.maxui %[[STB]]#0, %{{.+}} : index
// CHECK: arith.muli %{{.+}}, %[[SA]]#1 : index
// CHECK: scf.if
// CHECK-DAG: %[[NT:.+]] = arith.constant 111 : i32
// CHECK-DAG: %[[T:.+]] = arith.constant 112 : i32
// CHECK-DAG: %[[K:.+]] = arith.index_cast %[[SA]]#1 : index to i32
// CHECK-DAG: %[[LDB32:.+]] = arith.index_cast %[[LDB]] : index to i32
// CHECK: func.call @cblas_sgemm(%{{.+}}, %[[NT]], %[[T]], %{{.+}}, %{{.+}}, %[[K]], %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[LDB32]], %{{.+}}, %{{.+}}, %{{.+}})
// CHECK-NOT: linalg.matmul
func.func @matmul_transposed_b(%a: memref<?x32xf32>, %b: memref<64x32xf32>, %c: memref<?x64xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
    ins(%a, %b : memref<?x32xf32>, memref<64x32xf32>) outs(%c : memref<?x64xf32>)
  return
}

// -----

// A read as [k, m] is passed transposed (112 for A), and k is then A's
// dimension 0.
// CHECK-LABEL: func.func @matmul_transposed_a
// CHECK-SAME: (%[[A:[^:]+]]: memref<32x?xf32>
// CHECK: %{{[^,]+}}, %{{[^,]+}}, %[[SA:[^:]+]]:2, %{{[^:]+}}:2 = memref.extract_strided_metadata %[[A]]
// CHECK: arith.muli %{{.+}}, %[[SA]]#0 : index
// CHECK: scf.if
// CHECK-DAG: %[[T:.+]] = arith.constant 112 : i32
// CHECK-DAG: %[[NT:.+]] = arith.constant 111 : i32
// CHECK-DAG: %[[K:.+]] = arith.index_cast %[[SA]]#0 : index to i32
// CHECK: func.call @cblas_sgemm(%{{.+}}, %[[T]], %[[NT]], %{{.+}}, %{{.+}}, %[[K]],
// CHECK-NOT: linalg.matmul
func.func @matmul_transposed_a(%a: memref<32x?xf32>, %b: memref<32x64xf32>, %c: memref<?x64xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
    ins(%a, %b : memref<32x?xf32>, memref<32x64xf32>) outs(%c : memref<?x64xf32>)
  return
}

// -----

// linalg.batch_matmul becomes an scf.for over the batch (C's dimension 0) with
// one sgemm per step, each operand advanced by iv * its batch stride; the
// matrix sizes and leading dimensions come from dimensions 1 and 2.
// CHECK-LABEL: func.func @batch_matmul
// CHECK-SAME: (%[[A:[^:]+]]: memref<?x?x16xf32>, %[[B:[^:]+]]: memref<?x16x?xf32>, %[[C:[^:]+]]: memref<?x?x?xf32>)
// CHECK: %{{[^,]+}}, %{{[^,]+}}, %[[SA:[^:]+]]:3, %[[STA:[^:]+]]:3 = memref.extract_strided_metadata %[[A]]
// CHECK: %[[PA:.+]] = llvm.getelementptr
// CHECK: %{{[^,]+}}, %{{[^,]+}}, %{{[^:]+}}:3, %[[STB:[^:]+]]:3 = memref.extract_strided_metadata %[[B]]
// CHECK: %[[PB:.+]] = llvm.getelementptr
// CHECK: %{{[^,]+}}, %{{[^,]+}}, %[[SC:[^:]+]]:3, %[[STC:[^:]+]]:3 = memref.extract_strided_metadata %[[C]]
// CHECK: %[[PC:.+]] = llvm.getelementptr
// CHECK: %[[LDA:.+]] = arith.maxui %[[STA]]#1, %{{.+}} : index
// CHECK: %[[C0:.+]] = arith.constant 0 : index
// CHECK: %[[MN:.+]] = arith.muli %[[SC]]#1, %[[SC]]#2 : index
// CHECK: arith.muli %[[MN]], %[[SA]]#2 : index
// CHECK: scf.if
// CHECK: scf.for %[[IV:.+]] = %[[C0]] to %[[SC]]#0 step %{{.+}} {
// CHECK-NEXT: %[[OA:.+]] = arith.muli %[[IV]], %[[STA]]#0 : index
// CHECK-NEXT: %[[OA64:.+]] = arith.index_cast %[[OA]] : index to i64
// CHECK-NEXT: %[[PAI:.+]] = llvm.getelementptr %[[PA]][%[[OA64]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT: %[[OB:.+]] = arith.muli %[[IV]], %[[STB]]#0 : index
// CHECK-NEXT: %[[OB64:.+]] = arith.index_cast %[[OB]] : index to i64
// CHECK-NEXT: %[[PBI:.+]] = llvm.getelementptr %[[PB]][%[[OB64]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT: %[[OC:.+]] = arith.muli %[[IV]], %[[STC]]#0 : index
// CHECK-NEXT: %[[OC64:.+]] = arith.index_cast %[[OC]] : index to i64
// CHECK-NEXT: %[[PCI:.+]] = llvm.getelementptr %[[PC]][%[[OC64]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-DAG: %[[NT:.+]] = arith.constant 111 : i32
// CHECK-DAG: %[[M:.+]] = arith.index_cast %[[SC]]#1 : index to i32
// CHECK-DAG: %[[N:.+]] = arith.index_cast %[[SC]]#2 : index to i32
// CHECK-DAG: %[[K:.+]] = arith.index_cast %[[SA]]#2 : index to i32
// CHECK-DAG: %[[LDA32:.+]] = arith.index_cast %[[LDA]] : index to i32
// CHECK: func.call @cblas_sgemm(%{{.+}}, %[[NT]], %{{.+}}, %[[M]], %[[N]], %[[K]], %{{.+}}, %[[PAI]], %[[LDA32]], %[[PBI]], %{{.+}}, %{{.+}}, %[[PCI]], %{{.+}})
// CHECK-NEXT: }
// CHECK-NOT: linalg.batch_matmul
func.func @batch_matmul(%a: memref<?x?x16xf32>, %b: memref<?x16x?xf32>, %c: memref<?x?x?xf32>) {
  linalg.batch_matmul ins(%a, %b : memref<?x?x16xf32>, memref<?x16x?xf32>) outs(%c : memref<?x?x?xf32>)
  return
}

// -----

// The q kᵀ batch_matmul of the attention scores (B read as [batch, n, k]) is
// passed with B transposed.
// CHECK-LABEL: func.func @batch_matmul_transposed_b
// CHECK: scf.for
// CHECK-DAG: %[[NT:.+]] = arith.constant 111 : i32
// CHECK-DAG: %[[T:.+]] = arith.constant 112 : i32
// CHECK: func.call @cblas_sgemm(%{{.+}}, %[[NT]], %[[T]],
// CHECK-NOT: linalg.batch_matmul
func.func @batch_matmul_transposed_b(%a: memref<?x?x16xf32>, %b: memref<?x?x16xf32>, %c: memref<?x?x?xf32>) {
  linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (b, n, k)>, affine_map<(b, m, n, k) -> (b, m, n)>]
    ins(%a, %b : memref<?x?x16xf32>, memref<?x?x16xf32>) outs(%c : memref<?x?x?xf32>)
  return
}

// -----

// A strided view (a slice with offset and row stride) keeps its offset and
// its row stride as the leading dimension.
// CHECK-LABEL: func.func @matmul_strided_view
// CHECK-SAME: (%[[A:[^:]+]]: memref<?x32xf32, strided<[?, 1], offset: ?>>
// CHECK: %{{[^,]+}}, %[[OFFA:[^,]+]], %{{[^:]+}}:2, %[[STA:[^:]+]]:2 = memref.extract_strided_metadata %[[A]]
// CHECK: %[[OA64:.+]] = arith.index_cast %[[OFFA]] : index to i64
// CHECK-NEXT: llvm.getelementptr %{{.+}}[%[[OA64]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK: arith.maxui %[[STA]]#0, %{{.+}} : index
// CHECK: func.call @cblas_sgemm
func.func @matmul_strided_view(%a: memref<?x32xf32, strided<[?, 1], offset: ?>>, %b: memref<32x64xf32>, %c: memref<?x64xf32>) {
  linalg.matmul ins(%a, %b : memref<?x32xf32, strided<[?, 1], offset: ?>>, memref<32x64xf32>) outs(%c : memref<?x64xf32>)
  return
}

// -----

// f64 products (gradient checks) call cblas_dgemm the same way: alpha =
// beta = 1.0 in f64, pointers offset in f64 elements; an f64-only module
// declares no cblas_sgemm.
// CHECK-NOT: cblas_sgemm
// CHECK-LABEL: func.func private @cblas_dgemm(i32, i32, i32, i32, i32, i32, f64, !llvm.ptr, i32, !llvm.ptr, i32, f64, !llvm.ptr, i32)
// CHECK-LABEL: func.func @matmul_f64
// CHECK-SAME: (%[[A:[^:]+]]: memref<?x32xf64>, %[[B:[^:]+]]: memref<64x32xf64>, %[[C:[^:]+]]: memref<?x64xf64>)
// CHECK: %{{[^,]+}}, %[[OFFA:[^,]+]], %[[SA:[^:]+]]:2, %{{[^:]+}}:2 = memref.extract_strided_metadata %[[A]]
// CHECK: %[[OA64:.+]] = arith.index_cast %[[OFFA]] : index to i64
// CHECK-NEXT: %[[PA:.+]] = llvm.getelementptr %{{.+}}[%[[OA64]]] : (!llvm.ptr, i64) -> !llvm.ptr, f64
// CHECK: scf.if
// CHECK-DAG: %[[ONE:.+]] = arith.constant 1.000000e+00 : f64
// CHECK-DAG: %[[NT:.+]] = arith.constant 111 : i32
// CHECK-DAG: %[[T:.+]] = arith.constant 112 : i32
// CHECK-DAG: %[[K:.+]] = arith.index_cast %[[SA]]#1 : index to i32
// CHECK: func.call @cblas_dgemm(%{{.+}}, %[[NT]], %[[T]], %{{.+}}, %{{.+}}, %[[K]], %[[ONE]], %[[PA]], %{{.+}}, %{{.+}}, %{{.+}}, %[[ONE]], %{{.+}}, %{{.+}})
// CHECK-NOT: linalg.matmul
// CHECK-NOT: cblas_sgemm
// CHECK: return
func.func @matmul_f64(%a: memref<?x32xf64>, %b: memref<64x32xf64>, %c: memref<?x64xf64>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
    ins(%a, %b : memref<?x32xf64>, memref<64x32xf64>) outs(%c : memref<?x64xf64>)
  return
}

// -----

// An f64 batch_matmul: one dgemm per batch step, operands advanced in f64
// elements.
// CHECK-LABEL: func.func @batch_matmul_f64
// CHECK: scf.for %[[IV:.+]] = %{{.+}} to %{{.+}} step %{{.+}} {
// CHECK: %[[PAI:.+]] = llvm.getelementptr %{{.+}}[%{{.+}}] : (!llvm.ptr, i64) -> !llvm.ptr, f64
// CHECK: %[[PBI:.+]] = llvm.getelementptr %{{.+}}[%{{.+}}] : (!llvm.ptr, i64) -> !llvm.ptr, f64
// CHECK: %[[PCI:.+]] = llvm.getelementptr %{{.+}}[%{{.+}}] : (!llvm.ptr, i64) -> !llvm.ptr, f64
// CHECK: func.call @cblas_dgemm(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[PAI]], %{{.+}}, %[[PBI]], %{{.+}}, %{{.+}}, %[[PCI]], %{{.+}})
// CHECK-NOT: linalg.batch_matmul
func.func @batch_matmul_f64(%a: memref<?x?x16xf64>, %b: memref<?x16x?xf64>, %c: memref<?x?x?xf64>) {
  linalg.batch_matmul ins(%a, %b : memref<?x?x16xf64>, memref<?x16x?xf64>) outs(%c : memref<?x?x?xf64>)
  return
}

// -----

// A module with products of both types declares both gemms, each product
// calling its own.
// CHECK-DAG: func.func private @cblas_sgemm(i32, i32, i32, i32, i32, i32, f32,
// CHECK-DAG: func.func private @cblas_dgemm(i32, i32, i32, i32, i32, i32, f64,
// CHECK-LABEL: func.func @matmul_both
// CHECK: func.call @cblas_sgemm(
// CHECK: func.call @cblas_dgemm(
func.func @matmul_both(%a: memref<?x32xf32>, %b: memref<32x64xf32>, %c: memref<?x64xf32>,
                       %x: memref<?x32xf64>, %y: memref<32x64xf64>, %z: memref<?x64xf64>) {
  linalg.matmul ins(%a, %b : memref<?x32xf32>, memref<32x64xf32>) outs(%c : memref<?x64xf32>)
  linalg.matmul ins(%x, %y : memref<?x32xf64>, memref<32x64xf64>) outs(%z : memref<?x64xf64>)
  return
}

// -----

// BLAS has no f16 gemm: f16 products are left to the loop lowering.
// CHECK-LABEL: func.func @matmul_f16
// CHECK-NOT: func.call
// CHECK: linalg.matmul ins(%{{.+}}, %{{.+}} : memref<?x32xf16>, memref<32x64xf16>) outs(%{{.+}} : memref<?x64xf16>)
// CHECK-NOT: func.call
// CHECK: return
func.func @matmul_f16(%a: memref<?x32xf16>, %b: memref<32x64xf16>, %c: memref<?x64xf16>) {
  linalg.matmul ins(%a, %b : memref<?x32xf16>, memref<32x64xf16>) outs(%c : memref<?x64xf16>)
  return
}

// -----

// A fresh buffer zero-filled right before the product: the fill goes away
// and the call overwrites C (beta = 0); it is skipped only when m·n = 0 (with
// k = 0 it zeroes C in place of the fill).
// CHECK-LABEL: func.func @matmul_zero_filled
// CHECK: %[[C:.+]] = memref.alloc
// CHECK-NOT: linalg.fill
// CHECK: %[[MN:.+]] = arith.muli
// CHECK-NEXT: %[[NONEMPTY:.+]] = arith.cmpi ne, %[[MN]], %{{.+}} : index
// CHECK: scf.if %[[NONEMPTY]] {
// CHECK-DAG: %[[ONE:.+]] = arith.constant 1.000000e+00 : f32
// CHECK-DAG: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: func.call @cblas_sgemm(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[ONE]], %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[ZERO]], %{{.+}}, %{{.+}})
// CHECK: return %[[C]]
func.func @matmul_zero_filled(%a: memref<?x32xf32>, %b: memref<32x64xf32>, %m: index) -> memref<?x64xf32> {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc(%m) : memref<?x64xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<?x64xf32>)
  linalg.matmul ins(%a, %b : memref<?x32xf32>, memref<32x64xf32>) outs(%c : memref<?x64xf32>)
  return %c : memref<?x64xf32>
}

// -----

// The fill stays (beta = 1) when it is not +0.0, or when the output is a
// fresh allocation that something touches in between.
// CHECK-LABEL: func.func @matmul_fill_kept
// CHECK: linalg.fill ins(%{{.+}} : f32) outs(%[[C1:.+]] : memref<?x64xf32>)
// CHECK: func.call @cblas_sgemm(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[ONE1:[^,]+]], %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[ONE1]], %{{.+}}, %{{.+}})
// CHECK: linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : memref<?x64xf32>)
// CHECK: memref.store
// CHECK: func.call @cblas_sgemm(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[ONE3:[^,]+]], %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[ONE3]], %{{.+}}, %{{.+}})
// CHECK: linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : memref<?x64xf32>)
// CHECK: func.call @cblas_sgemm(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[ONE4:[^,]+]], %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[ONE4]], %{{.+}}, %{{.+}})
// CHECK: return
func.func @matmul_fill_kept(%a: memref<?x32xf32>, %b: memref<32x64xf32>, %arg: memref<?x64xf32>, %m: index, %v: f32)
    -> (memref<?x64xf32>, memref<?x64xf32>, memref<?x64xf32>) {
  %one = arith.constant 1.0 : f32
  %negzero = arith.constant -0.0 : f32
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = memref.alloc(%m) : memref<?x64xf32>
  linalg.fill ins(%one : f32) outs(%c1 : memref<?x64xf32>)
  linalg.matmul ins(%a, %b : memref<?x32xf32>, memref<32x64xf32>) outs(%c1 : memref<?x64xf32>)
  %c3 = memref.alloc(%m) : memref<?x64xf32>
  linalg.fill ins(%zero : f32) outs(%c3 : memref<?x64xf32>)
  memref.store %v, %c3[%c0, %c0] : memref<?x64xf32>
  linalg.matmul ins(%a, %b : memref<?x32xf32>, memref<32x64xf32>) outs(%c3 : memref<?x64xf32>)
  %c4 = memref.alloc(%m) : memref<?x64xf32>
  linalg.fill ins(%negzero : f32) outs(%c4 : memref<?x64xf32>)
  linalg.matmul ins(%a, %b : memref<?x32xf32>, memref<32x64xf32>) outs(%c4 : memref<?x64xf32>)
  return %c1, %c3, %c4 : memref<?x64xf32>, memref<?x64xf32>, memref<?x64xf32>
}

// -----

// Any output, a view or an argument too, zero-filled by the op just before
// the product: nothing can write it in between, so the fill goes away
// (beta = 0). With any op in between, an output that is not a fresh
// allocation keeps its fill (beta = 1): the op might write it through
// another view.
// CHECK-LABEL: func.func @matmul_view_zero_filled
// CHECK-NOT: linalg.fill
// CHECK: scf.if
// CHECK: %[[ZERO1:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: func.call @cblas_sgemm(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[ZERO1]], %{{.+}}, %{{.+}})
// CHECK-NOT: linalg.fill
// CHECK: scf.if
// CHECK: %[[ZERO2:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: func.call @cblas_sgemm(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[ZERO2]], %{{.+}}, %{{.+}})
// CHECK: linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : memref<?x64xf32, strided<[128, 1]>>)
// CHECK-NEXT: memref.store
// CHECK: func.call @cblas_sgemm(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[ONE3:[^,]+]], %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[ONE3]], %{{.+}}, %{{.+}})
// CHECK: return
func.func @matmul_view_zero_filled(%a: memref<?x32xf32>, %b: memref<32x64xf32>, %arg: memref<?x64xf32>,
                                   %m: index, %other: memref<4xf32>, %v: f32) -> memref<?x128xf32> {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c = memref.alloc(%m) : memref<?x128xf32>
  %view = memref.subview %c[0, 0] [%m, 64] [1, 1] : memref<?x128xf32> to memref<?x64xf32, strided<[128, 1]>>
  linalg.fill ins(%zero : f32) outs(%view : memref<?x64xf32, strided<[128, 1]>>)
  linalg.matmul ins(%a, %b : memref<?x32xf32>, memref<32x64xf32>) outs(%view : memref<?x64xf32, strided<[128, 1]>>)
  linalg.fill ins(%zero : f32) outs(%arg : memref<?x64xf32>)
  linalg.matmul ins(%a, %b : memref<?x32xf32>, memref<32x64xf32>) outs(%arg : memref<?x64xf32>)
  %view3 = memref.subview %c[0, 0] [%m, 64] [1, 1] : memref<?x128xf32> to memref<?x64xf32, strided<[128, 1]>>
  linalg.fill ins(%zero : f32) outs(%view3 : memref<?x64xf32, strided<[128, 1]>>)
  memref.store %v, %other[%c0] : memref<4xf32>
  linalg.matmul ins(%a, %b : memref<?x32xf32>, memref<32x64xf32>) outs(%view3 : memref<?x64xf32, strided<[128, 1]>>)
  return %c : memref<?x128xf32>
}

// -----

// A product that accumulates in a loop keeps the zero fill before the loop
// (beta = 1 inside): the fill is not in the product's block.
// CHECK-LABEL: func.func @matmul_accumulates_in_loop
// CHECK: linalg.fill
// CHECK: scf.for
// CHECK: func.call @cblas_sgemm(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[ONE:[^,]+]], %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[ONE]], %{{.+}}, %{{.+}})
func.func @matmul_accumulates_in_loop(%a: memref<?x32xf32>, %b: memref<32x64xf32>, %m: index, %n: index) -> memref<?x64xf32> {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c = memref.alloc(%m) : memref<?x64xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<?x64xf32>)
  scf.for %i = %c0 to %n step %c1 {
    linalg.matmul ins(%a, %b : memref<?x32xf32>, memref<32x64xf32>) outs(%c : memref<?x64xf32>)
  }
  return %c : memref<?x64xf32>
}

// -----

// Other linalg ops are untouched, and a module without products gets no
// cblas_sgemm declaration.
// CHECK-NOT: cblas_sgemm
// CHECK-LABEL: func.func @no_products
// CHECK: linalg.fill
// CHECK-NOT: cblas_sgemm
// CHECK: return
func.func @no_products(%c: memref<?x64xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<?x64xf32>)
  return
}

// -----

// The pass runs after bufferization: a product on tensors is an error.
func.func @matmul_on_tensors(%a: tensor<?x32xf32>, %b: tensor<32x64xf32>, %c: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{'linalg.matmul' op txl-linalg-to-blas expects bufferized operands}}
  %0 = linalg.matmul ins(%a, %b : tensor<?x32xf32>, tensor<32x64xf32>) outs(%c : tensor<?x64xf32>) -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

// Maps that are not one of the four transpose layouts (here a broadcast A)
// cannot be expressed as one sgemm.
func.func @matmul_broadcast_a(%a: memref<32xf32>, %b: memref<32x64xf32>, %c: memref<?x64xf32>) {
  // expected-error @+1 {{'linalg.matmul' op unsupported indexing maps for a BLAS product}}
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
    ins(%a, %b : memref<32xf32>, memref<32x64xf32>) outs(%c : memref<?x64xf32>)
  return
}

// -----

// BLAS needs unit-stride rows: a column-major view is rejected.
func.func @matmul_column_major(%a: memref<?x32xf32, strided<[1, ?]>>, %b: memref<32x64xf32>, %c: memref<?x64xf32>) {
  // expected-error @+1 {{'linalg.matmul' op BLAS operands must be f32 memrefs with a unit inner stride}}
  linalg.matmul ins(%a, %b : memref<?x32xf32, strided<[1, ?]>>, memref<32x64xf32>) outs(%c : memref<?x64xf32>)
  return
}

// -----

// The f64 form of the same error names f64.
func.func @matmul_column_major_f64(%a: memref<?x32xf64, strided<[1, ?]>>, %b: memref<32x64xf64>, %c: memref<?x64xf64>) {
  // expected-error @+1 {{'linalg.matmul' op BLAS operands must be f64 memrefs with a unit inner stride}}
  linalg.matmul ins(%a, %b : memref<?x32xf64, strided<[1, ?]>>, memref<32x64xf64>) outs(%c : memref<?x64xf64>)
  return
}

// -----

// Operands must have the output's element type: an f32 operand of an f64
// product is rejected rather than read as f64.
func.func @matmul_mixed(%a: memref<?x32xf32>, %b: memref<32x64xf64>, %c: memref<?x64xf64>) {
  // expected-error @+1 {{'linalg.matmul' op BLAS operands must be f64 memrefs with a unit inner stride}}
  linalg.matmul ins(%a, %b : memref<?x32xf32>, memref<32x64xf64>) outs(%c : memref<?x64xf64>)
  return
}


// -----

// linalg.contract with the batch dimensions (b, h) inside the operands: the
// attention's q·kᵀ read straight from [len, batch, n_head, d_head] tensors.
// One scf.for per batch dimension (extents C's dims 0 and 1), each operand
// advanced by iv * its stride along that dimension (q and k: dims 1 and 2;
// C: dims 0 and 1); k's last dimension is the contraction's (B = kᵀ: 112);
// lda and ldb are the strides of q's and k's dim 0 (i, j), ldc C's dim 2.
// CHECK-LABEL: func.func @contract_heads
// CHECK-SAME: (%[[Q:[^:]+]]: memref<?x2x4x8xf32>, %[[K:[^:]+]]: memref<?x2x4x8xf32>, %[[S:[^:]+]]: memref<2x4x?x?xf32>)
// CHECK: %{{[^,]+}}, %{{[^,]+}}, %[[SQ:[^:]+]]:4, %[[STQ:[^:]+]]:4 = memref.extract_strided_metadata %[[Q]]
// CHECK: %[[PQ:.+]] = llvm.getelementptr
// CHECK: %{{[^,]+}}, %{{[^,]+}}, %{{[^:]+}}:4, %[[STK:[^:]+]]:4 = memref.extract_strided_metadata %[[K]]
// CHECK: %[[PK:.+]] = llvm.getelementptr
// CHECK: %{{[^,]+}}, %{{[^,]+}}, %[[SS:[^:]+]]:4, %[[STS:[^:]+]]:4 = memref.extract_strided_metadata %[[S]]
// CHECK: %[[PS:.+]] = llvm.getelementptr
// CHECK: %[[LDA:.+]] = arith.maxui %[[STQ]]#0, %{{.+}} : index
// CHECK: %[[LDB:.+]] = arith.maxui %[[STK]]#0, %{{.+}} : index
// CHECK: %[[LDC:.+]] = arith.maxui %[[STS]]#2, %{{.+}} : index
// CHECK: %[[MN:.+]] = arith.muli %[[SS]]#2, %[[SS]]#3 : index
// CHECK: arith.muli %[[MN]], %[[SQ]]#3 : index
// CHECK: scf.if
// CHECK-NEXT: scf.for %[[B:.+]] = %{{.+}} to %[[SS]]#0 step
// CHECK-NEXT: %[[OQ:.+]] = arith.muli %[[B]], %[[STQ]]#1 : index
// CHECK-NEXT: %[[OQ64:.+]] = arith.index_cast %[[OQ]]
// CHECK-NEXT: %[[PQB:.+]] = llvm.getelementptr %[[PQ]][%[[OQ64]]]
// CHECK-NEXT: %[[OK:.+]] = arith.muli %[[B]], %[[STK]]#1 : index
// CHECK-NEXT: %[[OK64:.+]] = arith.index_cast %[[OK]]
// CHECK-NEXT: %[[PKB:.+]] = llvm.getelementptr %[[PK]][%[[OK64]]]
// CHECK-NEXT: %[[OS:.+]] = arith.muli %[[B]], %[[STS]]#0 : index
// CHECK-NEXT: %[[OS64:.+]] = arith.index_cast %[[OS]]
// CHECK-NEXT: %[[PSB:.+]] = llvm.getelementptr %[[PS]][%[[OS64]]]
// CHECK-NEXT: scf.for %[[H:.+]] = %{{.+}} to %[[SS]]#1 step
// CHECK-NEXT: %[[OQH:.+]] = arith.muli %[[H]], %[[STQ]]#2 : index
// CHECK-NEXT: %[[OQH64:.+]] = arith.index_cast %[[OQH]]
// CHECK-NEXT: %[[PQH:.+]] = llvm.getelementptr %[[PQB]][%[[OQH64]]]
// CHECK-NEXT: %[[OKH:.+]] = arith.muli %[[H]], %[[STK]]#2 : index
// CHECK-NEXT: %[[OKH64:.+]] = arith.index_cast %[[OKH]]
// CHECK-NEXT: %[[PKH:.+]] = llvm.getelementptr %[[PKB]][%[[OKH64]]]
// CHECK-NEXT: %[[OSH:.+]] = arith.muli %[[H]], %[[STS]]#1 : index
// CHECK-NEXT: %[[OSH64:.+]] = arith.index_cast %[[OSH]]
// CHECK-NEXT: %[[PSH:.+]] = llvm.getelementptr %[[PSB]][%[[OSH64]]]
// CHECK-DAG: %[[NT:.+]] = arith.constant 111 : i32
// CHECK-DAG: %[[T:.+]] = arith.constant 112 : i32
// CHECK-DAG: %[[M:.+]] = arith.index_cast %[[SS]]#2 : index to i32
// CHECK-DAG: %[[N:.+]] = arith.index_cast %[[SS]]#3 : index to i32
// CHECK-DAG: %[[KK:.+]] = arith.index_cast %[[SQ]]#3 : index to i32
// CHECK-DAG: %[[LDA32:.+]] = arith.index_cast %[[LDA]] : index to i32
// CHECK-DAG: %[[LDB32:.+]] = arith.index_cast %[[LDB]] : index to i32
// CHECK-DAG: %[[LDC32:.+]] = arith.index_cast %[[LDC]] : index to i32
// CHECK: func.call @cblas_sgemm(%{{.+}}, %[[NT]], %[[T]], %[[M]], %[[N]], %[[KK]], %{{.+}}, %[[PQH]], %[[LDA32]], %[[PKH]], %[[LDB32]], %{{.+}}, %[[PSH]], %[[LDC32]])
// CHECK-NOT: linalg.contract
func.func @contract_heads(%q: memref<?x2x4x8xf32>, %k: memref<?x2x4x8xf32>, %s: memref<2x4x?x?xf32>) {
  linalg.contract indexing_maps = [
      affine_map<(b, h, i, j, d) -> (i, b, h, d)>,
      affine_map<(b, h, i, j, d) -> (j, b, h, d)>,
      affine_map<(b, h, i, j, d) -> (b, h, i, j)>]
    ins(%q, %k : memref<?x2x4x8xf32>, memref<?x2x4x8xf32>) outs(%s : memref<2x4x?x?xf32>)
  return
}

// -----

// An input without a batch dimension (r [klen, n_head, d_head], the same for
// every batch column) is the same matrix at every b: only the h loop
// advances it (no getelementptr of r in the b loop).
// CHECK-LABEL: func.func @contract_broadcast
// CHECK-SAME: (%[[Q:[^:]+]]: memref<?x2x4x8xf32>, %[[R:[^:]+]]: memref<?x4x8xf32>
// CHECK: %{{[^,]+}}, %{{[^,]+}}, %{{[^:]+}}:3, %[[STR:[^:]+]]:3 = memref.extract_strided_metadata %[[R]]
// CHECK: %[[PR:.+]] = llvm.getelementptr
// CHECK: scf.for %[[B:.+]] = 
// CHECK-COUNT-2: llvm.getelementptr
// CHECK-NEXT: scf.for %[[H:.+]] = 
// CHECK: llvm.getelementptr
// CHECK-NEXT: %[[ORH:.+]] = arith.muli %[[H]], %[[STR]]#1 : index
// CHECK-NEXT: %[[ORH64:.+]] = arith.index_cast %[[ORH]]
// CHECK-NEXT: %[[PRH:.+]] = llvm.getelementptr %[[PR]][%[[ORH64]]]
// CHECK: func.call @cblas_sgemm(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[PRH]],
func.func @contract_broadcast(%q: memref<?x2x4x8xf32>, %r: memref<?x4x8xf32>, %s: memref<2x4x?x?xf32>) {
  linalg.contract indexing_maps = [
      affine_map<(b, h, i, j, d) -> (i, b, h, d)>,
      affine_map<(b, h, i, j, d) -> (j, h, d)>,
      affine_map<(b, h, i, j, d) -> (b, h, i, j)>]
    ins(%q, %r : memref<?x2x4x8xf32>, memref<?x4x8xf32>) outs(%s : memref<2x4x?x?xf32>)
  return
}

// -----

// The attention's probabilities times v, written back into [len, batch,
// n_head, d_head]: B = v [j, b, h, d] untransposed (its last dimension is
// n = d), ldb the stride of v's dim 0 (j), ldc the output's dim 0 (i).
// CHECK-LABEL: func.func @contract_pv
// CHECK-SAME: (%[[P:[^:]+]]: memref<2x4x?x?xf32>, %[[V:[^:]+]]: memref<?x2x4x8xf32>, %[[O:[^:]+]]: memref<?x2x4x8xf32>)
// CHECK: %{{[^,]+}}, %{{[^,]+}}, %[[SP:[^:]+]]:4, %[[STP:[^:]+]]:4 = memref.extract_strided_metadata %[[P]]
// CHECK: %{{[^,]+}}, %{{[^,]+}}, %{{[^:]+}}:4, %[[STV:[^:]+]]:4 = memref.extract_strided_metadata %[[V]]
// CHECK: %{{[^,]+}}, %{{[^,]+}}, %[[SO:[^:]+]]:4, %[[STO:[^:]+]]:4 = memref.extract_strided_metadata %[[O]]
// CHECK: %[[LDA:.+]] = arith.maxui %[[STP]]#2, %{{.+}} : index
// CHECK: %[[LDB:.+]] = arith.maxui %[[STV]]#0, %{{.+}} : index
// CHECK: %[[LDC:.+]] = arith.maxui %[[STO]]#0, %{{.+}} : index
// CHECK: %[[MN:.+]] = arith.muli %[[SO]]#0, %[[SO]]#3 : index
// CHECK: arith.muli %[[MN]], %[[SP]]#3 : index
// CHECK: scf.for
// CHECK: scf.for
// CHECK-DAG: %[[NTA:.+]] = arith.constant 111 : i32
// CHECK-DAG: %[[NTB:.+]] = arith.constant 111 : i32
// CHECK-DAG: %[[LDA32:.+]] = arith.index_cast %[[LDA]] : index to i32
// CHECK-DAG: %[[LDB32:.+]] = arith.index_cast %[[LDB]] : index to i32
// CHECK-DAG: %[[LDC32:.+]] = arith.index_cast %[[LDC]] : index to i32
// CHECK: func.call @cblas_sgemm(%{{.+}}, %[[NTA]], %[[NTB]], %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[LDA32]], %{{.+}}, %[[LDB32]], %{{.+}}, %{{.+}}, %[[LDC32]])
func.func @contract_pv(%p: memref<2x4x?x?xf32>, %v: memref<?x2x4x8xf32>, %o: memref<?x2x4x8xf32>) {
  linalg.contract indexing_maps = [
      affine_map<(b, h, i, d, j) -> (b, h, i, j)>,
      affine_map<(b, h, i, d, j) -> (j, b, h, d)>,
      affine_map<(b, h, i, d, j) -> (i, b, h, d)>]
    ins(%p, %v : memref<2x4x?x?xf32>, memref<?x2x4x8xf32>) outs(%o : memref<?x2x4x8xf32>)
  return
}

// -----

// C must end with n: a transposed output is no row-major gemm.
func.func @contract_transposed_c(%a: memref<?x8xf32>, %b: memref<8x?xf32>, %c: memref<?x?xf32>) {
  // expected-error @+1 {{unsupported indexing maps for a BLAS product}}
  linalg.contract indexing_maps = [
      affine_map<(m, n, k) -> (m, k)>,
      affine_map<(m, n, k) -> (k, n)>,
      affine_map<(m, n, k) -> (n, m)>]
    ins(%a, %b : memref<?x8xf32>, memref<8x?xf32>) outs(%c : memref<?x?xf32>)
  return
}

// -----

// Two contraction dimensions are no single gemm.
func.func @contract_two_k(%a: memref<4x8x2xf32>, %b: memref<8x2x5xf32>, %c: memref<4x5xf32>) {
  // expected-error @+1 {{a BLAS contraction needs m and n dimensions and one k dimension}}
  linalg.contract indexing_maps = [
      affine_map<(m, n, k, l) -> (m, k, l)>,
      affine_map<(m, n, k, l) -> (k, l, n)>,
      affine_map<(m, n, k, l) -> (m, n)>]
    ins(%a, %b : memref<4x8x2xf32>, memref<8x2x5xf32>) outs(%c : memref<4x5xf32>)
  return
}

// -----

// An operand whose last dimension is not contiguous cannot be a BLAS matrix.
func.func @contract_strided_inner(%a: memref<4x8xf32, strided<[16, 2]>>, %b: memref<8x5xf32>, %c: memref<4x5xf32>) {
  // expected-error @+1 {{BLAS operands must be f32 memrefs with a unit inner stride}}
  linalg.contract indexing_maps = [
      affine_map<(m, n, k) -> (m, k)>,
      affine_map<(m, n, k) -> (k, n)>,
      affine_map<(m, n, k) -> (m, n)>]
    ins(%a, %b : memref<4x8xf32, strided<[16, 2]>>, memref<8x5xf32>) outs(%c : memref<4x5xf32>)
  return
}

// -----

// cblas's sizes and leading dimensions are 32-bit ints: k = 2^32 would wrap
// to 0 (and lda with it), so a static size or stride over INT32_MAX is an
// error at the product (issue 48, item 13); 2^31 - 1 still lowers.
func.func @k_too_wide(%a: memref<2x4294967296xf32>, %b: memref<4294967296x3xf32>,
                      %c: memref<2x3xf32>) {
  // expected-error @+1 {{'linalg.matmul' op operand #0 dimension 1: size 4294967296 does not fit the BLAS's 32-bit int (at most 2147483647)}}
  linalg.matmul ins(%a, %b : memref<2x4294967296xf32>, memref<4294967296x3xf32>)
                outs(%c : memref<2x3xf32>)
  return
}

// -----

// CHECK-LABEL: func.func @k_widest
// CHECK: call @cblas_sgemm
func.func @k_widest(%a: memref<2x2147483647xf32>, %b: memref<2147483647x3xf32>,
                    %c: memref<2x3xf32>) {
  linalg.matmul ins(%a, %b : memref<2x2147483647xf32>, memref<2147483647x3xf32>)
                outs(%c : memref<2x3xf32>)
  return
}

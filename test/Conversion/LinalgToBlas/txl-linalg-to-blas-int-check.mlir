// RUN: txl-opt %s --txl-linalg-to-blas --canonicalize | FileCheck %s
// RUN: awk '/^func.func @static/,/^}/' %s > %t.mlir
// RUN: txl-opt %t.mlir --txl-linalg-to-blas --canonicalize | FileCheck %s --check-prefix=STATIC \
// RUN:   --implicit-check-not=cf.assert

// cblas_sgemm's sizes and leading dimensions are 32-bit ints (issue 48, item
// 13): those known only at run time are checked before the call, and one
// above INT32_MAX stops the run (cf.assert, which txl-lower-host-asserts
// makes an error exit) instead of wrapping (K = 2^32 became 0). Static
// ones are checked by the pass (txl-linalg-to-blas.mlir): after
// canonicalization a product of static shapes keeps no check.

// CHECK-LABEL: func.func @dynamic
// CHECK-SAME: (%[[A:[^:]+]]: memref<?x?xf32>, %[[B:[^:]+]]: memref<?x?xf32>, %[[C:[^:]+]]: memref<?x?xf32>)
// CHECK: %[[MAX:.+]] = arith.constant 2147483647 : index
// CHECK: arith.cmpi ule, %{{.+}}, %[[MAX]] : index
// CHECK-COUNT-5: arith.andi
// CHECK-NEXT: cf.assert %{{.+}}, "cblas_sgemm: a size or leading dimension is above 2147483647, the most the BLAS's 32-bit int holds"
// CHECK: call @cblas_sgemm(
// STATIC-LABEL: func.func @static
// STATIC: call @cblas_sgemm(
func.func @dynamic(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %c: memref<?x?xf32>) {
  linalg.matmul ins(%a, %b : memref<?x?xf32>, memref<?x?xf32>) outs(%c : memref<?x?xf32>)
  return
}

func.func @static(%a: memref<8x32xf32>, %b: memref<32x64xf32>, %c: memref<8x64xf32>) {
  linalg.matmul ins(%a, %b : memref<8x32xf32>, memref<32x64xf32>) outs(%c : memref<8x64xf32>)
  return
}

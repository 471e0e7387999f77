// RUN: txl-opt %s --split-input-file --txl-expand-strided-copies | FileCheck %s

// A copy out of a strided buffer (the new memory, a slice of the
// concatenation) becomes linalg.copy, so that no call of memrefCopy from the
// MLIR runner utilities is generated.
// CHECK-LABEL: func.func @strided_source
// CHECK-SAME: (%[[SRC:[^:]+]]: memref<?x?x32xf32, strided<[?, 32, 1], offset: ?>>, %[[DST:[^:]+]]: memref<?x?x32xf32>)
// CHECK-NOT: memref.copy
// CHECK: linalg.copy ins(%[[SRC]] : memref<?x?x32xf32, strided<[?, 32, 1], offset: ?>>) outs(%[[DST]] : memref<?x?x32xf32>)
// CHECK-NOT: memref.copy
// CHECK: return
func.func @strided_source(%src: memref<?x?x32xf32, strided<[?, 32, 1], offset: ?>>, %dst: memref<?x?x32xf32>) {
  memref.copy %src, %dst : memref<?x?x32xf32, strided<[?, 32, 1], offset: ?>> to memref<?x?x32xf32>
  return
}

// -----

// A strided destination is expanded as well.
// CHECK-LABEL: func.func @strided_target
// CHECK-SAME: (%[[SRC:[^:]+]]: memref<?x?x32xf32>, %[[DST:[^:]+]]: memref<?x?x32xf32, strided<[?, 32, 1], offset: ?>>)
// CHECK-NOT: memref.copy
// CHECK: linalg.copy ins(%[[SRC]] : memref<?x?x32xf32>) outs(%[[DST]] : memref<?x?x32xf32, strided<[?, 32, 1], offset: ?>>)
func.func @strided_target(%src: memref<?x?x32xf32>, %dst: memref<?x?x32xf32, strided<[?, 32, 1], offset: ?>>) {
  memref.copy %src, %dst : memref<?x?x32xf32> to memref<?x?x32xf32, strided<[?, 32, 1], offset: ?>>
  return
}

// -----

// A copy between identity-layout buffers is left for llvm.memcpy.
// CHECK-LABEL: func.func @identity_copy
// CHECK-SAME: (%[[SRC:[^:]+]]: memref<?x?x32xf32>, %[[DST:[^:]+]]: memref<?x?x32xf32>)
// CHECK-NOT: linalg.copy
// CHECK: memref.copy %[[SRC]], %[[DST]] : memref<?x?x32xf32> to memref<?x?x32xf32>
// CHECK-NOT: linalg.copy
func.func @identity_copy(%src: memref<?x?x32xf32>, %dst: memref<?x?x32xf32>) {
  memref.copy %src, %dst : memref<?x?x32xf32> to memref<?x?x32xf32>
  return
}

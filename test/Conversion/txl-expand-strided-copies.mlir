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

// -----

// A copy of a buffer onto itself is erased: the same value, or two subviews
// of one buffer with the same offsets, sizes and strides (what bufferizing
// an in-place update of a slice leaves).
// CHECK-LABEL: func.func @self_copies
// CHECK-NOT: memref.copy
// CHECK-NOT: linalg.copy
// CHECK: return
func.func @self_copies(%a: memref<64xf32>, %lo: index, %n: index) {
  memref.copy %a, %a : memref<64xf32> to memref<64xf32>
  %s = memref.subview %a[%lo] [%n] [1] : memref<64xf32> to memref<?xf32, strided<[1], offset: ?>>
  %t = memref.subview %a[%lo] [%n] [1] : memref<64xf32> to memref<?xf32, strided<[1], offset: ?>>
  memref.copy %s, %t : memref<?xf32, strided<[1], offset: ?>> to memref<?xf32, strided<[1], offset: ?>>
  return
}

// -----

// Views that differ in an offset, or of different buffers, are real copies.
// CHECK-LABEL: func.func @not_self_copies
// CHECK: linalg.copy ins(%[[S:.+]] : {{.+}}) outs(%[[T:.+]] : {{.+}})
// CHECK: linalg.copy
// CHECK: return
func.func @not_self_copies(%a: memref<64xf32>, %b: memref<64xf32>, %lo: index, %hi: index, %n: index) {
  %s = memref.subview %a[%lo] [%n] [1] : memref<64xf32> to memref<?xf32, strided<[1], offset: ?>>
  %t = memref.subview %a[%hi] [%n] [1] : memref<64xf32> to memref<?xf32, strided<[1], offset: ?>>
  memref.copy %s, %t : memref<?xf32, strided<[1], offset: ?>> to memref<?xf32, strided<[1], offset: ?>>
  %u = memref.subview %b[%lo] [%n] [1] : memref<64xf32> to memref<?xf32, strided<[1], offset: ?>>
  memref.copy %s, %u : memref<?xf32, strided<[1], offset: ?>> to memref<?xf32, strided<[1], offset: ?>>
  return
}

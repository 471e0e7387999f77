// RUN: txl-opt %s --split-input-file --txl-expand-strided-copies | FileCheck %s

// A copy out of a strided buffer (the new memory, a slice of the
// concatenation) becomes a loop over the leading dimensions with one static,
// contiguous row copy (an llvm.memcpy) per iteration: no call of memrefCopy
// from the MLIR runner utilities, and no scalar element loop.
// CHECK-LABEL: func.func @strided_source
// CHECK-SAME: (%[[SRC:[^:]+]]: memref<?x?x32xf32, strided<[?, 32, 1], offset: ?>>, %[[DST:[^:]+]]: memref<?x?x32xf32>)
// CHECK-DAG: %[[C0:.+]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : index
// CHECK-DAG: %[[D0:.+]] = memref.dim %[[DST]], %[[C0]]
// CHECK-DAG: %[[D1:.+]] = memref.dim %[[DST]], %[[C1]]
// CHECK: scf.for %[[I:.+]] = %[[C0]] to %[[D0]] step %[[C1]]
// CHECK: scf.for %[[J:.+]] = %[[C0]] to %[[D1]] step %[[C1]]
// CHECK: %[[S:.+]] = memref.subview %[[SRC]][%[[I]], %[[J]], 0] [1, 1, 32] [1, 1, 1] : {{.+}} to memref<32xf32, strided<[1], offset: ?>>
// CHECK: %[[T:.+]] = memref.subview %[[DST]][%[[I]], %[[J]], 0] [1, 1, 32] [1, 1, 1] : {{.+}} to memref<32xf32, strided<[1], offset: ?>>
// CHECK: memref.copy %[[S]], %[[T]] : memref<32xf32, strided<[1], offset: ?>> to memref<32xf32, strided<[1], offset: ?>>
// CHECK-NOT: linalg.copy
// CHECK: return
func.func @strided_source(%src: memref<?x?x32xf32, strided<[?, 32, 1], offset: ?>>, %dst: memref<?x?x32xf32>) {
  memref.copy %src, %dst : memref<?x?x32xf32, strided<[?, 32, 1], offset: ?>> to memref<?x?x32xf32>
  return
}

// -----

// A strided destination is expanded as well. Trailing dimensions that are
// contiguous in both buffers form one row ([4, 32] here: 128 floats).
// CHECK-LABEL: func.func @strided_target
// CHECK-SAME: (%[[SRC:[^:]+]]: memref<?x4x32xf32>, %[[DST:[^:]+]]: memref<?x4x32xf32, strided<[256, 32, 1], offset: ?>>)
// CHECK: scf.for %[[I:[^ ]+]] =
// CHECK-NOT: scf.for
// CHECK: %[[S:.+]] = memref.subview %[[SRC]][%[[I]], 0, 0] [1, 4, 32] [1, 1, 1] : {{.+}} to memref<4x32xf32, strided<[32, 1], offset: ?>>
// CHECK: %[[T:.+]] = memref.subview %[[DST]][%[[I]], 0, 0] [1, 4, 32] [1, 1, 1] : {{.+}} to memref<4x32xf32, strided<[32, 1], offset: ?>>
// CHECK: memref.copy %[[S]], %[[T]]
func.func @strided_target(%src: memref<?x4x32xf32>, %dst: memref<?x4x32xf32, strided<[256, 32, 1], offset: ?>>) {
  memref.copy %src, %dst : memref<?x4x32xf32> to memref<?x4x32xf32, strided<[256, 32, 1], offset: ?>>
  return
}

// -----

// Rows shorter than 16 bytes, and copies whose innermost size is dynamic,
// stay element loops (linalg.copy).
// CHECK-LABEL: func.func @short_or_dynamic_rows
// CHECK-NOT: scf.for
// CHECK: linalg.copy ins(%{{.+}} : memref<?x2xf32, strided<[8, 1], offset: ?>>) outs(%{{.+}} : memref<?x2xf32>)
// CHECK: linalg.copy ins(%{{.+}} : memref<?x?xf32, strided<[?, 1], offset: ?>>) outs(%{{.+}} : memref<?x?xf32>)
// CHECK-NOT: scf.for
func.func @short_or_dynamic_rows(%a: memref<?x2xf32, strided<[8, 1], offset: ?>>, %b: memref<?x2xf32>, %c: memref<?x?xf32, strided<[?, 1], offset: ?>>, %d: memref<?x?xf32>) {
  memref.copy %a, %b : memref<?x2xf32, strided<[8, 1], offset: ?>> to memref<?x2xf32>
  memref.copy %c, %d : memref<?x?xf32, strided<[?, 1], offset: ?>> to memref<?x?xf32>
  return
}

// -----

// A static, contiguous copy with a non-identity layout (a row copy like the
// ones this pass emits) is left for llvm.memcpy.
// CHECK-LABEL: func.func @static_contiguous
// CHECK-NOT: linalg.copy
// CHECK-NOT: scf.for
// CHECK: memref.copy %{{.+}}, %{{.+}} : memref<256x128xf32> to memref<256x128xf32, strided<[128, 1], offset: 16384>>
func.func @static_contiguous(%a: memref<256x128xf32>, %b: memref<256x128xf32, strided<[128, 1], offset: 16384>>) {
  memref.copy %a, %b : memref<256x128xf32> to memref<256x128xf32, strided<[128, 1], offset: 16384>>
  return
}

// -----

// The attention layout transpose [len, b, n, d] -> [b, n, len, d] keeps d in
// place: one 32-float row copy per (b, n, len), the source indexed through
// the permutation.
// CHECK-LABEL: func.func @attention_transpose
// CHECK-SAME: (%[[Q:[^:]+]]: memref<?x?x4x32xf32, strided<[?, 256, 32, 1]>>, %[[T:[^:]+]]: memref<?x4x?x32xf32>)
// CHECK-NOT: linalg.transpose
// CHECK: scf.for %[[B:[^ ]+]] =
// CHECK: scf.for %[[N:[^ ]+]] =
// CHECK: scf.for %[[L:[^ ]+]] =
// CHECK: %[[S:.+]] = memref.subview %[[Q]][%[[L]], %[[B]], %[[N]], 0] [1, 1, 1, 32] [1, 1, 1, 1]
// CHECK: %[[D:.+]] = memref.subview %[[T]][%[[B]], %[[N]], %[[L]], 0] [1, 1, 1, 32] [1, 1, 1, 1]
// CHECK: memref.copy %[[S]], %[[D]] : memref<32xf32, strided<[1], offset: ?>> to memref<32xf32, strided<[1], offset: ?>>
func.func @attention_transpose(%q: memref<?x?x4x32xf32, strided<[?, 256, 32, 1]>>, %t: memref<?x4x?x32xf32>) {
  linalg.transpose ins(%q : memref<?x?x4x32xf32, strided<[?, 256, 32, 1]>>) outs(%t : memref<?x4x?x32xf32>) permutation = [1, 2, 0, 3]
  return
}

// -----

// A transpose that moves the innermost dimension, and one on tensors, are
// left alone.
// CHECK-LABEL: func.func @other_transposes
// CHECK: linalg.transpose ins(%{{.+}} : memref<?x32xf32>) outs(%{{.+}} : memref<32x?xf32>) permutation = [1, 0]
// CHECK: linalg.transpose ins(%{{.+}} : tensor<?x4x32xf32>) outs(%{{.+}} : tensor<4x?x32xf32>) permutation = [1, 0, 2]
func.func @other_transposes(%a: memref<?x32xf32>, %b: memref<32x?xf32>, %c: tensor<?x4x32xf32>, %d: tensor<4x?x32xf32>) -> tensor<4x?x32xf32> {
  linalg.transpose ins(%a : memref<?x32xf32>) outs(%b : memref<32x?xf32>) permutation = [1, 0]
  %t = linalg.transpose ins(%c : tensor<?x4x32xf32>) outs(%d : tensor<4x?x32xf32>) permutation = [1, 0, 2]
  return %t : tensor<4x?x32xf32>
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

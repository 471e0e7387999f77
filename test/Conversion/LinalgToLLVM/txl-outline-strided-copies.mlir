// RUN: txl-opt %s --split-input-file --txl-outline-strided-copies | FileCheck %s
// RUN: txl-opt %s --split-input-file --txl-outline-strided-copies \
// RUN:   --txl-outline-strided-copies | FileCheck %s
// RUN: txl-opt %s --split-input-file \
// RUN:   --pass-pipeline='builtin.module(txl-outline-strided-copies,func.func(txl-expand-strided-copies))' \
// RUN:   | FileCheck %s --check-prefix=EXPANDED

// The new memory of two layers: four strided copies of two type pairs
// become calls of two noinline functions, one per pair; the entry keeps no
// loop. Running the pass again changes nothing (second RUN line).
// CHECK-LABEL: func.func @new_memory
// CHECK-SAME: (%[[M0:[^:]+]]: {{.+}}, %[[M1:[^:]+]]: {{.+}}, %[[O0:[^:]+]]: {{.+}}, %[[O1:[^:]+]]: {{.+}})
// CHECK-NEXT: call @[[FROM:txl_strided_copy[_0-9]*]](%[[M0]], %[[O0]])
// CHECK-NEXT: call @[[TO:txl_strided_copy[_0-9]*]](%[[M0]], %[[O1]])
// CHECK-NEXT: call @[[FROM]](%[[M1]], %[[O0]])
// CHECK-NEXT: call @[[TO]](%[[M1]], %[[O1]])
// CHECK-NEXT: return
// CHECK: func.func private @[[FROM]](%[[A:[^:]+]]: memref<?x?x32xf32, strided<[?, 32, 1], offset: ?>>, %[[B:[^:]+]]: memref<?x?x32xf32>)
// CHECK-SAME: attributes {passthrough = ["noinline"]}
// CHECK-NEXT: memref.copy %[[A]], %[[B]]
// CHECK-NEXT: return
// CHECK: func.func private @[[TO]](
// CHECK-SAME: memref<?x?x32xf32, strided<[?, 32, 1], offset: ?>>
// CHECK-NEXT: memref.copy
// CHECK-NEXT: return
// CHECK-NEXT: }
// CHECK-NEXT: {{^}}}
// After txl-expand-strided-copies the row loops are in the outlined
// functions only.
// EXPANDED-LABEL: func.func @new_memory
// EXPANDED-NOT: scf.for
// EXPANDED: return
// EXPANDED: func.func private @txl_strided_copy
// EXPANDED: scf.for
// EXPANDED: func.func private @txl_strided_copy
// EXPANDED: scf.for
func.func @new_memory(%m0: memref<?x?x32xf32, strided<[?, 32, 1], offset: ?>>,
                      %m1: memref<?x?x32xf32, strided<[?, 32, 1], offset: ?>>,
                      %o0: memref<?x?x32xf32>,
                      %o1: memref<?x?x32xf32, strided<[?, 32, 1], offset: ?>>) {
  memref.copy %m0, %o0 : memref<?x?x32xf32, strided<[?, 32, 1], offset: ?>> to memref<?x?x32xf32>
  memref.copy %m0, %o1 : memref<?x?x32xf32, strided<[?, 32, 1], offset: ?>> to memref<?x?x32xf32, strided<[?, 32, 1], offset: ?>>
  memref.copy %m1, %o0 : memref<?x?x32xf32, strided<[?, 32, 1], offset: ?>> to memref<?x?x32xf32>
  memref.copy %m1, %o1 : memref<?x?x32xf32, strided<[?, 32, 1], offset: ?>> to memref<?x?x32xf32, strided<[?, 32, 1], offset: ?>>
  return
}

// -----

// Negative: copies that become one llvm.memcpy stay (identity layouts,
// static contiguous views), and so does a copy of a buffer onto itself,
// which txl-expand-strided-copies erases. No function is added: the module
// ends with the function.
// CHECK-LABEL: func.func @stays
// CHECK-COUNT-3: memref.copy
// CHECK-NEXT: return
// CHECK-NEXT: }
// CHECK-NEXT: {{^}}}
func.func @stays(%a: memref<?x32xf32>, %b: memref<?x32xf32>,
                 %s: memref<4x32xf32, strided<[32, 1], offset: 64>>,
                 %t: memref<4x32xf32>, %i: index, %n: index) {
  memref.copy %a, %b : memref<?x32xf32> to memref<?x32xf32>
  memref.copy %s, %t : memref<4x32xf32, strided<[32, 1], offset: 64>> to memref<4x32xf32>
  %v = memref.subview %a[%i, 0] [%n, 32] [1, 1] : memref<?x32xf32> to memref<?x32xf32, strided<[32, 1], offset: ?>>
  %w = memref.subview %a[%i, 0] [%n, 32] [1, 1] : memref<?x32xf32> to memref<?x32xf32, strided<[32, 1], offset: ?>>
  memref.copy %v, %w : memref<?x32xf32, strided<[32, 1], offset: ?>> to memref<?x32xf32, strided<[32, 1], offset: ?>>
  return
}

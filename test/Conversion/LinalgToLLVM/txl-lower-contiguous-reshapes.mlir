// RUN: txl-opt %s --split-input-file --txl-lower-contiguous-reshapes | FileCheck %s

// Expanding a contiguous [qlen·batch, 96] buffer into [qlen, batch, 96] (two
// dynamic sizes in one group, which --expand-strided-metadata cannot do) is a
// reinterpret_cast of the same base with offset 0 and row-major strides
// [batch·96, 96, 1].
// CHECK-LABEL: func.func @expand_two_dynamic
// CHECK-SAME: (%[[A:[^:]+]]: memref<?x96xf32>, %[[Q:[^:]+]]: index, %[[B:[^:]+]]: index)
// CHECK-DAG: %[[C96:.+]] = arith.constant 96 : index
// CHECK-DAG: %[[S0:.+]] = arith.muli %[[B]], %[[C96]] : index
// CHECK-DAG: %[[BASE:[^,]+]], %{{.+}} = memref.extract_strided_metadata %[[A]] : memref<?x96xf32> -> memref<f32>
// CHECK: %[[R:.+]] = memref.reinterpret_cast %[[BASE]] to offset: [0], sizes: [%[[Q]], %[[B]], 96], strides: [%[[S0]], 96, 1] : memref<f32> to memref<?x?x96xf32>
// CHECK-NOT: memref.expand_shape
// CHECK: return %[[R]] : memref<?x?x96xf32>
func.func @expand_two_dynamic(%a: memref<?x96xf32>, %q: index, %b: index) -> memref<?x?x96xf32> {
  %e = memref.expand_shape %a [[0, 1], [2]] output_shape [%q, %b, 96] : memref<?x96xf32> into memref<?x?x96xf32>
  return %e : memref<?x?x96xf32>
}

// -----

// With static sizes the strides are folded: [2, 3, 2, 16] has strides
// [96, 32, 16, 1].
// CHECK-LABEL: func.func @expand_static
// CHECK-SAME: (%[[A:[^:]+]]: memref<6x32xf32>)
// CHECK: %[[BASE:[^,]+]], %{{.+}} = memref.extract_strided_metadata %[[A]]
// CHECK: memref.reinterpret_cast %[[BASE]] to offset: [0], sizes: [2, 3, 2, 16], strides: [96, 32, 16, 1] : memref<f32> to memref<2x3x2x16xf32>
// CHECK-NOT: memref.expand_shape
func.func @expand_static(%a: memref<6x32xf32>) -> memref<2x3x2x16xf32> {
  %e = memref.expand_shape %a [[0, 1], [2, 3]] output_shape [2, 3, 2, 16] : memref<6x32xf32> into memref<2x3x2x16xf32>
  return %e : memref<2x3x2x16xf32>
}

// -----

// Splitting the head dimension of a [klen, 32] buffer into [klen, 2, 16]: the
// outer stride is 32 whatever klen is.
// CHECK-LABEL: func.func @expand_heads
// CHECK-SAME: (%[[A:[^:]+]]: memref<?x32xf32>, %[[K:[^:]+]]: index)
// CHECK-NOT: arith.muli
// CHECK: memref.reinterpret_cast %{{.+}} to offset: [0], sizes: [%[[K]], 2, 16], strides: [32, 16, 1] : memref<f32> to memref<?x2x16xf32>
func.func @expand_heads(%a: memref<?x32xf32>, %k: index) -> memref<?x2x16xf32> {
  %e = memref.expand_shape %a [[0], [1, 2]] output_shape [%k, 2, 16] : memref<?x32xf32> into memref<?x2x16xf32>
  return %e : memref<?x2x16xf32>
}

// -----

// A strided source (e.g. a slice) keeps its offset, and each group's outer
// stride is the source dimension's stride times the sizes inside the group:
// [?, 96] with row stride s0 into [q, b, 96] has strides [s0·b, s0, 1].
// CHECK-LABEL: func.func @expand_strided_source
// CHECK-SAME: (%[[A:[^:]+]]: memref<?x96xf32, strided<[?, 1], offset: ?>>, %[[Q:[^:]+]]: index, %[[B:[^:]+]]: index)
// CHECK: %[[BASE:[^,]+]], %[[OFF:[^,]+]], %{{.+}}:2, %[[STR:[^:]+]]:2 = memref.extract_strided_metadata %[[A]]
// CHECK: %[[S0:.+]] = arith.muli %[[STR]]#0, %[[B]] : index
// CHECK: %[[R:.+]] = memref.reinterpret_cast %[[BASE]] to offset: [%[[OFF]]], sizes: [%[[Q]], %[[B]], 96], strides: [%[[S0]], %[[STR]]#0, 1] : memref<f32> to memref<?x?x96xf32, strided<[?, ?, 1], offset: ?>>
// CHECK-NOT: memref.expand_shape
// CHECK: return %[[R]]
func.func @expand_strided_source(%a: memref<?x96xf32, strided<[?, 1], offset: ?>>, %q: index, %b: index)
    -> memref<?x?x96xf32, strided<[?, ?, 1], offset: ?>> {
  %e = memref.expand_shape %a [[0, 1], [2]] output_shape [%q, %b, 96]
      : memref<?x96xf32, strided<[?, 1], offset: ?>> into memref<?x?x96xf32, strided<[?, ?, 1], offset: ?>>
  return %e : memref<?x?x96xf32, strided<[?, ?, 1], offset: ?>>
}

// -----

// The shifted view of the padded positional scores: the slice of
// [b·n, qlen·(klen + 1)] at column qlen, qlen·klen wide, as [b·n, qlen, klen].
// Its block stride is kept, its rows are klen apart, its offset is qlen.
// CHECK-LABEL: func.func @expand_shifted_view
// CHECK-SAME: (%[[P:[^:]+]]: memref<?x?xf32>, %[[BN:[^:]+]]: index, %[[QL:[^:]+]]: index, %[[KL:[^:]+]]: index, %[[QK:[^:]+]]: index)
// CHECK: %[[V:.+]] = memref.subview %[[P]][0, %[[QL]]] [%[[BN]], %[[QK]]] [1, 1]
// CHECK: %[[BASE:[^,]+]], %[[OFF:[^,]+]], %{{.+}}:2, %[[STR:[^:]+]]:2 = memref.extract_strided_metadata %[[V]]
// CHECK: memref.reinterpret_cast %[[BASE]] to offset: [%[[OFF]]], sizes: [%[[BN]], %[[QL]], %[[KL]]], strides: [%[[STR]]#0, %[[KL]], 1]
// CHECK-NOT: memref.expand_shape
func.func @expand_shifted_view(%p: memref<?x?xf32>, %bn: index, %ql: index, %kl: index, %qk: index)
    -> memref<?x?x?xf32, strided<[?, ?, 1], offset: ?>> {
  %v = memref.subview %p[0, %ql] [%bn, %qk] [1, 1] : memref<?x?xf32> to memref<?x?xf32, strided<[?, 1], offset: ?>>
  %e = memref.expand_shape %v [[0], [1, 2]] output_shape [%bn, %ql, %kl]
      : memref<?x?xf32, strided<[?, 1], offset: ?>> into memref<?x?x?xf32, strided<[?, ?, 1], offset: ?>>
  return %e : memref<?x?x?xf32, strided<[?, ?, 1], offset: ?>>
}

// -----

// collapse_shape is not this pass's business.
// CHECK-LABEL: func.func @collapse_untouched
// CHECK-NOT: memref.reinterpret_cast
// CHECK: memref.collapse_shape
// CHECK-NOT: memref.reinterpret_cast
// CHECK: return
func.func @collapse_untouched(%a: memref<?x?x96xf32>) -> memref<?x96xf32> {
  %c = memref.collapse_shape %a [[0, 1], [2]] : memref<?x?x96xf32> into memref<?x96xf32>
  return %c : memref<?x96xf32>
}

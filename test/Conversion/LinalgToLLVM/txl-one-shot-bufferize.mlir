// RUN: txl-opt %s --split-input-file --txl-one-shot-bufferize | FileCheck %s
// The output is upstream one-shot bufferization's, with the same settings:
// RUN: txl-opt %s --split-input-file --txl-one-shot-bufferize > %t.txl.mlir
// RUN: txl-opt %s --split-input-file \
// RUN:   --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" \
// RUN:   > %t.upstream.mlir
// RUN: diff %t.txl.mlir %t.upstream.mlir

// A write into a read-only argument (bufferization.writable = false, as
// txl-results-to-destinations marks an entry's inputs) goes to a copy; the
// attributes the analysis read are gone from the result.
// CHECK-LABEL: func.func @read_only
// CHECK-SAME: (%[[A:[^:]+]]: memref<?xf32>, %[[OUT:[^:]+]]: memref<?xf32>)
// CHECK-NOT: bufferization.writable
// CHECK: %[[COPY:.+]] = memref.alloc
// CHECK: memref.copy %[[A]], %[[COPY]]
// CHECK: memref.store %{{.+}}, %[[COPY]]
// Negative: a writable argument is written in place, without a copy.
// CHECK-NOT: memref.alloc
// CHECK: memref.store %{{.+}}, %[[OUT]]
// CHECK: return
func.func @read_only(%a: tensor<?xf32> {bufferization.writable = false},
                     %out: tensor<?xf32>) -> (tensor<?xf32>, tensor<?xf32>) {
  %c0 = arith.constant 0 : index
  %f = arith.constant 1.0 : f32
  %0 = tensor.insert %f into %a[%c0] : tensor<?xf32>
  %1 = tensor.insert %f into %out[%c0] : tensor<?xf32>
  return %0, %1 : tensor<?xf32>, tensor<?xf32>
}

// -----

// A private function called by another: function boundaries are bufferized
// with identity layouts, the callee's argument written in place.
// CHECK-LABEL: func.func private @callee
// CHECK-SAME: (%{{.+}}: memref<4xf32>) -> memref<4xf32>
// CHECK-LABEL: func.func @caller
// CHECK: call @callee(%{{.+}}) : (memref<4xf32>) -> memref<4xf32>
func.func private @callee(%t: tensor<4xf32>) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %f = arith.constant 2.0 : f32
  %0 = tensor.insert %f into %t[%c0] : tensor<4xf32>
  return %0 : tensor<4xf32>
}

func.func @caller(%t: tensor<4xf32>) -> tensor<4xf32> {
  %0 = call @callee(%t) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

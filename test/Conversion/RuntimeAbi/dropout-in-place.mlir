// RUN: txl-opt %s --split-input-file --txl-to-linalg-pipeline --txl-results-to-destinations \
// RUN:   --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" \
// RUN:   | FileCheck %s

// After bufferization, a dropout whose input has no other reader overwrites
// that input in training mode and yields it unchanged in eval mode: no copy,
// no second buffer.
// CHECK-LABEL: func.func @dropout_last_reader
// CHECK: %[[L:.+]] = memref.alloc(%{{.+}}) {{.+}} : memref<?x8xf32>
// CHECK: linalg.matmul {{.+}} outs(%[[L]] : memref<?x8xf32>)
// CHECK-NOT: memref.copy
// CHECK-NOT: memref.alloc
// CHECK: %[[R:.+]] = scf.if
// CHECK: %[[S:.+]] = memref.expand_shape %[[L]]
// CHECK: linalg.generic {{.+}} ins(%[[S]] : memref<?x2x4xf32>) outs(%[[S]] : memref<?x2x4xf32>)
// CHECK: } else {
// CHECK-NEXT: scf.yield %[[L]]
func.func @dropout_last_reader(%x: tensor<?x8xf32>, %w: tensor<8x8xf32>, %seed: i64, %offset: i64,
                               %training: i1) -> tensor<?x8xf32> attributes {llvm.emit_c_interface} {
  %l = txl.linear %x, %w : tensor<?x8xf32>, tensor<8x8xf32> -> tensor<?x8xf32>
  %y = txl.dropout %l, %seed, %offset, %training {rate = 0.1 : f64, stream = 2 : i64} : tensor<?x8xf32>
  %z = txl.relu %y : tensor<?x8xf32>
  return %z : tensor<?x8xf32>
}

// -----

// When the input is read after the dropout (here by the add), the training
// branch writes into a new buffer instead (the generic never reads its
// init, so nothing is copied); the add reads the original.
// CHECK-LABEL: func.func @dropout_input_read_later
// CHECK: %[[L:.+]] = memref.alloc(%{{.+}}) {{.+}} : memref<?x8xf32>
// CHECK: linalg.matmul {{.+}} outs(%[[L]] : memref<?x8xf32>)
// CHECK-NOT: memref.copy
// CHECK: scf.if
// CHECK: %[[S:.+]] = memref.expand_shape %[[L]]
// CHECK: %[[N:.+]] = memref.alloc(%{{.+}}) {{.+}} : memref<?x2x4xf32>
// CHECK-NOT: memref.copy
// CHECK: linalg.generic {{.+}} ins(%[[S]] : memref<?x2x4xf32>) outs(%[[N]] : memref<?x2x4xf32>)
// CHECK: linalg.generic {{.+}} ins(%{{.+}}, %[[L]] : memref<?x8xf32>, memref<?x8xf32>)
func.func @dropout_input_read_later(%x: tensor<?x8xf32>, %w: tensor<8x8xf32>, %seed: i64, %offset: i64,
                                    %training: i1) -> tensor<?x8xf32> attributes {llvm.emit_c_interface} {
  %l = txl.linear %x, %w : tensor<?x8xf32>, tensor<8x8xf32> -> tensor<?x8xf32>
  %y = txl.dropout %l, %seed, %offset, %training {rate = 0.1 : f64, stream = 2 : i64} : tensor<?x8xf32>
  %z = txl.add %y, %l : tensor<?x8xf32>
  return %z : tensor<?x8xf32>
}

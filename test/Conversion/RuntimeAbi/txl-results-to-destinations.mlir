// RUN: txl-opt %s --split-input-file --txl-results-to-destinations --verify-diagnostics | FileCheck %s

// An entry function (llvm.emit_c_interface) gets one caller-allocated tensor
// argument per result, appended after the original arguments; each returned
// value is materialized into its destination, and the original tensor
// arguments are marked non-writable (scalars get no attribute). The
// argument each result is written into is recorded for
// txl-drop-destination-results.
// CHECK-LABEL: func.func @segment
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x32xf32> {bufferization.writable = false}, %[[N:[^:]+]]: i64, %[[MEM:[^:]+]]: tensor<?x?x32xf32> {bufferization.writable = false}, %[[OUT0:[^:]+]]: tensor<?x?xf32>, %[[OUT1:[^:]+]]: tensor<?x?x32xf32>)
// CHECK-SAME: -> (tensor<?x?xf32>, tensor<?x?x32xf32>) attributes {llvm.emit_c_interface, txl.result_destinations = array<i64: 3, 4>}
// CHECK: %[[NLL:.+]] = tensor.empty
// CHECK: %[[W0:.+]] = bufferization.materialize_in_destination %[[NLL]] in %[[OUT0]] : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
// CHECK: %[[W1:.+]] = bufferization.materialize_in_destination %[[MEM]] in %[[OUT1]] : (tensor<?x?x32xf32>, tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
// CHECK: return %[[W0]], %[[W1]] : tensor<?x?xf32>, tensor<?x?x32xf32>
func.func @segment(%x: tensor<?x32xf32>, %n: i64, %mem: tensor<?x?x32xf32>) -> (tensor<?x?xf32>, tensor<?x?x32xf32>)
    attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %q = tensor.dim %x, %c0 : tensor<?x32xf32>
  %b = tensor.dim %mem, %c1 : tensor<?x?x32xf32>
  %nll = tensor.empty(%q, %b) : tensor<?x?xf32>
  return %nll, %mem : tensor<?x?xf32>, tensor<?x?x32xf32>
}

// -----

// Every return of the entry function is rewritten.
// CHECK-LABEL: func.func @two_returns
// CHECK-SAME: (%[[C:[^:]+]]: i1, %[[A:[^:]+]]: tensor<4xf32> {bufferization.writable = false}, %[[B:[^:]+]]: tensor<4xf32> {bufferization.writable = false}, %[[OUT:[^:]+]]: tensor<4xf32>)
// CHECK-SAME: txl.result_destinations = array<i64: 3>
// CHECK: ^bb1:
// CHECK-NEXT: %[[WA:.+]] = bufferization.materialize_in_destination %[[A]] in %[[OUT]]
// CHECK-NEXT: return %[[WA]]
// CHECK: ^bb2:
// CHECK-NEXT: %[[WB:.+]] = bufferization.materialize_in_destination %[[B]] in %[[OUT]]
// CHECK-NEXT: return %[[WB]]
func.func @two_returns(%c: i1, %a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> attributes {llvm.emit_c_interface} {
  cf.cond_br %c, ^bb1, ^bb2
^bb1:
  return %a : tensor<4xf32>
^bb2:
  return %b : tensor<4xf32>
}

// -----

// A result every return materializes into one of the function's arguments
// (an update in place) keeps that argument, writable, as its destination
// and gets no new one; the other results do.
// CHECK-LABEL: func.func @update_in_place
// CHECK-SAME: (%[[P:[^:]+]]: tensor<8xf32>, %[[G:[^:]+]]: tensor<8xf32> {bufferization.writable = false}, %[[OUT:[^:]+]]: tensor<1xf32>)
// CHECK-SAME: attributes {llvm.emit_c_interface, txl.result_destinations = array<i64: 0, 2>}
// CHECK: %[[NEW:.+]] = bufferization.materialize_in_destination %{{.+}} in %[[P]]
// CHECK: %[[N:.+]] = bufferization.materialize_in_destination %{{.+}} in %[[OUT]]
// CHECK: return %[[NEW]], %[[N]]
func.func @update_in_place(%p: tensor<8xf32>, %g: tensor<8xf32>) -> (tensor<8xf32>, tensor<1xf32>)
    attributes {llvm.emit_c_interface} {
  %sum = arith.addf %p, %g : tensor<8xf32>
  %new = bufferization.materialize_in_destination %sum in %p : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %n = tensor.extract_slice %g[0] [1] [1] : tensor<8xf32> to tensor<1xf32>
  return %new, %n : tensor<8xf32>, tensor<1xf32>
}

// -----

// Not in place: a return that materializes into different arguments, or
// only some returns materializing, gives the result a new destination.
// CHECK-LABEL: func.func @not_in_place
// CHECK-SAME: (%[[C:[^:]+]]: i1, %[[A:[^:]+]]: tensor<4xf32> {bufferization.writable = false}, %[[B:[^:]+]]: tensor<4xf32> {bufferization.writable = false}, %[[OUT0:[^:]+]]: tensor<4xf32>, %[[OUT1:[^:]+]]: tensor<4xf32>)
// CHECK-SAME: txl.result_destinations = array<i64: 3, 4>
// CHECK: ^bb1:
// CHECK: %[[W0:.+]] = bufferization.materialize_in_destination %{{.+}} in %[[OUT0]]
// CHECK: %[[W1:.+]] = bufferization.materialize_in_destination %{{.+}} in %[[OUT1]]
// CHECK-NEXT: return %[[W0]], %[[W1]]
func.func @not_in_place(%c: i1, %a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    attributes {llvm.emit_c_interface} {
  %ma = bufferization.materialize_in_destination %b in %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %mb = bufferization.materialize_in_destination %a in %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  cf.cond_br %c, ^bb1, ^bb2
^bb1:
  return %ma, %ma : tensor<4xf32>, tensor<4xf32>
^bb2:
  return %mb, %b : tensor<4xf32>, tensor<4xf32>
}

// -----

// Two results written into the same argument: only the first keeps it.
// CHECK-LABEL: func.func @same_argument_twice
// CHECK-SAME: (%[[P:[^:]+]]: tensor<4xf32>, %[[OUT:[^:]+]]: tensor<4xf32>)
// CHECK-SAME: txl.result_destinations = array<i64: 0, 1>
// CHECK: %[[W:.+]] = bufferization.materialize_in_destination %[[M:.+]] in %[[OUT]]
// CHECK-NEXT: return %[[M]], %[[W]]
func.func @same_argument_twice(%p: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    attributes {llvm.emit_c_interface} {
  %m = bufferization.materialize_in_destination %p in %p : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %m, %m : tensor<4xf32>, tensor<4xf32>
}

// -----

// A result computed from an empty tensor through destination-passing ops
// and a loop's iteration argument (each value used once) is computed in its
// out tensor: the out tensor replaces the empty one, and the result is
// returned as computed (recorded in txl.built_in_destination), with no
// materialization. The other result is materialized as usual.
// CHECK-LABEL: func.func @built_in_destination
// CHECK-SAME: (%[[X:[^:]+]]: tensor<8x4xf32> {bufferization.writable = false}, %[[OUT0:[^:]+]]: tensor<8x4xf32>, %[[OUT1:[^:]+]]: tensor<8x4xf32>)
// CHECK-SAME: attributes {llvm.emit_c_interface, txl.built_in_destination = array<i64: 0>, txl.result_destinations = array<i64: 1, 2>}
// CHECK-NOT: tensor.empty
// CHECK: %[[R:.+]] = scf.for {{.+}} iter_args(%{{.+}} = %[[OUT0]])
// CHECK: %[[W1:.+]] = bufferization.materialize_in_destination %[[X]] in %[[OUT1]]
// CHECK-NEXT: return %[[R]], %[[W1]]
func.func @built_in_destination(%x: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>)
    attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x4xf32>
  %r = scf.for %i = %c0 to %c8 step %c2 iter_args(%acc = %e) -> tensor<8x4xf32> {
    %s = tensor.extract_slice %acc[%i, 0] [2, 4] [1, 1] : tensor<8x4xf32> to tensor<2x4xf32>
    %f = linalg.fill ins(%zero : f32) outs(%s : tensor<2x4xf32>) -> tensor<2x4xf32>
    %xi = tensor.extract_slice %x[%i, 0] [2, 4] [1, 1] : tensor<8x4xf32> to tensor<2x4xf32>
    %g = linalg.add ins(%xi, %xi : tensor<2x4xf32>, tensor<2x4xf32>) outs(%f : tensor<2x4xf32>) -> tensor<2x4xf32>
    %u = tensor.insert_slice %g into %acc[%i, 0] [2, 4] [1, 1] : tensor<2x4xf32> into tensor<8x4xf32>
    scf.yield %u : tensor<8x4xf32>
  }
  return %r, %x : tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// Not built in the destination: a value on the chain is also read elsewhere
// (the filled tensor is returned too), or the chain passes through an op
// that is not destination-passing (a reshape), or the result is an empty
// tensor itself.
// CHECK-LABEL: func.func @read_twice
// CHECK-NOT: txl.built_in_destination
// CHECK: tensor.empty
// CHECK: bufferization.materialize_in_destination
// CHECK: bufferization.materialize_in_destination
func.func @read_twice(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    attributes {llvm.emit_c_interface} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %s = linalg.add ins(%x, %x : tensor<4xf32>, tensor<4xf32>) outs(%f : tensor<4xf32>) -> tensor<4xf32>
  return %s, %f : tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @through_reshape
// CHECK-NOT: txl.built_in_destination
// CHECK: tensor.empty
// CHECK: bufferization.materialize_in_destination
func.func @through_reshape(%x: tensor<4xf32>) -> tensor<2x2xf32>
    attributes {llvm.emit_c_interface} {
  %e = tensor.empty() : tensor<4xf32>
  %s = linalg.add ins(%x, %x : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %r = tensor.expand_shape %s [[0, 1]] output_shape [2, 2] : tensor<4xf32> into tensor<2x2xf32>
  return %r : tensor<2x2xf32>
}

// -----

// Functions without llvm.emit_c_interface, and external declarations, are
// left alone.
// CHECK-LABEL: func.func @helper
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?xf32>) -> tensor<?xf32> {
// CHECK-NOT: bufferization
// CHECK: return %[[X]] : tensor<?xf32>
// CHECK-LABEL: func.func private @external(tensor<?xf32>) -> tensor<?xf32> attributes {llvm.emit_c_interface}
func.func @helper(%x: tensor<?xf32>) -> tensor<?xf32> {
  return %x : tensor<?xf32>
}
func.func private @external(%x: tensor<?xf32>) -> tensor<?xf32> attributes {llvm.emit_c_interface}

// -----

// A private function's results of static shape (a layer's parameter
// gradients) get out arguments, which each call passes as an empty tensor;
// an entry returning such a result computes it in its own out tensor
// through the call, so the layer writes the runtime's buffer. The result of
// dynamic shape (the caller cannot size it), the one returning an argument
// and the public function's stay results.
// CHECK-LABEL: func.func private @layer_grad
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x4xf32>, %[[W:[^:]+]]: tensor<4x4xf32>, %[[OUT:[^:]+]]: tensor<4x4xf32>) -> (tensor<?x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) {
// CHECK-NOT: txl.out_arguments
// CHECK: %[[Z:.+]] = linalg.fill {{.*}} outs(%[[OUT]] : tensor<4x4xf32>)
// CHECK: %[[G:.+]] = linalg.matmul {{.*}} outs(%[[Z]] : tensor<4x4xf32>)
// CHECK: return %{{.+}}, %[[G]], %[[W]]
// CHECK-LABEL: func.func @segment_grad
// CHECK-SAME: (%[[X2:[^:]+]]: tensor<?x4xf32> {bufferization.writable = false}, %[[W2:[^:]+]]: tensor<4x4xf32> {bufferization.writable = false}, %[[D0:[^:]+]]: tensor<?x4xf32>, %[[D1:[^:]+]]: tensor<4x4xf32>)
// CHECK: %[[E:.+]] = tensor.empty() : tensor<4x4xf32>
// CHECK: %[[R0:.+]]:3 = call @layer_grad(%[[X2]], %[[W2]], %[[E]])
// CHECK: %[[R1:.+]]:3 = call @layer_grad(%[[R0]]#0, %[[W2]], %[[D1]])
// CHECK: return %{{.+}}, %[[R1]]#1 :
func.func private @layer_grad(%x: tensor<?x4xf32>, %w: tensor<4x4xf32>) -> (tensor<?x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %g = linalg.matmul ins(%w, %w : tensor<4x4xf32>, tensor<4x4xf32>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
  %y = linalg.matmul ins(%x, %w : tensor<?x4xf32>, tensor<4x4xf32>) outs(%x : tensor<?x4xf32>) -> tensor<?x4xf32>
  return %y, %g, %w : tensor<?x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
}
func.func @segment_grad(%x: tensor<?x4xf32>, %w: tensor<4x4xf32>) -> (tensor<?x4xf32>, tensor<4x4xf32>)
    attributes {llvm.emit_c_interface} {
  %r0:3 = func.call @layer_grad(%x, %w) : (tensor<?x4xf32>, tensor<4x4xf32>) -> (tensor<?x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>)
  %r1:3 = func.call @layer_grad(%r0#0, %w) : (tensor<?x4xf32>, tensor<4x4xf32>) -> (tensor<?x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>)
  return %r1#0, %r1#1 : tensor<?x4xf32>, tensor<4x4xf32>
}

// -----

// A private function whose symbol is used other than by a call (here, a
// reference in an attribute) keeps its results.
// CHECK-LABEL: func.func private @referenced
// CHECK-SAME: () -> tensor<4xf32> {
// CHECK: func.func @referencing
// CHECK: call @referenced() : () -> tensor<4xf32>
func.func private @referenced() -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  return %e : tensor<4xf32>
}
func.func @referencing() attributes {uses = @referenced} {
  %r = func.call @referenced() : () -> tensor<4xf32>
  return
}

// -----

// A result that is not a ranked tensor cannot be given a destination (an
// entry returns tensors or scalars, not both).
// expected-error @+1 {{'func.func' op txl-results-to-destinations: every result must be a ranked tensor}}
func.func @scalar_result(%t: tensor<4xf32>, %x: f32) -> (tensor<4xf32>, f32) attributes {llvm.emit_c_interface} {
  return %t, %x : tensor<4xf32>, f32
}

// -----

// An entry function may not be called inside the module: its signature changes.
// expected-error @+1 {{'func.func' op txl-results-to-destinations: an entry function (llvm.emit_c_interface) must not be called inside the module}}
func.func @entry(%x: tensor<?xf32>) -> tensor<?xf32> attributes {llvm.emit_c_interface} {
  return %x : tensor<?xf32>
}
func.func @caller(%b: tensor<?xf32>) -> tensor<?xf32> {
  %r = func.call @entry(%b) : (tensor<?xf32>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// -----

// An entry whose results are all scalars (the learning-rate schedule's f64)
// keeps them: the C interface returns them by value, no destination.
// CHECK-LABEL: func.func @learning_rate(%arg0: i64, %arg1: f64) -> f64 attributes {llvm.emit_c_interface}
// CHECK-NEXT: %[[LR:.+]] = arith.mulf %arg1, %arg1 : f64
// CHECK-NEXT: return %[[LR]] : f64
func.func @learning_rate(%step: i64, %lr: f64) -> f64 attributes {llvm.emit_c_interface} {
  %0 = arith.mulf %lr, %lr : f64
  return %0 : f64
}

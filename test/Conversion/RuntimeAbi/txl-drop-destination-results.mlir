// RUN: txl-opt %s --split-input-file --txl-drop-destination-results --verify-diagnostics | FileCheck %s
// RUN: txl-opt %S/../Inputs/entry-on-tensors.mlir --txl-results-to-destinations \
// RUN:   --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" \
// RUN:   --txl-drop-destination-results --canonicalize | FileCheck %s --check-prefix=CHAIN

// A bufferized entry function that returns its out buffers returns nothing.
// CHECK-LABEL: func.func @segment
// CHECK-SAME: (%[[X:[^:]+]]: memref<?x32xf32>, %[[OUT0:[^:]+]]: memref<?x32xf32>, %[[OUT1:[^:]+]]: memref<?xf32>) attributes {llvm.emit_c_interface} {
// CHECK: memref.copy %[[X]], %[[OUT0]]
// CHECK-NEXT: return{{$}}
func.func @segment(%x: memref<?x32xf32>, %out0: memref<?x32xf32>, %out1: memref<?xf32>) -> (memref<?x32xf32>, memref<?xf32>)
    attributes {llvm.emit_c_interface} {
  memref.copy %x, %out0 : memref<?x32xf32> to memref<?x32xf32>
  return %out0, %out1 : memref<?x32xf32>, memref<?xf32>
}

// After --txl-results-to-destinations and one-shot bufferization (the
// pipeline's order, on Inputs/entry-on-tensors.mlir, then the canonicalizer
// the pipeline runs later) the chain yields the runtime's ABI: outputs
// written into the appended buffers, no results.
// CHAIN-LABEL: func.func @segment
// CHAIN-SAME: (%[[X:[^:]+]]: memref<?x32xf32>, %[[MEM:[^:]+]]: memref<?xf32>, %[[D0:[^:]+]]: memref<?x32xf32>, %[[D1:[^:]+]]: memref<?xf32>) attributes {llvm.emit_c_interface} {
// CHAIN: memref.copy %{{.+}}, %[[D0]]
// CHAIN-NEXT: memref.copy %[[MEM]], %[[D1]]
// CHAIN-NEXT: return{{$}}
// An update in place (the optimizer's form): the elementwise product is
// computed in the parameter's own buffer, no copy (bufferization's copy of
// the buffer onto itself canonicalizes away), and only the norm gets a
// destination.
// CHAIN-LABEL: func.func @update_in_place
// CHAIN-SAME: (%[[P:[^:]+]]: memref<8xf32>, %[[G:[^:]+]]: memref<8xf32>, %[[N:[^:]+]]: memref<1xf32>) attributes {llvm.emit_c_interface} {
// CHAIN-NOT: memref.alloc
// CHAIN: linalg.generic {{.+}} ins(%[[G]] : memref<8xf32>) outs(%[[P]] : memref<8xf32>)
// CHAIN-NOT: memref.copy %{{.+}}, %[[P]]
// CHAIN: memref.copy %{{.+}}, %[[N]]
// CHAIN-NEXT: return{{$}}
// A gradient accumulated block by block from an empty tensor is computed in
// the caller's buffer: no allocation, no copy at the return.
// CHAIN-LABEL: func.func @blocks
// CHAIN-SAME: (%[[X:[^:]+]]: memref<8x4xf32>, %[[D:[^:]+]]: memref<8x4xf32>) attributes {llvm.emit_c_interface} {
// CHAIN-NOT: memref.alloc
// CHAIN: %[[S:.+]] = memref.subview %[[D]]
// CHAIN: linalg.fill {{.+}} outs(%[[S]]
// CHAIN-NOT: memref.copy %{{.+}}, %[[D]] :
// CHAIN: return{{$}}

// -----

// With txl-results-to-destinations' record, a result may be written into any
// argument (here the first: an update in place); the record is removed.
// CHECK-LABEL: func.func @recorded
// CHECK-SAME: (%[[P:[^:]+]]: memref<8xf32>, %[[OUT:[^:]+]]: memref<1xf32>) attributes {llvm.emit_c_interface} {
// CHECK-NEXT: return{{$}}
func.func @recorded(%p: memref<8xf32>, %out: memref<1xf32>) -> (memref<8xf32>, memref<1xf32>)
    attributes {llvm.emit_c_interface, txl.result_destinations = array<i64: 0, 1>} {
  return %p, %out : memref<8xf32>, memref<1xf32>
}

// -----

// A result that is not the argument recorded for it is an error.
func.func @recorded_elsewhere(%p: memref<8xf32>, %q: memref<8xf32>) -> memref<8xf32>
    attributes {llvm.emit_c_interface, txl.result_destinations = array<i64: 0>} {
  // expected-error @+1 {{'func.return' op txl-drop-destination-results: result 0 is not its caller-provided buffer (argument 0)}}
  return %q : memref<8xf32>
}

// -----

// Functions without llvm.emit_c_interface keep their results.
// CHECK-LABEL: func.func @helper
// CHECK-SAME: (%[[X:[^:]+]]: memref<?xf32>) -> memref<?xf32> {
// CHECK: return %[[X]] : memref<?xf32>
func.func @helper(%x: memref<?xf32>) -> memref<?xf32> {
  return %x : memref<?xf32>
}

// -----

// A loop result that only carries the destination (every iteration yields
// its iteration argument, here through a nested loop) counts as the
// destination.
// CHECK-LABEL: func.func @carried
// CHECK-SAME: (%[[N:[^:]+]]: index, %[[OUT:[^:]+]]: memref<4xf32>) attributes {llvm.emit_c_interface} {
// CHECK: scf.for
// CHECK: return{{$}}
func.func @carried(%n: index, %out: memref<4xf32>) -> memref<4xf32>
    attributes {llvm.emit_c_interface, txl.result_destinations = array<i64: 1>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f32
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %out) -> memref<4xf32> {
    %inner = scf.for %j = %c0 to %n step %c1 iter_args(%b = %a) -> memref<4xf32> {
      memref.store %one, %b[%c0] : memref<4xf32>
      scf.yield %b : memref<4xf32>
    }
    scf.yield %inner : memref<4xf32>
  }
  return %r : memref<4xf32>
}

// -----

// A loop that yields another buffer does not carry the destination.
func.func @not_carried(%n: index, %other: memref<4xf32>, %out: memref<4xf32>) -> memref<4xf32>
    attributes {llvm.emit_c_interface, txl.result_destinations = array<i64: 2>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %out) -> memref<4xf32> {
    scf.yield %other : memref<4xf32>
  }
  // expected-error @+1 {{'func.return' op txl-drop-destination-results: result 0 is not its caller-provided buffer (argument 2)}}
  return %r : memref<4xf32>
}

// -----

// A result listed as built in its destination that bufferization placed in
// another buffer after all is copied into the destination.
// CHECK-LABEL: func.func @built_in_elsewhere
// CHECK-SAME: (%[[N:[^:]+]]: index, %[[OUT:[^:]+]]: memref<?xf32>) attributes {llvm.emit_c_interface} {
// CHECK: %[[A:.+]] = memref.alloc
// CHECK-NEXT: memref.copy %[[A]], %[[OUT]]
// CHECK-NEXT: return{{$}}
func.func @built_in_elsewhere(%n: index, %out: memref<?xf32>) -> memref<?xf32>
    attributes {llvm.emit_c_interface, txl.built_in_destination = array<i64: 0>,
                txl.result_destinations = array<i64: 1>} {
  %a = memref.alloc(%n) : memref<?xf32>
  return %a : memref<?xf32>
}

// -----

// An entry function that returns a buffer it allocated is an error: the
// caller would not own it.
func.func @fresh_buffer(%n: index) -> memref<?xf32> attributes {llvm.emit_c_interface} {
  %a = memref.alloc(%n) : memref<?xf32>
  // expected-error @+1 {{'func.return' op txl-drop-destination-results: result 0 is not its caller-provided buffer (argument 0)}}
  return %a : memref<?xf32>
}

// -----

// Returning an input instead of the destination buffer is an error too: the
// out buffer would never be written.
func.func @returns_input(%x: memref<?xf32>, %out: memref<?xf32>) -> memref<?xf32> attributes {llvm.emit_c_interface} {
  // expected-error @+1 {{'func.return' op txl-drop-destination-results: result 0 is not its caller-provided buffer (argument 1)}}
  return %x : memref<?xf32>
}

// -----

// An entry function may not be called inside the module: its signature changes.
// expected-error @+1 {{'func.func' op txl-drop-destination-results: an entry function (llvm.emit_c_interface) must not be called inside the module}}
func.func @entry(%out: memref<?xf32>) -> memref<?xf32> attributes {llvm.emit_c_interface} {
  return %out : memref<?xf32>
}
func.func @caller(%b: memref<?xf32>) -> memref<?xf32> {
  %r = func.call @entry(%b) : (memref<?xf32>) -> memref<?xf32>
  return %r : memref<?xf32>
}

// -----

// An entry whose results are all scalars keeps them (there is no buffer to
// drop).
// CHECK-LABEL: func.func @learning_rate(%arg0: i64, %arg1: f64) -> f64 attributes {llvm.emit_c_interface}
// CHECK-NEXT: return %arg1 : f64
func.func @learning_rate(%step: i64, %lr: f64) -> f64 attributes {llvm.emit_c_interface} {
  return %lr : f64
}

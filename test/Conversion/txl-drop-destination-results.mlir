// RUN: txl-opt %s --split-input-file --txl-drop-destination-results --verify-diagnostics | FileCheck %s
// RUN: txl-opt %S/Inputs/entry-on-tensors.mlir --txl-results-to-destinations \
// RUN:   --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" \
// RUN:   --txl-drop-destination-results | FileCheck %s --check-prefix=CHAIN

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
// pipeline's order, on Inputs/entry-on-tensors.mlir) the chain yields the
// runtime's ABI: outputs written into the appended buffers, no results.
// CHAIN-LABEL: func.func @segment
// CHAIN-SAME: (%[[X:[^:]+]]: memref<?x32xf32>, %[[MEM:[^:]+]]: memref<?xf32>, %[[D0:[^:]+]]: memref<?x32xf32>, %[[D1:[^:]+]]: memref<?xf32>) attributes {llvm.emit_c_interface} {
// CHAIN: memref.copy %{{.+}}, %[[D0]]
// CHAIN-NEXT: memref.copy %[[MEM]], %[[D1]]
// CHAIN-NEXT: return{{$}}

// -----

// Functions without llvm.emit_c_interface keep their results.
// CHECK-LABEL: func.func @helper
// CHECK-SAME: (%[[X:[^:]+]]: memref<?xf32>) -> memref<?xf32> {
// CHECK: return %[[X]] : memref<?xf32>
func.func @helper(%x: memref<?xf32>) -> memref<?xf32> {
  return %x : memref<?xf32>
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

// RUN: txl-opt %s --split-input-file --txl-split-unique-deallocs | FileCheck %s
// RUN: txl-opt %s --split-input-file --txl-split-unique-deallocs \
// RUN:   --bufferization-lower-deallocations --canonicalize | FileCheck %s --check-prefix=LOWERED
// RUN: txl-opt %s --split-input-file --bufferization-lower-deallocations \
// RUN:   --canonicalize | FileCheck %s --check-prefix=UPSTREAM

// Every result of @layer is its own allocation, so the caller's buffers are
// freed one by one: the local allocation and both results of both calls.
// CHECK-LABEL: func.func @caller
// CHECK-SAME: (%[[X:[^:]+]]: memref<?xf32>)
// CHECK-DAG: bufferization.dealloc (%[[A:[^ ]+]] : memref<?xf32>) if (%true)
// CHECK-DAG: bufferization.dealloc (%[[B0:[^ ]+]] : memref<f32>) if (%true)
// CHECK-DAG: bufferization.dealloc (%[[B1:[^ ]+]] : memref<f32>) if (%true)
// CHECK-DAG: bufferization.dealloc (%[[C0:[^ ]+]] : memref<f32>) if (%true)
// CHECK-DAG: bufferization.dealloc (%[[C1:[^ ]+]] : memref<f32>) if (%true)
// CHECK: return
// Lowered, they are plain frees: no helper compares the pointers.
// LOWERED-LABEL: func.func @caller
// LOWERED-COUNT-5: memref.dealloc
// LOWERED-NOT: call @dealloc_helper
// LOWERED: return
// Without the pass, upstream lowering checks every pair at run time.
// UPSTREAM-LABEL: func.func @caller
// UPSTREAM: call @dealloc_helper
func.func private @layer(%x: memref<?xf32>) -> (memref<4xf32>, memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  %a = memref.alloc() : memref<4xf32>
  %b = memref.alloc(%n) : memref<?xf32>
  memref.copy %x, %b : memref<?xf32> to memref<?xf32>
  return %a, %b : memref<4xf32>, memref<?xf32>
}
func.func @caller(%x: memref<?xf32>) {
  %true = arith.constant true
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  %a = memref.alloc(%n) : memref<?xf32>
  %r:2 = call @layer(%a) : (memref<?xf32>) -> (memref<4xf32>, memref<?xf32>)
  %s:2 = call @layer(%r#1) : (memref<?xf32>) -> (memref<4xf32>, memref<?xf32>)
  %b0, %o0, %sz0, %st0 = memref.extract_strided_metadata %r#0 : memref<4xf32> -> memref<f32>, index, index, index
  %b1, %o1, %sz1, %st1 = memref.extract_strided_metadata %r#1 : memref<?xf32> -> memref<f32>, index, index, index
  %c0b, %o2, %sz2, %st2 = memref.extract_strided_metadata %s#0 : memref<4xf32> -> memref<f32>, index, index, index
  %c1b, %o3, %sz3, %st3 = memref.extract_strided_metadata %s#1 : memref<?xf32> -> memref<f32>, index, index, index
  bufferization.dealloc (%a, %b0, %b1, %c0b, %c1b : memref<?xf32>, memref<f32>, memref<f32>, memref<f32>, memref<f32>) if (%true, %true, %true, %true, %true)
  return
}

// -----

// A callee that returns one allocation twice: neither result is unique,
// and they stay together, checked against each other at run time.
// CHECK-LABEL: func.func @twice_caller
// CHECK: bufferization.dealloc (%{{[^ ]+}}, %{{[^ ]+}} : memref<f32>, memref<f32>) if (%true, %true)
// CHECK-NEXT: return
func.func private @twice() -> (memref<4xf32>, memref<4xf32>) {
  %a = memref.alloc() : memref<4xf32>
  return %a, %a : memref<4xf32>, memref<4xf32>
}
func.func @twice_caller() {
  %true = arith.constant true
  %r:2 = call @twice() : () -> (memref<4xf32>, memref<4xf32>)
  %b0, %o0, %sz0, %st0 = memref.extract_strided_metadata %r#0 : memref<4xf32> -> memref<f32>, index, index, index
  %b1, %o1, %sz1, %st1 = memref.extract_strided_metadata %r#1 : memref<4xf32> -> memref<f32>, index, index, index
  bufferization.dealloc (%b0, %b1 : memref<f32>, memref<f32>) if (%true, %true)
  return
}

// -----

// A callee that may return its argument: its result may be the caller's
// allocation passed in, so both stay in one dealloc; the allocation no call
// received is freed alone.
// CHECK-LABEL: func.func @passthrough_caller
// CHECK-DAG: bufferization.dealloc (%[[OTHER:alloc[_0-9]*]] : memref<4xf32>) if (%true)
// CHECK-DAG: bufferization.dealloc (%alloc, %{{[^ ]+}} : memref<4xf32>, memref<f32>) if (%true, %true)
// CHECK: return
func.func private @passthrough(%x: memref<4xf32>, %c: i1) -> memref<4xf32> {
  %r = scf.if %c -> memref<4xf32> {
    %a = memref.alloc() : memref<4xf32>
    scf.yield %a : memref<4xf32>
  } else {
    scf.yield %x : memref<4xf32>
  }
  return %r : memref<4xf32>
}
func.func @passthrough_caller(%c: i1) {
  %true = arith.constant true
  %a = memref.alloc() : memref<4xf32>
  %other = memref.alloc() : memref<4xf32>
  %r = call @passthrough(%a, %c) : (memref<4xf32>, i1) -> memref<4xf32>
  %b, %o, %sz, %st = memref.extract_strided_metadata %r : memref<4xf32> -> memref<f32>, index, index, index
  bufferization.dealloc (%a, %b, %other : memref<4xf32>, memref<f32>, memref<4xf32>) if (%true, %true, %true)
  return
}

// -----

// The form ownership-based deallocation gives a returned value of ambiguous
// ownership (dropout: a new buffer when training, else the input, itself
// returned too): returned as is where owned, else cloned. Where owned, it is
// never the other returned buffer, so both results are unique.
// CHECK-LABEL: func.func @dropout_caller
// CHECK-DAG: bufferization.dealloc (%{{[^ ]+}} : memref<f32>) if (%true)
// CHECK-DAG: bufferization.dealloc (%{{[^ ]+}} : memref<f32>) if (%true)
// CHECK: return
func.func private @dropout(%c: i1) -> (memref<4xf32>, memref<4xf32>) {
  %true = arith.constant true
  %false = arith.constant false
  %x = memref.alloc() : memref<4xf32>
  %r:2 = scf.if %c -> (memref<4xf32>, i1) {
    %a = memref.alloc() : memref<4xf32>
    scf.yield %a, %true : memref<4xf32>, i1
  } else {
    scf.yield %x, %false : memref<4xf32>, i1
  }
  %owned = scf.if %r#1 -> memref<4xf32> {
    scf.yield %r#0 : memref<4xf32>
  } else {
    %copy = bufferization.clone %r#0 : memref<4xf32> to memref<4xf32>
    scf.yield %copy : memref<4xf32>
  }
  return %x, %owned : memref<4xf32>, memref<4xf32>
}
func.func @dropout_caller(%c: i1) {
  %true = arith.constant true
  %r:2 = call @dropout(%c) : (i1) -> (memref<4xf32>, memref<4xf32>)
  %b0, %o0, %sz0, %st0 = memref.extract_strided_metadata %r#0 : memref<4xf32> -> memref<f32>, index, index, index
  %b1, %o1, %sz1, %st1 = memref.extract_strided_metadata %r#1 : memref<4xf32> -> memref<f32>, index, index, index
  bufferization.dealloc (%b0, %b1 : memref<f32>, memref<f32>) if (%true, %true)
  return
}

// -----

// The same form where the branch yielding the other returned buffer claims
// ownership: the results may be one buffer, and stay together.
// CHECK-LABEL: func.func @owned_input_caller
// CHECK: bufferization.dealloc (%{{[^ ]+}}, %{{[^ ]+}} : memref<f32>, memref<f32>) if (%true, %true)
// CHECK-NEXT: return
func.func private @owned_input(%c: i1) -> (memref<4xf32>, memref<4xf32>) {
  %true = arith.constant true
  %x = memref.alloc() : memref<4xf32>
  %r:2 = scf.if %c -> (memref<4xf32>, i1) {
    %a = memref.alloc() : memref<4xf32>
    scf.yield %a, %true : memref<4xf32>, i1
  } else {
    scf.yield %x, %true : memref<4xf32>, i1
  }
  %owned = scf.if %r#1 -> memref<4xf32> {
    scf.yield %r#0 : memref<4xf32>
  } else {
    %copy = bufferization.clone %r#0 : memref<4xf32> to memref<4xf32>
    scf.yield %copy : memref<4xf32>
  }
  return %x, %owned : memref<4xf32>, memref<4xf32>
}
func.func @owned_input_caller(%c: i1) {
  %true = arith.constant true
  %r:2 = call @owned_input(%c) : (i1) -> (memref<4xf32>, memref<4xf32>)
  %b0, %o0, %sz0, %st0 = memref.extract_strided_metadata %r#0 : memref<4xf32> -> memref<f32>, index, index, index
  %b1, %o1, %sz1, %st1 = memref.extract_strided_metadata %r#1 : memref<4xf32> -> memref<f32>, index, index, index
  bufferization.dealloc (%b0, %b1 : memref<f32>, memref<f32>) if (%true, %true)
  return
}

// -----

// A retained value this pass cannot follow (a loop-carried buffer) may be
// any of the memrefs: the op is left as it is. Upstream lowering keeps the
// helper for it.
// CHECK-LABEL: func.func @unknown_retained
// CHECK: %{{.+}} = bufferization.dealloc (%alloc, %alloc_0 : memref<4xf32>, memref<4xf32>) if (%true, %true) retain (%{{.+}} : memref<4xf32>)
func.func @unknown_retained(%n: index) -> memref<4xf32> {
  %true = arith.constant true
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = memref.alloc() : memref<4xf32>
  %b = memref.alloc() : memref<4xf32>
  %l = scf.for %i = %c0 to %n step %c1 iter_args(%it = %a) -> memref<4xf32> {
    scf.yield %b : memref<4xf32>
  }
  %u = bufferization.dealloc (%a, %b : memref<4xf32>, memref<4xf32>) if (%true, %true) retain (%l : memref<4xf32>)
  return %l : memref<4xf32>
}

// -----

// A declared function's results may be anything: they are never unique.
// CHECK-LABEL: func.func @external_caller
// CHECK: bufferization.dealloc (%{{[^ ]+}}, %{{[^ ]+}} : memref<f32>, memref<f32>) if (%true, %true)
// CHECK-NEXT: return
func.func private @external() -> (memref<4xf32>, memref<4xf32>)
func.func @external_caller() {
  %true = arith.constant true
  %r:2 = call @external() : () -> (memref<4xf32>, memref<4xf32>)
  %b0, %o0, %sz0, %st0 = memref.extract_strided_metadata %r#0 : memref<4xf32> -> memref<f32>, index, index, index
  %b1, %o1, %sz1, %st1 = memref.extract_strided_metadata %r#1 : memref<4xf32> -> memref<f32>, index, index, index
  bufferization.dealloc (%b0, %b1 : memref<f32>, memref<f32>) if (%true, %true)
  return
}

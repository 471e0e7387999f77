// RUN: txl-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(txl-free-after-last-use))' | FileCheck %s

// A layer's saved buffers (call results, freed through the base buffer of
// their metadata, as --bufferization-lower-deallocations leaves them) are
// freed right after the call that reads them last, not at the end of the
// block: the metadata extraction moves with the dealloc. A buffer passed to
// a call whose result outlives it is not kept for that result (a call's
// results never alias its operands).
// CHECK-LABEL: func.func @saved
// CHECK: %[[S:.+]]:2 = call @layer_fwd
// CHECK-NEXT: %[[T:.+]]:2 = call @layer_fwd(%[[S]]#0)
// CHECK-NEXT: call @layer_grad(%[[T]]#0, %[[T]]#1)
// CHECK-DAG: %[[TB0:[^,]+]], {{.+}} = memref.extract_strided_metadata %[[T]]#0
// CHECK-DAG: memref.dealloc %[[TB0]]
// CHECK-DAG: %[[TB1:[^,]+]], {{.+}} = memref.extract_strided_metadata %[[T]]#1
// CHECK-DAG: memref.dealloc %[[TB1]]
// CHECK: call @layer_grad(%[[S]]#0, %[[S]]#1)
// CHECK-DAG: %[[SB0:[^,]+]], {{.+}} = memref.extract_strided_metadata %[[S]]#0
// CHECK-DAG: memref.dealloc %[[SB0]]
// CHECK-DAG: %[[SB1:[^,]+]], {{.+}} = memref.extract_strided_metadata %[[S]]#1
// CHECK-DAG: memref.dealloc %[[SB1]]
// CHECK: call @other
// CHECK-NEXT: return
func.func private @layer_fwd(memref<?xf32>) -> (memref<?xf32>, memref<?xf32>)
func.func private @layer_grad(memref<?xf32>, memref<?xf32>)
func.func private @other()
func.func @saved(%x: memref<?xf32>) {
  %s:2 = call @layer_fwd(%x) : (memref<?xf32>) -> (memref<?xf32>, memref<?xf32>)
  %t:2 = call @layer_fwd(%s#0) : (memref<?xf32>) -> (memref<?xf32>, memref<?xf32>)
  call @layer_grad(%t#0, %t#1) : (memref<?xf32>, memref<?xf32>) -> ()
  call @layer_grad(%s#0, %s#1) : (memref<?xf32>, memref<?xf32>) -> ()
  call @other() : () -> ()
  %b0, %o0, %n0, %st0 = memref.extract_strided_metadata %s#0 : memref<?xf32> -> memref<f32>, index, index, index
  memref.dealloc %b0 : memref<f32>
  %b1, %o1, %n1, %st1 = memref.extract_strided_metadata %s#1 : memref<?xf32> -> memref<f32>, index, index, index
  memref.dealloc %b1 : memref<f32>
  %b2, %o2, %n2, %st2 = memref.extract_strided_metadata %t#0 : memref<?xf32> -> memref<f32>, index, index, index
  memref.dealloc %b2 : memref<f32>
  %b3, %o3, %n3, %st3 = memref.extract_strided_metadata %t#1 : memref<?xf32> -> memref<f32>, index, index, index
  memref.dealloc %b3 : memref<f32>
  return
}

// -----

// Every alias keeps the buffer: a view, a view an scf.if yields (of %a in
// one branch, %b in the other: both stay until the if's result is used),
// and an address taken as an integer, whatever is computed from it.
// CHECK-LABEL: func.func @aliases
// CHECK: %[[A:.+]] = memref.alloc() : memref<8xf32>
// CHECK: %[[B:.+]] = memref.alloc() : memref<8xf32>
// CHECK: %[[Y:.+]] = scf.if
// CHECK: call @other
// CHECK-NEXT: call @use(%[[Y]]) :
// CHECK-DAG: memref.dealloc %[[A]] : memref<8xf32>
// CHECK-DAG: memref.dealloc %[[B]] : memref<8xf32>
// CHECK: %[[D:.+]] = memref.alloc() : memref<8xf32>
// CHECK-NEXT: %[[P:.+]] = memref.extract_aligned_pointer_as_index %[[D]]
// CHECK-NEXT: call @other
// CHECK-NEXT: %[[Q:.+]] = arith.addi %[[P]]
// CHECK-NEXT: call @use_address(%[[Q]])
// CHECK-NEXT: memref.dealloc %[[D]] : memref<8xf32>
// CHECK-NEXT: call @other
// CHECK-NEXT: return
func.func private @use(memref<4xf32, strided<[1], offset: 2>>)
func.func private @use_address(index)
func.func private @other()
func.func @aliases(%c: i1) {
  %c4 = arith.constant 4 : index
  %a = memref.alloc() : memref<8xf32>
  %v = memref.subview %a[2] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1], offset: 2>>
  call @other() : () -> ()
  call @use(%v) : (memref<4xf32, strided<[1], offset: 2>>) -> ()
  %b = memref.alloc() : memref<8xf32>
  %y = scf.if %c -> memref<4xf32, strided<[1], offset: 2>> {
    %w = memref.subview %b[2] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1], offset: 2>>
    scf.yield %w : memref<4xf32, strided<[1], offset: 2>>
  } else {
    %w = memref.subview %a[2] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1], offset: 2>>
    scf.yield %w : memref<4xf32, strided<[1], offset: 2>>
  }
  call @other() : () -> ()
  call @use(%y) : (memref<4xf32, strided<[1], offset: 2>>) -> ()
  %d = memref.alloc() : memref<8xf32>
  %p = memref.extract_aligned_pointer_as_index %d : memref<8xf32> -> index
  call @other() : () -> ()
  %q = arith.addi %p, %c4 : index
  call @use_address(%q) : (index) -> ()
  memref.dealloc %a : memref<8xf32>
  memref.dealloc %b : memref<8xf32>
  memref.dealloc %d : memref<8xf32>
  call @other() : () -> ()
  return
}

// -----

// Negative: a buffer used in the region that encloses the dealloc's block
// (after the scf.if ends) is not freed early; nor is a dealloc moved later.
// CHECK-LABEL: func.func @enclosing
// CHECK: scf.if
// CHECK-NEXT: call @other
// CHECK-NEXT: memref.dealloc
// CHECK-NEXT: }
// CHECK: call @use8
// CHECK-LABEL: func.func @already_early
// CHECK: call @use8
// CHECK-NEXT: memref.dealloc
// CHECK-NEXT: call @other
func.func private @use8(memref<8xf32>)
func.func private @other()
func.func @enclosing(%c: i1, %a: memref<8xf32>) {
  scf.if %c {
    func.call @other() : () -> ()
    memref.dealloc %a : memref<8xf32>
  }
  call @use8(%a) : (memref<8xf32>) -> ()
  return
}
func.func @already_early() {
  %a = memref.alloc() : memref<8xf32>
  call @use8(%a) : (memref<8xf32>) -> ()
  memref.dealloc %a : memref<8xf32>
  call @other() : () -> ()
  return
}

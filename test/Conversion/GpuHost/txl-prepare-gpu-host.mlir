// RUN: txl-opt %s --txl-prepare-gpu-host | FileCheck %s

// Host copies become linalg.copy (kernels later); the deallocation
// lowering's small index/i1 arrays, which only the host reads, move to the
// stack and lose their deallocations.

// CHECK-LABEL: func.func @copy
// CHECK-SAME: (%[[A:[^:]+]]: memref<?xf32>, %[[B:[^:]+]]: memref<?xf32>)
// CHECK-NEXT: linalg.copy ins(%[[A]] : memref<?xf32>) outs(%[[B]] : memref<?xf32>)
// CHECK-NEXT: return
func.func @copy(%a: memref<?xf32>, %b: memref<?xf32>) {
  memref.copy %a, %b : memref<?xf32> to memref<?xf32>
  return
}

func.func private @helper(%x: memref<?xindex>, %y: memref<?xi1>)

// CHECK-LABEL: func.func @bookkeeping
// CHECK: %[[I:.+]] = memref.alloca() : memref<2xindex>
// CHECK: %[[F:.+]] = memref.alloca() : memref<2xi1>
// CHECK: memref.store %{{.+}}, %[[I]]
// CHECK: call @helper
// CHECK-NOT: memref.dealloc
// CHECK: return
func.func @bookkeeping(%v: index, %t: i1) {
  %c0 = arith.constant 0 : index
  %i = memref.alloc() : memref<2xindex>
  %f = memref.alloc() : memref<2xi1>
  memref.store %v, %i[%c0] : memref<2xindex>
  memref.store %t, %f[%c0] : memref<2xi1>
  %ic = memref.cast %i : memref<2xindex> to memref<?xindex>
  %fc = memref.cast %f : memref<2xi1> to memref<?xi1>
  call @helper(%ic, %fc) : (memref<?xindex>, memref<?xi1>) -> ()
  memref.dealloc %i : memref<2xindex>
  memref.dealloc %f : memref<2xi1>
  return
}

// Negative cases: device data stays memref.alloc: a float buffer, a
// dynamically sized index buffer (the adaptive softmax's token lists), and
// an index buffer a kernel-bound copy reads.

// CHECK-LABEL: func.func @device
// CHECK: memref.alloc() : memref<4xf32>
// CHECK: memref.alloc(%{{.+}}) : memref<?xindex>
// CHECK: %[[S:.+]] = memref.alloc() : memref<4xindex>
// CHECK: linalg.copy ins(%[[S]]
// CHECK: memref.dealloc
func.func @device(%n: index, %out: memref<4xindex>) {
  %c0 = arith.constant 0 : index
  %x = memref.alloc() : memref<4xf32>
  %d = memref.alloc(%n) : memref<?xindex>
  %s = memref.alloc() : memref<4xindex>
  memref.copy %s, %out : memref<4xindex> to memref<4xindex>
  memref.dealloc %x : memref<4xf32>
  memref.dealloc %d : memref<?xindex>
  memref.dealloc %s : memref<4xindex>
  return
}

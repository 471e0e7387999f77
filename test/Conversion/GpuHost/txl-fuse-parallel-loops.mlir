// RUN: txl-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(txl-fuse-parallel-loops))' | FileCheck %s

// A layer's key and value appended to their windows: two elementwise loops
// of one iteration space over distinct buffers become one loop (one
// kernel), the first's body first.
// CHECK-LABEL: func.func @siblings(
// CHECK-SAME: %[[QKV:[a-z0-9]+]]: memref<?x256xf32>, %[[KW:[a-z0-9]+]]: memref<?x128xf32>, %[[VW:[a-z0-9]+]]: memref<?x128xf32>
// CHECK: scf.parallel (%[[I:.+]], %[[J:.+]]) =
// CHECK: memref.store %{{.*}}, %[[KW]][%[[I]], %[[J]]]
// CHECK: memref.store %{{.*}}, %[[VW]][%[[I]], %[[J]]]
// CHECK-NOT: scf.parallel
// CHECK: return
func.func @siblings(%qkv: memref<?x256xf32>, %kw: memref<?x128xf32>, %vw: memref<?x128xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %c128) step (%c1, %c1) {
    %k = memref.load %qkv[%i, %j] : memref<?x256xf32>
    memref.store %k, %kw[%i, %j] : memref<?x128xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %c128) step (%c1, %c1) {
    %j2 = arith.addi %j, %c128 : index
    %v = memref.load %qkv[%i, %j2] : memref<?x256xf32>
    memref.store %v, %vw[%i, %j] : memref<?x128xf32>
    scf.reduce
  }
  return
}

// -----

// Three loops of equal constant bounds (distinct constants), the second
// reading what the first wrote at the same index and the third what the
// second wrote: one loop, each work-item reading only its own writes.
// CHECK-LABEL: func.func @chain(
// CHECK: scf.parallel
// CHECK: memref.store %{{.*}}, %[[T:.+]][%[[I:.+]]] :
// CHECK: memref.load %[[T]][%[[I]]]
// CHECK: memref.store
// CHECK: memref.store
// CHECK-NOT: scf.parallel
// CHECK: return
func.func @chain(%a: memref<64xf32>, %b: memref<64xf32>, %c: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 64 : index
  %t = memref.alloc() : memref<64xf32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %x = memref.load %a[%i] : memref<64xf32>
    %y = arith.addf %x, %x : f32
    memref.store %y, %t[%i] : memref<64xf32>
    scf.reduce
  }
  %m = arith.constant 64 : index
  scf.parallel (%i) = (%c0) to (%m) step (%c1) {
    %x = memref.load %t[%i] : memref<64xf32>
    memref.store %x, %b[%i] : memref<64xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %x = memref.load %b[%i] : memref<64xf32>
    %y = arith.mulf %x, %x : f32
    memref.store %y, %c[%i] : memref<64xf32>
    scf.reduce
  }
  memref.dealloc %t : memref<64xf32>
  return
}

// -----

// Negative: the second loop reads the first's result transposed (element
// [j, i], written by another work-item): two loops.
// CHECK-LABEL: func.func @transposed(
// CHECK: scf.parallel
// CHECK: scf.parallel
func.func @transposed(%a: memref<64x64xf32>, %b: memref<64x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 64 : index
  %t = memref.alloc() : memref<64x64xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %n) step (%c1, %c1) {
    %x = memref.load %a[%i, %j] : memref<64x64xf32>
    memref.store %x, %t[%i, %j] : memref<64x64xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %n) step (%c1, %c1) {
    %x = memref.load %t[%j, %i] : memref<64x64xf32>
    memref.store %x, %b[%i, %j] : memref<64x64xf32>
    scf.reduce
  }
  return
}

// -----

// Negative: both loops write one buffer at different elements (the second
// loop's element i is the first's element i + 1's): two loops.
// CHECK-LABEL: func.func @shifted_writes(
// CHECK: scf.parallel
// CHECK: scf.parallel
func.func @shifted_writes(%a: memref<65xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %i1 = arith.addi %i, %c1 : index
    memref.store %zero, %a[%i1] : memref<65xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %x = arith.constant 1.0 : f32
    memref.store %x, %a[%i] : memref<65xf32>
    scf.reduce
  }
  return
}

// -----

// Negative: two views of one argument, which may overlap: two loops.
// CHECK-LABEL: func.func @views_of_one_buffer(
// CHECK: scf.parallel
// CHECK: scf.parallel
func.func @views_of_one_buffer(%a: memref<128xf32>, %off: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 64 : index
  %lo = memref.subview %a[0] [64] [1] : memref<128xf32> to memref<64xf32, strided<[1]>>
  %hi = memref.subview %a[%off] [64] [1] : memref<128xf32> to memref<64xf32, strided<[1], offset: ?>>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %x = memref.load %lo[%i] : memref<64xf32, strided<[1]>>
    %y = arith.addf %x, %x : f32
    memref.store %y, %lo[%i] : memref<64xf32, strided<[1]>>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %x = memref.load %hi[%i] : memref<64xf32, strided<[1], offset: ?>>
    %y = arith.mulf %x, %x : f32
    memref.store %y, %hi[%i] : memref<64xf32, strided<[1], offset: ?>>
    scf.reduce
  }
  return
}

// -----

// Negative: a body with a loop (a reduction, which
// txl-parallel-loops-to-gpu may spread over a subgroup) is left alone.
// CHECK-LABEL: func.func @reduction(
// CHECK: scf.parallel
// CHECK: scf.for
// CHECK: scf.parallel
func.func @reduction(%a: memref<64x64xf32>, %s: memref<64xf32>, %b: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 64 : index
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    scf.for %k = %c0 to %n step %c1 {
      %x = memref.load %a[%k, %i] : memref<64x64xf32>
      %acc = memref.load %s[%i] : memref<64xf32>
      %y = arith.addf %acc, %x : f32
      memref.store %y, %s[%i] : memref<64xf32>
    }
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %x = arith.constant 0.0 : f32
    memref.store %x, %b[%i] : memref<64xf32>
    scf.reduce
  }
  return
}

// -----

// Negative: an op with memory effects between the loops, and loops of
// different bounds.
// CHECK-LABEL: func.func @apart(
// CHECK: scf.parallel
// CHECK: memref.store
// CHECK: scf.parallel
// CHECK: scf.parallel
func.func @apart(%a: memref<64xf32>, %b: memref<64xf32>, %c: memref<32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 64 : index
  %m = arith.constant 32 : index
  %one = arith.constant 1.0 : f32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    memref.store %one, %a[%i] : memref<64xf32>
    scf.reduce
  }
  memref.store %one, %c[%c0] : memref<32xf32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    memref.store %one, %b[%i] : memref<64xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%m) step (%c1) {
    memref.store %one, %c[%i] : memref<32xf32>
    scf.reduce
  }
  return
}

// RUN: txl-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(txl-fuse-parallel-loops))' | FileCheck %s
// With a merged kernel's parameters capped at 21 (the siblings' would take
// 22: three 2-D memref descriptors of 7 fields and %n), nothing merges.
// RUN: txl-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(txl-fuse-parallel-loops{max-params=21}))' | FileCheck %s --check-prefix=SMALL

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
// SMALL-LABEL: func.func @siblings(
// SMALL: scf.parallel
// SMALL: memref.store
// SMALL: scf.parallel
// SMALL: memref.store
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

// Negative: an op between the loops that writes a buffer both loops
// touch (neither may move past it), and loops of different bounds, the
// second reading what the first wrote (a work-item of a merged loop would
// run them at different points).
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
  memref.store %one, %a[%c0] : memref<64xf32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %x = memref.load %a[%i] : memref<64xf32>
    memref.store %x, %b[%i] : memref<64xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%m) step (%c1) {
    %x = memref.load %b[%i] : memref<64xf32>
    memref.store %x, %c[%i] : memref<32xf32>
    scf.reduce
  }
  return
}

// -----

// A layer norm's backward as bufferized: a zero fill, then copies of it
// into two accumulators, each followed by its reduction, with allocations
// between. The first copy merges with the fill across the allocation; the
// second moves up past the first reduction, which touches neither of its
// buffers, with its allocation: one loop of the fill and both copies,
// then the two reductions.
// CHECK-LABEL: func.func @fill_copies_reductions(
// CHECK: %[[Z:.+]] = memref.alloc
// CHECK: %[[S1:.+]] = memref.alloc
// CHECK: %[[S2:.+]] = memref.alloc
// CHECK: scf.parallel
// CHECK: memref.store %{{.*}}, %[[Z]]
// CHECK: memref.store %{{.*}}, %[[S1]]
// CHECK: memref.store %{{.*}}, %[[S2]]
// CHECK: scf.reduce
// CHECK: scf.parallel
// CHECK: scf.for
// CHECK: memref.store %{{.*}}, %[[S1]]
// CHECK: scf.parallel
// CHECK: scf.for
// CHECK: memref.store %{{.*}}, %[[S2]]
// CHECK-NOT: scf.parallel
// CHECK: return
func.func @fill_copies_reductions(%x: memref<?x128xf32>, %n: index) -> (memref<?xf32>, memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %zero = arith.constant 0.0 : f32
  %z = memref.alloc(%n) : memref<?xf32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    memref.store %zero, %z[%i] : memref<?xf32>
    scf.reduce
  }
  %s1 = memref.alloc(%n) : memref<?xf32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %v = memref.load %z[%i] : memref<?xf32>
    memref.store %v, %s1[%i] : memref<?xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    scf.for %k = %c0 to %c128 step %c1 {
      %v = memref.load %x[%i, %k] : memref<?x128xf32>
      %acc = memref.load %s1[%i] : memref<?xf32>
      %sum = arith.addf %acc, %v : f32
      memref.store %sum, %s1[%i] : memref<?xf32>
    }
    scf.reduce
  }
  %s2 = memref.alloc(%n) : memref<?xf32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %v = memref.load %z[%i] : memref<?xf32>
    memref.store %v, %s2[%i] : memref<?xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    scf.for %k = %c0 to %c128 step %c1 {
      %v = memref.load %x[%i, %k] : memref<?x128xf32>
      %acc = memref.load %s2[%i] : memref<?xf32>
      %sq = arith.mulf %v, %v : f32
      %sum = arith.addf %acc, %sq : f32
      memref.store %sum, %s2[%i] : memref<?xf32>
    }
    scf.reduce
  }
  memref.dealloc %z : memref<?xf32>
  return %s1, %s2 : memref<?xf32>, memref<?xf32>
}

// -----

// An elementwise loop sinks past a reduction that touches none of its
// buffers to merge with the loop after it (which reads what the reduction
// wrote, so it cannot move up instead).
// CHECK-LABEL: func.func @sink_past_reduction(
// CHECK-SAME: %[[A:[a-z0-9]+]]: memref<64xf32>, %[[X:[a-z0-9]+]]: memref<64x64xf32>, %[[S:[a-z0-9]+]]: memref<64xf32>, %[[B:[a-z0-9]+]]: memref<64xf32>
// CHECK: scf.parallel
// CHECK: scf.for
// CHECK: scf.parallel
// CHECK: memref.store %{{.*}}, %[[A]]
// CHECK: memref.load %[[S]]
// CHECK: memref.store %{{.*}}, %[[B]]
// CHECK-NOT: scf.parallel
// CHECK: return
func.func @sink_past_reduction(%a: memref<64xf32>, %x: memref<64x64xf32>, %s: memref<64xf32>, %b: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 64 : index
  %one = arith.constant 1.0 : f32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    memref.store %one, %a[%i] : memref<64xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    scf.for %k = %c0 to %n step %c1 {
      %v = memref.load %x[%i, %k] : memref<64x64xf32>
      %acc = memref.load %s[%i] : memref<64xf32>
      %sum = arith.addf %acc, %v : f32
      memref.store %sum, %s[%i] : memref<64xf32>
    }
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %v = memref.load %s[%i] : memref<64xf32>
    memref.store %v, %b[%i] : memref<64xf32>
    scf.reduce
  }
  return
}

// -----

// Negative: the reduction between reads what the first loop writes (it
// cannot sink past it) and writes what the second reads (it cannot move
// up past it): three loops.
// CHECK-LABEL: func.func @reduction_between(
// CHECK: scf.parallel
// CHECK: scf.parallel
// CHECK: scf.for
// CHECK: scf.parallel
func.func @reduction_between(%a: memref<64xf32>, %x: memref<64x64xf32>, %s: memref<64xf32>, %b: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 64 : index
  %one = arith.constant 1.0 : f32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    memref.store %one, %a[%i] : memref<64xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    scf.for %k = %c0 to %n step %c1 {
      %v = memref.load %x[%i, %k] : memref<64x64xf32>
      %w = memref.load %a[%k] : memref<64xf32>
      %p = arith.mulf %v, %w : f32
      %acc = memref.load %s[%i] : memref<64xf32>
      %sum = arith.addf %acc, %p : f32
      memref.store %sum, %s[%i] : memref<64xf32>
    }
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %v = memref.load %s[%i] : memref<64xf32>
    memref.store %v, %b[%i] : memref<64xf32>
    scf.reduce
  }
  return
}

// -----

// Negative: a call between the loops (its effects unknown) and, before
// a second pair, a value the later loop uses computed between them by a
// load (an op with effects, which does not move up): four loops.
// CHECK-LABEL: func.func @call_and_load_between(
// CHECK: scf.parallel
// CHECK: call @opaque
// CHECK: scf.parallel
// CHECK: memref.load
// CHECK: scf.parallel
// CHECK: scf.parallel
// CHECK: return
func.func private @opaque()
func.func @call_and_load_between(%a: memref<64xf32>, %b: memref<64xf32>, %x: memref<64x64xf32>, %s: memref<64xf32>, %size: memref<index>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 64 : index
  %one = arith.constant 1.0 : f32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    memref.store %one, %a[%i] : memref<64xf32>
    scf.reduce
  }
  func.call @opaque() : () -> ()
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    memref.store %one, %b[%i] : memref<64xf32>
    scf.reduce
  }
  %m = memref.load %size[] : memref<index>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    scf.for %k = %c0 to %n step %c1 {
      %v = memref.load %x[%i, %k] : memref<64x64xf32>
      %w = memref.load %b[%k] : memref<64xf32>
      %p = arith.mulf %v, %w : f32
      memref.store %p, %s[%i] : memref<64xf32>
    }
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%m) step (%c1) {
    %v = memref.load %s[%i] : memref<64xf32>
    memref.store %v, %a[%i] : memref<64xf32>
    scf.reduce
  }
  return
}

// -----

// A layer's q, k and v gradients copied into the column blocks of one qkv
// gradient ([0, 128), [128, 256) and [256, 384): static, disjoint): views
// of one buffer that share no element, so the copies merge over the
// largest linearized space.
// CHECK-LABEL: func.func @disjoint_columns(
// CHECK: scf.parallel (%{{.*}}) = (%c0{{.*}}) to (%{{.*}}) step (%c1{{.*}})
// CHECK-COUNT-3: scf.if
// CHECK-NOT: scf.parallel
// CHECK: return
func.func @disjoint_columns(%q: memref<?x128xf32>, %k: memref<?x128xf32>, %v: memref<?x128xf32>, %qkv: memref<?x384xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %dq = memref.subview %qkv[0, 0] [%n, 128] [1, 1] : memref<?x384xf32> to memref<?x128xf32, strided<[384, 1]>>
  %dk = memref.subview %qkv[0, 128] [%n, 128] [1, 1] : memref<?x384xf32> to memref<?x128xf32, strided<[384, 1], offset: 128>>
  %dv = memref.subview %qkv[0, 256] [%n, 128] [1, 1] : memref<?x384xf32> to memref<?x128xf32, strided<[384, 1], offset: 256>>
  %nq = memref.dim %q, %c0 : memref<?x128xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%nq, %c128) step (%c1, %c1) {
    %x = memref.load %q[%i, %j] : memref<?x128xf32>
    memref.store %x, %dq[%i, %j] : memref<?x128xf32, strided<[384, 1]>>
    scf.reduce
  }
  %nk = memref.dim %k, %c0 : memref<?x128xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%nk, %c128) step (%c1, %c1) {
    %x = memref.load %k[%i, %j] : memref<?x128xf32>
    memref.store %x, %dk[%i, %j] : memref<?x128xf32, strided<[384, 1], offset: 128>>
    scf.reduce
  }
  %nv = memref.dim %v, %c0 : memref<?x128xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%nv, %c128) step (%c1, %c1) {
    %x = memref.load %v[%i, %j] : memref<?x128xf32>
    memref.store %x, %dv[%i, %j] : memref<?x128xf32, strided<[384, 1], offset: 256>>
    scf.reduce
  }
  return
}

// -----

// A new memory's rows from the old memory and from the segment: rows
// [0, %m) and [%m, %m + %l) of one buffer, disjoint because the second
// view starts where the first ends (its offset the first's size): one
// loop.
// CHECK-LABEL: func.func @adjacent_rows(
// CHECK: scf.parallel (%{{.*}}) = (%c0{{.*}}) to (%{{.*}}) step (%c1{{.*}})
// CHECK-COUNT-2: scf.if
// CHECK-NOT: scf.parallel
// CHECK: return
func.func @adjacent_rows(%old: memref<?x128xf32>, %hid: memref<?x128xf32>, %mem: memref<?x128xf32>, %m: index, %l: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %front = memref.subview %mem[0, 0] [%m, 128] [1, 1] : memref<?x128xf32> to memref<?x128xf32, strided<[128, 1]>>
  %back = memref.subview %mem[%m, 0] [%l, 128] [1, 1] : memref<?x128xf32> to memref<?x128xf32, strided<[128, 1], offset: ?>>
  scf.parallel (%i, %j) = (%c0, %c0) to (%m, %c128) step (%c1, %c1) {
    %x = memref.load %old[%i, %j] : memref<?x128xf32>
    memref.store %x, %front[%i, %j] : memref<?x128xf32, strided<[128, 1]>>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%l, %c128) step (%c1, %c1) {
    %x = memref.load %hid[%i, %j] : memref<?x128xf32>
    memref.store %x, %back[%i, %j] : memref<?x128xf32, strided<[128, 1], offset: ?>>
    scf.reduce
  }
  return
}

// -----

// Rows [%m, %m + %l) and, starting at the sum of the first view's offset
// and size, [%m + %l, %m + 2 %l): disjoint, one loop (of the loops' one
// space: the first body, then the second).
// CHECK-LABEL: func.func @rows_after_sum(
// CHECK: scf.parallel
// CHECK-COUNT-2: memref.store
// CHECK-NOT: scf.parallel
// CHECK: return
func.func @rows_after_sum(%a: memref<?x128xf32>, %b: memref<?x128xf32>, %mem: memref<?x128xf32>, %m: index, %l: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %back = memref.subview %mem[%m, 0] [%l, 128] [1, 1] : memref<?x128xf32> to memref<?x128xf32, strided<[128, 1], offset: ?>>
  %end = arith.addi %l, %m : index
  %tail = memref.subview %mem[%end, 0] [%l, 128] [1, 1] : memref<?x128xf32> to memref<?x128xf32, strided<[128, 1], offset: ?>>
  scf.parallel (%i, %j) = (%c0, %c0) to (%l, %c128) step (%c1, %c1) {
    %x = memref.load %a[%i, %j] : memref<?x128xf32>
    memref.store %x, %back[%i, %j] : memref<?x128xf32, strided<[128, 1], offset: ?>>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%l, %c128) step (%c1, %c1) {
    %x = memref.load %b[%i, %j] : memref<?x128xf32>
    memref.store %x, %tail[%i, %j] : memref<?x128xf32, strided<[128, 1], offset: ?>>
    scf.reduce
  }
  return
}

// -----

// Negative: views of one buffer whose ranges overlap in every dimension
// (columns [0, 128) and [64, 192)): the copies stay apart.
// CHECK-LABEL: func.func @overlapping_columns(
// CHECK: scf.parallel
// CHECK: scf.parallel
// CHECK: return
func.func @overlapping_columns(%a: memref<?x128xf32>, %b: memref<?x128xf32>, %out: memref<?x384xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %lo = memref.subview %out[0, 0] [%n, 128] [1, 1] : memref<?x384xf32> to memref<?x128xf32, strided<[384, 1]>>
  %mid = memref.subview %out[0, 64] [%n, 128] [1, 1] : memref<?x384xf32> to memref<?x128xf32, strided<[384, 1], offset: 64>>
  %na = memref.dim %a, %c0 : memref<?x128xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%na, %c128) step (%c1, %c1) {
    %x = memref.load %a[%i, %j] : memref<?x128xf32>
    memref.store %x, %lo[%i, %j] : memref<?x128xf32, strided<[384, 1]>>
    scf.reduce
  }
  %nb = memref.dim %b, %c0 : memref<?x128xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%nb, %c128) step (%c1, %c1) {
    %x = memref.load %b[%i, %j] : memref<?x128xf32>
    memref.store %x, %mid[%i, %j] : memref<?x128xf32, strided<[384, 1], offset: 64>>
    scf.reduce
  }
  return
}

// -----

// Negative: rows [0, %m) and [%l, %l + %m), %l not known to be %m (nor
// the sum of the first's offset and size): the copies stay apart.
// CHECK-LABEL: func.func @unknown_rows(
// CHECK: scf.parallel
// CHECK: scf.parallel
// CHECK: return
func.func @unknown_rows(%a: memref<?x128xf32>, %b: memref<?x128xf32>, %mem: memref<?x128xf32>, %m: index, %l: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %front = memref.subview %mem[0, 0] [%m, 128] [1, 1] : memref<?x128xf32> to memref<?x128xf32, strided<[128, 1]>>
  %back = memref.subview %mem[%l, 0] [%m, 128] [1, 1] : memref<?x128xf32> to memref<?x128xf32, strided<[128, 1], offset: ?>>
  scf.parallel (%i, %j) = (%c0, %c0) to (%m, %c128) step (%c1, %c1) {
    %x = memref.load %a[%i, %j] : memref<?x128xf32>
    memref.store %x, %front[%i, %j] : memref<?x128xf32, strided<[128, 1]>>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%m, %c128) step (%c1, %c1) {
    %x = memref.load %b[%i, %j] : memref<?x128xf32>
    memref.store %x, %back[%i, %j] : memref<?x128xf32, strided<[128, 1], offset: ?>>
    scf.reduce
  }
  return
}

// -----

// A segment's hidden states (the layers' results) copied to its outputs:
// spaces read from different buffers' dims, so not known to be equal, and
// call results that cannot overlap the arguments: one loop over the larger
// linearized space, each copy under its guard, its indices the digits of
// the linear index (innermost fastest).
// CHECK-LABEL: func.func @hidden_to_outputs(
// CHECK-SAME: %[[X:[a-z0-9]+]]: memref<?x?x128xf32>, %[[O1:[a-z0-9]+]]: memref<?x?x128xf32>, %[[O2:[a-z0-9]+]]: memref<?x?x128xf32>
// CHECK: %[[C128:.+]] = arith.constant 128 : index
// CHECK: %[[H1:.+]] = call @layer(%[[X]])
// CHECK: %[[H2:.+]] = call @layer(%[[H1]])
// CHECK: %[[A0:.+]] = memref.dim %[[H1]], %{{.+}}
// CHECK: %[[A1:.+]] = memref.dim %[[H1]], %{{.+}}
// CHECK: memref.dim %[[H2]]
// CHECK: memref.dim %[[H2]]
// CHECK: %[[E0:.+]] = arith.maxsi %[[A0]], %{{.+}}
// CHECK: %[[E1:.+]] = arith.maxsi %[[A1]], %{{.+}}
// CHECK: %[[P:.+]] = arith.muli %[[E0]], %[[E1]]
// CHECK: %[[SA:.+]] = arith.muli %[[P]], %{{.+}}
// CHECK: %[[TOTAL:.+]] = arith.maxsi %[[SA]], %[[SB:.+]] : index
// CHECK: scf.parallel (%[[L:.+]]) = (%{{.+}}) to (%[[TOTAL]]) step
// CHECK: %[[IN1:.+]] = arith.cmpi slt, %[[L]], %[[SA]]
// CHECK: scf.if %[[IN1]] {
// CHECK: %[[K:.+]] = arith.remui %[[L]], %[[C128]]
// CHECK: %[[R:.+]] = arith.divui %[[L]], %[[C128]]
// CHECK: %[[J:.+]] = arith.remui %[[R]], %[[A1]]
// CHECK: %[[I:.+]] = arith.divui %[[R]], %[[A1]]
// CHECK: memref.load %[[H1]][%[[I]], %[[J]], %[[K]]]
// CHECK: memref.store %{{.+}}, %[[O1]][%[[I]], %[[J]], %[[K]]]
// CHECK: }
// CHECK: %[[IN2:.+]] = arith.cmpi slt, %[[L]], %[[SB]]
// CHECK: scf.if %[[IN2]] {
// CHECK: memref.store %{{.+}}, %[[O2]]
// CHECK-NOT: scf.parallel
// CHECK: return
func.func private @layer(%x: memref<?x?x128xf32>) -> memref<?x?x128xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?x?x128xf32>
  %b = memref.dim %x, %c1 : memref<?x?x128xf32>
  %h = memref.alloc(%n, %b) : memref<?x?x128xf32>
  return %h : memref<?x?x128xf32>
}
func.func @hidden_to_outputs(%x: memref<?x?x128xf32>, %o1: memref<?x?x128xf32>, %o2: memref<?x?x128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %h1 = call @layer(%x) : (memref<?x?x128xf32>) -> memref<?x?x128xf32>
  %h2 = call @layer(%h1) : (memref<?x?x128xf32>) -> memref<?x?x128xf32>
  %a0 = memref.dim %h1, %c0 : memref<?x?x128xf32>
  %a1 = memref.dim %h1, %c1 : memref<?x?x128xf32>
  scf.parallel (%i, %j, %k) = (%c0, %c0, %c0) to (%a0, %a1, %c128) step (%c1, %c1, %c1) {
    %v = memref.load %h1[%i, %j, %k] : memref<?x?x128xf32>
    memref.store %v, %o1[%i, %j, %k] : memref<?x?x128xf32>
    scf.reduce
  }
  %b0 = memref.dim %h2, %c0 : memref<?x?x128xf32>
  %b1 = memref.dim %h2, %c1 : memref<?x?x128xf32>
  scf.parallel (%i, %j, %k) = (%c0, %c0, %c0) to (%b0, %b1, %c128) step (%c1, %c1, %c1) {
    %v = memref.load %h2[%i, %j, %k] : memref<?x?x128xf32>
    memref.store %v, %o2[%i, %j, %k] : memref<?x?x128xf32>
    scf.reduce
  }
  return
}

// -----

// An optimizer step's updates of parameters of different shapes (a
// matrix and a vector, their moments): one loop of max(64 · 32, 32)
// work-items, where the two kernels ran 64 · 32 + 32.
// CHECK-LABEL: func.func @parameters(
// CHECK: %[[C2048:.+]] = arith.constant 2048 : index
// CHECK: %[[C32:.+]] = arith.constant 32 : index
// CHECK: %[[TOTAL:.+]] = arith.constant 2048 : index
// CHECK: scf.parallel (%[[L:.+]]) = (%{{.+}}) to (%[[TOTAL]]) step
// CHECK: arith.cmpi slt, %[[L]], %[[C2048]]
// CHECK: memref.store %{{.+}}, %{{.+}}[%{{.+}}, %{{.+}}] : memref<64x32xf32>
// CHECK: arith.cmpi slt, %[[L]], %[[C32]]
// CHECK: memref.store %{{.+}}, %{{.+}}[%[[L]]] : memref<32xf32>
// CHECK-NOT: scf.parallel
// CHECK: return
func.func @parameters(%w: memref<64x32xf32>, %mw: memref<64x32xf32>, %b: memref<32xf32>, %mb: memref<32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %lr = arith.constant 0.5 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c32) step (%c1, %c1) {
    %m = memref.load %mw[%i, %j] : memref<64x32xf32>
    %p = memref.load %w[%i, %j] : memref<64x32xf32>
    %d = arith.mulf %m, %lr : f32
    %q = arith.subf %p, %d : f32
    memref.store %q, %w[%i, %j] : memref<64x32xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c32) step (%c1) {
    %m = memref.load %mb[%i] : memref<32xf32>
    %p = memref.load %b[%i] : memref<32xf32>
    %d = arith.mulf %m, %lr : f32
    %q = arith.subf %p, %d : f32
    memref.store %q, %b[%i] : memref<32xf32>
    scf.reduce
  }
  return
}

// -----

// Negative: spaces not known to be equal and a buffer in common (the
// second loop reads, at its own point, what the first wrote): two loops.
// CHECK-LABEL: func.func @unequal_spaces_shared_buffer(
// CHECK: scf.parallel
// CHECK: scf.parallel
func.func @unequal_spaces_shared_buffer(%a: memref<?xf32>, %t: memref<?xf32>, %b: memref<?xf32>, %n: index, %m: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %x = memref.load %a[%i] : memref<?xf32>
    memref.store %x, %t[%i] : memref<?xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%m) step (%c1) {
    %x = memref.load %t[%i] : memref<?xf32>
    memref.store %x, %b[%i] : memref<?xf32>
    scf.reduce
  }
  return
}

// -----

// Negative: spaces not known to be equal whose lower bound is not 0 (not
// a box from the origin, so not linearized): two loops.
// CHECK-LABEL: func.func @offset_space(
// CHECK: scf.parallel
// CHECK: scf.parallel
func.func @offset_space(%a: memref<?xf32>, %b: memref<?xf32>, %n: index, %m: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %one = arith.constant 1.0 : f32
  scf.parallel (%i) = (%c4) to (%n) step (%c1) {
    memref.store %one, %a[%i] : memref<?xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%m) step (%c1) {
    memref.store %one, %b[%i] : memref<?xf32>
    scf.reduce
  }
  return
}

// -----

// Negative: a call's result and a view of it (one buffer), written by
// both loops at different points: two loops.
// CHECK-LABEL: func.func @one_call_result(
// CHECK: scf.parallel
// CHECK: scf.parallel
func.func private @make(%n: index) -> memref<?xf32> {
  %h = memref.alloc(%n) : memref<?xf32>
  return %h : memref<?xf32>
}
func.func @one_call_result(%n: index, %m: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f32
  %h = call @make(%n) : (index) -> memref<?xf32>
  %v = memref.subview %h[1] [%m] [1] : memref<?xf32> to memref<?xf32, strided<[1], offset: 1>>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    memref.store %one, %h[%i] : memref<?xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%m) step (%c1) {
    memref.store %one, %v[%i] : memref<?xf32, strided<[1], offset: 1>>
    scf.reduce
  }
  return
}

// -----

// Negative: the result of a call of an external function (not bufferized
// with the module: it may return a view of an argument) against an
// argument: two loops.
// CHECK-LABEL: func.func @external_result(
// CHECK: scf.parallel
// CHECK: scf.parallel
func.func private @external(memref<?xf32>) -> memref<?xf32>
func.func @external_result(%a: memref<?xf32>, %n: index, %m: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f32
  %h = call @external(%a) : (memref<?xf32>) -> memref<?xf32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    memref.store %one, %a[%i] : memref<?xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%m) step (%c1) {
    memref.store %one, %h[%i] : memref<?xf32>
    scf.reduce
  }
  return
}

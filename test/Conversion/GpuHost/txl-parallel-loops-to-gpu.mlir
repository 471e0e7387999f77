// RUN: txl-opt %s --txl-parallel-loops-to-gpu --split-input-file | FileCheck %s
// RUN: txl-opt %s --txl-parallel-loops-to-gpu=block-size=64 --split-input-file \
// RUN:   | FileCheck %s --check-prefix=BLOCK64
// RUN: txl-opt %S/../Inputs/txl-parallel-loops-to-gpu-invalid.mlir --txl-parallel-loops-to-gpu \
// RUN:   --split-input-file --verify-diagnostics

// A 2-D parallel loop: one launch of ceil(points / 256) workgroups of 256;
// the kernel numbers points with the innermost dimension fastest, guards
// the tail, and takes the loop's bounds, steps and trip counts; the i1 it
// uses comes as an i32 and is truncated back, the constant is cloned.

// CHECK-LABEL: func.func @add
// CHECK-SAME: (%[[A:[^:]+]]: memref<?x8xf32>, %[[B:[^:]+]]: memref<?x8xf32>, %[[FLAG:[^:]+]]: i1)
// CHECK: %[[FLAG32:.+]] = arith.extui %[[FLAG]] : i1 to i32
// CHECK: %[[BLOCKS:.+]] = arith.ceildivui %[[POINTS:[^,]+]], %[[C256:.+]] : index
// CHECK: gpu.launch_func @txl_kernels::@add_loop0 blocks in (%[[BLOCKS]], %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}) threads in (%[[C256]], %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}})
// CHECK-SAME: args(%[[A]] : memref<?x8xf32>, %[[FLAG32]] : i32, %[[B]] : memref<?x8xf32>,
// CHECK-SAME: %[[POINTS]] : index)
// CHECK-NEXT: return
// CHECK: gpu.module @txl_kernels
// CHECK: gpu.func @add_loop0(%[[KA:[^:]+]]: memref<?x8xf32>, %[[KF:[^:]+]]: i32, %[[KB:[^:]+]]: memref<?x8xf32>, %[[LB0:[^:]+]]: index, %[[LB1:[^:]+]]: index, %[[ST0:[^:]+]]: index, %[[ST1:[^:]+]]: index, %[[N0:[^:]+]]: index, %[[N1:[^:]+]]: index, %[[TOTAL:[^:]+]]: index)
// CHECK-SAME: kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// CHECK: %[[TWO:.+]] = arith.constant 2.000000e+00 : f32
// CHECK: %[[F:.+]] = arith.trunci %[[KF]] : i32 to i1
// CHECK: %[[LIN:.+]] = arith.addi
// CHECK: %[[IN:.+]] = arith.cmpi ult, %[[LIN]], %[[TOTAL]] : index
// CHECK: scf.if %[[IN]] {
// CHECK: %[[R1:.+]] = arith.remui %[[LIN]], %[[N1]] : index
// CHECK: %[[Q1:.+]] = arith.divui %[[LIN]], %[[N1]] : index
// CHECK: %[[S1:.+]] = arith.muli %[[R1]], %[[ST1]] : index
// CHECK: %[[J:.+]] = arith.addi %[[LB1]], %[[S1]] : index
// CHECK: %[[R0:.+]] = arith.remui %[[Q1]], %[[N0]] : index
// CHECK: %[[S0:.+]] = arith.muli %[[R0]], %[[ST0]] : index
// CHECK: %[[I:.+]] = arith.addi %[[LB0]], %[[S0]] : index
// CHECK: %[[X:.+]] = memref.load %[[KA]][%[[I]], %[[J]]]
// CHECK: arith.mulf %[[X]], %[[TWO]]
// CHECK: arith.select %[[F]]
// CHECK: memref.store %{{.+}}, %[[KB]][%[[I]], %[[J]]]
// CHECK: gpu.return
// BLOCK64-LABEL: func.func @add
// BLOCK64: gpu.launch_func @txl_kernels::@add_loop0 blocks in ({{.*}}) threads in (%c64
// BLOCK64: known_block_size = array<i32: 64, 1, 1>
func.func @add(%a: memref<?x8xf32>, %b: memref<?x8xf32>, %flag: i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %n = memref.dim %a, %c0 : memref<?x8xf32>
  %two = arith.constant 2.0 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %c8) step (%c1, %c1) {
    %x = memref.load %a[%i, %j] : memref<?x8xf32>
    %y = arith.mulf %x, %two : f32
    %z = arith.select %flag, %y, %x : f32
    memref.store %z, %b[%i, %j] : memref<?x8xf32>
    scf.reduce
  }
  return
}

// -----

// A sequential host loop over device memory (a compaction): one kernel of
// one work-item; its result comes back through a device buffer that the
// host copies into a stack buffer with mgpuMemcpy, then frees.

// CHECK: func.func private @mgpuMemcpy(!llvm.ptr, !llvm.ptr, i64, !llvm.ptr)
// CHECK-LABEL: func.func @count
// CHECK: %[[DEV:.+]] = memref.alloc() : memref<1xi64>
// CHECK: gpu.launch_func @txl_kernels::@count_serial0 blocks in (%[[ONE:.+]], %[[ONE]], %[[ONE]]) threads in (%[[ONE]], %[[ONE]], %[[ONE]])
// CHECK-SAME: %[[DEV]] : memref<1xi64>)
// CHECK: %[[HOST:.+]] = memref.alloca() : memref<1xi64>
// CHECK: call @mgpuMemcpy
// CHECK: %[[V:.+]] = memref.load %[[HOST]]
// CHECK: %[[K:.+]] = arith.index_cast %[[V]] : i64 to index
// CHECK-NOT: txl_device_count_bound
// CHECK: memref.dealloc %[[DEV]]
// CHECK: return %[[K]] : index
// CHECK: gpu.func @count_serial0(%{{[^:]+}}: index, %{{[^:]+}}: memref<?xi64>, %{{[^:]+}}: memref<?xindex>, %[[OUT:[^:]+]]: memref<1xi64>)
// CHECK-SAME: known_block_size = array<i32: 1, 1, 1>
// CHECK: %[[C:.+]] = scf.for
// CHECK: memref.store
// CHECK: %[[C64:.+]] = arith.index_cast %[[C]] : index to i64
// CHECK: memref.store %[[C64]], %[[OUT]][%{{.+}}] : memref<1xi64>
func.func @count(%ids: memref<?xi64>, %out: memref<?xindex>) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %ids, %c0 : memref<?xi64>
  %zero = arith.constant 0 : i64
  %count = scf.for %i = %c0 to %n step %c1 iter_args(%k = %c0) -> (index) {
    %v = memref.load %ids[%i] : memref<?xi64>
    %pos = arith.cmpi sgt, %v, %zero : i64
    %next = scf.if %pos -> (index) {
      memref.store %i, %out[%k] : memref<?xindex>
      %k1 = arith.addi %k, %c1 : index
      scf.yield %k1 : index
    } else {
      scf.yield %k : index
    }
    scf.yield %next : index
  }
  return %count : index
}

// -----

// The same count bounded by arith.minui (the adaptive softmax's compaction
// states that a cluster holds at most the segment's tokens): the minimum
// goes through txl_device_count_bound, which a dry run answers with the
// bound. Only the minui of the read-back count is replaced; the one of two
// host values stays.

// CHECK: func.func private @txl_device_count_bound(i64, i64) -> i64
// CHECK-LABEL: func.func @bounded_count
// CHECK: call @mgpuMemcpy
// CHECK: %[[V:.+]] = memref.load
// CHECK: %[[K:.+]] = arith.index_cast %[[V]] : i64 to index
// CHECK: %[[K64:.+]] = arith.index_cast %[[K]] : index to i64
// CHECK: %[[N64:.+]] = arith.index_cast %[[N:.+]] : index to i64
// CHECK: %[[B64:.+]] = call @txl_device_count_bound(%[[K64]], %[[N64]]) : (i64, i64) -> i64
// CHECK: %[[B:.+]] = arith.index_cast %[[B64]] : i64 to index
// CHECK-NOT: arith.minui %[[K]]
// CHECK: %[[H:.+]] = arith.minui %[[N]], %{{.+}} : index
// CHECK: return %[[B]], %[[H]] : index, index
func.func @bounded_count(%ids: memref<?xi64>, %out: memref<?xindex>, %m: index) -> (index, index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %ids, %c0 : memref<?xi64>
  %zero = arith.constant 0 : i64
  %count = scf.for %i = %c0 to %n step %c1 iter_args(%k = %c0) -> (index) {
    %v = memref.load %ids[%i] : memref<?xi64>
    %pos = arith.cmpi sgt, %v, %zero : i64
    %next = scf.if %pos -> (index) {
      memref.store %i, %out[%k] : memref<?xindex>
      %k1 = arith.addi %k, %c1 : index
      scf.yield %k1 : index
    } else {
      scf.yield %k : index
    }
    scf.yield %next : index
  }
  %bounded = arith.minui %count, %n : index
  %host = arith.minui %n, %m : index
  return %bounded, %host : index, index
}

// -----

// A float result (the clipping norm's sum of the partial sums) travels as
// its bits, zero-extended to i64, and is truncated and bitcast back on the
// host.

// CHECK-LABEL: func.func @sum
// CHECK: gpu.launch_func @txl_kernels::@sum_serial0
// CHECK: call @mgpuMemcpy
// CHECK: %[[V:.+]] = memref.load
// CHECK: %[[I:.+]] = arith.trunci %[[V]] : i64 to i32
// CHECK: %[[F:.+]] = arith.bitcast %[[I]] : i32 to f32
// CHECK: return %[[F]] : f32
// CHECK: gpu.func @sum_serial0(
// CHECK: %[[S:.+]] = scf.for
// CHECK: %[[B:.+]] = arith.bitcast %[[S]] : f32 to i32
// CHECK: %[[E:.+]] = arith.extui %[[B]] : i32 to i64
// CHECK: memref.store %[[E]]
func.func @sum(%a: memref<8xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  %s = scf.for %i = %c0 to %c8 step %c1 iter_args(%acc = %zero) -> f32 {
    %x = memref.load %a[%i] : memref<8xf32>
    %t = arith.addf %acc, %x : f32
    scf.yield %t : f32
  }
  return %s : f32
}

// -----

// A host store of a host scalar into device memory (the training
// functions' norm and lr results) is a kernel of one work-item that takes
// the scalar; an f64 crosses as its i64 bits. A store into host memory
// (an alloca) stays on the host.

// CHECK-LABEL: func.func @store_scalars
// CHECK: gpu.launch_func @txl_kernels::@store_scalars_serial0 {{.*}}args(%{{.+}} : f32, %{{.+}} : memref<1xf32>)
// CHECK: %[[BITS:.+]] = arith.bitcast %{{.+}} : f64 to i64
// CHECK: gpu.launch_func @txl_kernels::@store_scalars_serial1 {{.*}}args(%[[BITS]] : i64, %{{.+}} : memref<1xf64>)
// CHECK: memref.store %{{.+}}, %{{.+}}[%{{.+}}] : memref<1xf32>
// CHECK: return
// CHECK: gpu.func @store_scalars_serial0(%[[X:[^:]+]]: f32, %[[A:[^:]+]]: memref<1xf32>)
// CHECK: memref.store %[[X]], %[[A]]
// CHECK: gpu.func @store_scalars_serial1(%[[Y:[^:]+]]: i64, %[[B:[^:]+]]: memref<1xf64>)
// CHECK: %[[D:.+]] = arith.bitcast %[[Y]] : i64 to f64
// CHECK: memref.store %[[D]], %[[B]]
func.func @store_scalars(%a: memref<1xf32>, %b: memref<1xf64>, %x: f32,
                         %y: f64) {
  %c0 = arith.constant 0 : index
  memref.store %x, %a[%c0] : memref<1xf32>
  memref.store %y, %b[%c0] : memref<1xf64>
  %h = memref.alloca() : memref<1xf32>
  memref.store %x, %h[%c0] : memref<1xf32>
  return
}

// -----

// A host loop that calls a function (a library product: the output layer's
// column blocks in the backward) stays on the host; the sequential loop
// nested in it, which touches device memory, is the one-work-item kernel.

// CHECK-LABEL: func.func @column_blocks
// CHECK: scf.for
// CHECK-NEXT: func.call @product(%{{.+}}) : (memref<?xf32>) -> ()
// CHECK: gpu.launch_func @txl_kernels::@column_blocks_serial0 blocks in (%{{.+}}, %{{.+}}, %{{.+}}) threads in
// CHECK: gpu.func @column_blocks_serial0(
// CHECK: scf.for
// CHECK: memref.load
// CHECK: memref.store
func.func private @product(memref<?xf32>)
func.func @column_blocks(%buf: memref<?xf32>, %nblocks: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %buf, %c0 : memref<?xf32>
  scf.for %b = %c0 to %nblocks step %c1 {
    func.call @product(%buf) : (memref<?xf32>) -> ()
    scf.for %i = %c1 to %n step %c1 {
      %prev = arith.subi %i, %c1 : index
      %x = memref.load %buf[%prev] : memref<?xf32>
      memref.store %x, %buf[%i] : memref<?xf32>
    }
  }
  return
}

// -----

// Negative cases that stay on the host: a loop over host (stack) memory
// only, and a loop that only launches (the output layer's column blocks).

// CHECK-LABEL: func.func @host_only
// CHECK: scf.for
// CHECK: memref.store
// CHECK-NOT: gpu.launch_func
// CHECK: return
func.func @host_only(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %buf = memref.alloca() : memref<4xindex>
  scf.for %i = %c0 to %n step %c1 {
    memref.store %i, %buf[%c0] : memref<4xindex>
  }
  return
}

// CHECK-LABEL: func.func @blocks
// CHECK: scf.for
// CHECK: gpu.launch_func @txl_kernels::@blocks_loop0
// CHECK: }
// CHECK: return
func.func @blocks(%a: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %one = arith.constant 1.0 : f32
  scf.for %i = %c0 to %n step %c1 {
    scf.parallel (%j) = (%c0) to (%c4) step (%c1) {
      memref.store %one, %a[%j] : memref<?xf32>
      scf.reduce
    }
  }
  return
}

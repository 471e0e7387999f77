// RUN: txl-opt %s --txl-parallel-loops-to-gpu --split-input-file | FileCheck %s
// RUN: txl-opt %s --txl-parallel-loops-to-gpu=block-size=64 --split-input-file \
// RUN:   | FileCheck %s --check-prefix=BLOCK64
// RUN: txl-opt %s --txl-parallel-loops-to-gpu=spread-reductions=false --split-input-file \
// RUN:   | FileCheck %s --check-prefix=SERIAL
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

// -----

// A reduction nest known to take more than 4,096 steps (a row's max over
// 10,000 logits) takes one workgroup per point: `points` workgroups, each
// work-item the steps tid, tid + 256, ... from the identity −inf, a
// butterfly of xor shuffles, the subgroups' partials through workgroup
// memory in order, and work-item 0 combining the accumulator's element
// with the result (the combiner's operand order and flags kept).
// With spread-reductions=false, one work-item per point runs the loop.

// CHECK-LABEL: func.func @row_max
// CHECK: gpu.launch_func @txl_kernels::@row_max_loop0 blocks in (%[[POINTS:[^,]+]], %{{.+}}, %{{.+}}) threads in (%c256
// CHECK-SAME: %[[POINTS]] : index, %{{.+}} : index, %{{.+}} : index, %{{.+}} : index, %{{.+}} : index)
// CHECK: gpu.func @row_max_loop0(
// CHECK-SAME: %[[KSTEPS:[^:]+]]: index) workgroup(%[[PARTS:[^:]+]] : memref<8xf32, 3>)
// CHECK: %[[TID:.+]] = gpu.thread_id x
// CHECK: %[[SUB:.+]] = arith.divui %[[TID]], %c32
// CHECK: %[[LANE:.+]] = arith.remui %[[TID]], %c32
// CHECK: %[[NEGINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK: %[[PART:.+]] = scf.for %{{.+}} = %[[TID]] to %[[KSTEPS]] step %c256 iter_args(%[[ACC:.+]] = %[[NEGINF]]) -> (f32) {
// CHECK-NOT: arith.remui
// CHECK: %[[X:.+]] = memref.load
// CHECK: %[[M:.+]] = arith.maximumf %[[X]], %[[ACC]] fastmath<reassoc,nnan,nsz> : f32
// CHECK: scf.yield %[[M]] : f32
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK: scf.if
// CHECK: memref.store %{{.+}}, %[[PARTS]][%[[SUB]]]
// CHECK: gpu.barrier
// CHECK-COUNT-8: memref.load %[[PARTS]]
// CHECK: %[[LEADER:.+]] = arith.cmpi eq, %[[TID]], %c0
// CHECK: scf.if %[[LEADER]] {
// CHECK: %[[OLD:.+]] = memref.load
// CHECK: %[[NEW:.+]] = arith.maximumf %{{.+}}, %[[OLD]] fastmath<reassoc,nnan,nsz> : f32
// CHECK: memref.store %[[NEW]]
// SERIAL-LABEL: func.func @row_max
// SERIAL: gpu.func @row_max_loop0(
// SERIAL-NOT: workgroup(
// SERIAL: scf.for %{{.+}} = %c0 to %c10000 step %c1 {
// SERIAL: arith.maximumf
// SERIAL: gpu.return
func.func @row_max(%a: memref<?x?x10000xf32>, %m: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c10000 = arith.constant 10000 : index
  %n0 = memref.dim %a, %c0 : memref<?x?x10000xf32>
  %n1 = memref.dim %a, %c1 : memref<?x?x10000xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%n0, %n1) step (%c1, %c1) {
    scf.for %k = %c0 to %c10000 step %c1 {
      %x = memref.load %a[%i, %j, %k] : memref<?x?x10000xf32>
      %acc = memref.load %m[%i, %j] : memref<?x?xf32>
      %y = arith.maximumf %x, %acc fastmath<reassoc,nnan,nsz> : f32
      memref.store %y, %m[%i, %j] : memref<?x?xf32>
    }
    scf.reduce
  }
  return
}

// -----

// A nest of reduction loops whose steps are known only at run time (a
// column sum over the segment's rows, [qlen, batch, 128]): one workgroup
// per column, the two loops linearized with the inner one fastest (the
// outer digit without a division; their constant lower bounds and steps
// as constants in the kernel); the term (a product, a value from before
// the nest) is computed per step.

// CHECK-LABEL: func.func @column_sum
// CHECK: gpu.launch_func @txl_kernels::@column_sum_loop0 blocks in (%[[COLS:[^,]+]], %{{.+}}, %{{.+}}) threads in (%c256
// CHECK: gpu.func @column_sum_loop0(
// CHECK-SAME: %[[LB0:[^:]+]]: index, %[[LB1:[^:]+]]: index, %[[ST0:[^:]+]]: index, %[[ST1:[^:]+]]: index, %[[N0:[^:]+]]: index, %[[N1:[^:]+]]: index, %[[STEPS:[^:]+]]: index) workgroup(
// CHECK: %[[TID:.+]] = gpu.thread_id x
// CHECK: %[[SCALE:.+]] = memref.load %{{.+}}[%[[C:[a-z0-9_]+]]] : memref<128xf32>
// CHECK: %[[ZERO:.+]] = arith.constant -0.000000e+00 : f32
// CHECK: scf.for %[[R:.+]] = %[[TID]] to %[[STEPS]] step %c256 iter_args(%[[ACC:.+]] = %[[ZERO]]) -> (f32) {
// CHECK: %[[D1:.+]] = arith.remui %[[R]], %[[N1]]
// CHECK: %[[Q1:.+]] = arith.divui %[[R]], %[[N1]]
// CHECK: %[[J:.+]] = arith.addi %c0{{[_0-9]*}}, %{{.+}}
// CHECK-NOT: arith.remui %[[Q1]]
// CHECK: %[[I0:.+]] = arith.muli %[[Q1]], %c1{{[_0-9]*}}
// CHECK: %[[I:.+]] = arith.addi %c0{{[_0-9]*}}, %[[I0]]
// CHECK: %[[X:.+]] = memref.load %{{.+}}[%[[I]], %[[J]], %[[C]]]
// CHECK: %[[P:.+]] = arith.mulf %[[X]], %[[SCALE]] : f32
// CHECK: %[[T:.+]] = arith.addf %[[P]], %[[ACC]] : f32
// CHECK: scf.yield %[[T]]
// CHECK: gpu.barrier
func.func @column_sum(%a: memref<?x?x128xf32>, %scale: memref<128xf32>, %s: memref<128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %n0 = memref.dim %a, %c0 : memref<?x?x128xf32>
  %n1 = memref.dim %a, %c1 : memref<?x?x128xf32>
  scf.parallel (%c) = (%c0) to (%c128) step (%c1) {
    %w = memref.load %scale[%c] : memref<128xf32>
    scf.for %i = %c0 to %n0 step %c1 {
      scf.for %j = %c0 to %n1 step %c1 {
        %x = memref.load %a[%i, %j, %c] : memref<?x?x128xf32>
        %acc = memref.load %s[%c] : memref<128xf32>
        %p = arith.mulf %x, %w : f32
        %t = arith.addf %p, %acc : f32
        memref.store %t, %s[%c] : memref<128xf32>
      }
    }
    scf.reduce
  }
  return
}

// -----

// A nest known to take 64 to 4,096 steps (a row of d_model 128) takes one
// subgroup per point: ceil(points / 8) workgroups of 8 subgroups, the
// point guarded per subgroup, the lanes striding by 32 from −0.0, a
// butterfly and no barrier.

// CHECK-LABEL: func.func @row_sum
// CHECK: %[[GROUPS:.+]] = arith.ceildivui %{{.+}}, %c8 : index
// CHECK: gpu.launch_func @txl_kernels::@row_sum_loop0 blocks in (%[[GROUPS]], %{{.+}}, %{{.+}}) threads in (%c256
// CHECK: gpu.func @row_sum_loop0(
// CHECK-SAME: %[[TOTAL:[^:]+]]: index, %{{[^:]+}}: index, %{{[^:]+}}: index, %{{[^:]+}}: index, %[[STEPS:[^:]+]]: index)
// CHECK-NOT: workgroup(
// CHECK: %[[TID:.+]] = gpu.thread_id x
// CHECK: %[[SUB:.+]] = arith.divui %[[TID]], %c32
// CHECK: %[[LANE:.+]] = arith.remui %[[TID]], %c32
// CHECK: %[[BASE:.+]] = arith.muli %{{.+}}, %c8
// CHECK: %[[POINT:.+]] = arith.addi %[[BASE]], %[[SUB]]
// CHECK: %[[IN:.+]] = arith.cmpi ult, %[[POINT]], %[[TOTAL]]
// CHECK: scf.if %[[IN]] {
// CHECK: scf.for %{{.+}} = %[[LANE]] to %[[STEPS]] step %c32{{.*}} iter_args(
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK-NOT: gpu.barrier
// CHECK: arith.cmpi eq, %[[LANE]], %c0
// CHECK: gpu.return
func.func @row_sum(%a: memref<?x128xf32>, %s: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %n = memref.dim %a, %c0 : memref<?x128xf32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    scf.for %k = %c0 to %c128 step %c1 {
      %x = memref.load %a[%i, %k] : memref<?x128xf32>
      %acc = memref.load %s[%i] : memref<?xf32>
      %t = arith.addf %acc, %x : f32
      memref.store %t, %s[%i] : memref<?xf32>
    }
    scf.reduce
  }
  return
}

// -----

// Bodies that stay one work-item per point: a nest known to take fewer
// than 64 steps, an accumulator whose element moves with the step, a
// combiner that is not addf/max/min (mulf), an accumulator read elsewhere
// in the nest, and an f64 accumulator.

// CHECK-LABEL: func.func @short
// CHECK: gpu.func @short_loop0(
// CHECK-NOT: gpu.shuffle
// CHECK: scf.for %{{.+}} = %c0 to %c32 step %c1 {
// CHECK: gpu.return
func.func @short(%a: memref<?x32xf32>, %s: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %n = memref.dim %a, %c0 : memref<?x32xf32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    scf.for %k = %c0 to %c32 step %c1 {
      %x = memref.load %a[%i, %k] : memref<?x32xf32>
      %acc = memref.load %s[%i] : memref<?xf32>
      %t = arith.addf %acc, %x : f32
      memref.store %t, %s[%i] : memref<?xf32>
    }
    scf.reduce
  }
  return
}

// -----

// CHECK-LABEL: func.func @moving
// CHECK: gpu.func @moving_loop0(
// CHECK-NOT: gpu.shuffle
// CHECK: scf.for %{{.+}} = %c0 to %c128 step %c1 {
// CHECK: gpu.return
func.func @moving(%a: memref<?x128xf32>, %s: memref<?x128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %n = memref.dim %a, %c0 : memref<?x128xf32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    scf.for %k = %c0 to %c128 step %c1 {
      %x = memref.load %a[%i, %k] : memref<?x128xf32>
      %acc = memref.load %s[%i, %k] : memref<?x128xf32>
      %t = arith.addf %acc, %x : f32
      memref.store %t, %s[%i, %k] : memref<?x128xf32>
    }
    scf.reduce
  }
  return
}

// -----

// CHECK-LABEL: func.func @product
// CHECK: gpu.func @product_loop0(
// CHECK-NOT: gpu.shuffle
// CHECK: scf.for %{{.+}} = %c0 to %c128 step %c1 {
// CHECK: arith.mulf
// CHECK: gpu.return
func.func @product(%a: memref<?x128xf32>, %s: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %n = memref.dim %a, %c0 : memref<?x128xf32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    scf.for %k = %c0 to %c128 step %c1 {
      %x = memref.load %a[%i, %k] : memref<?x128xf32>
      %acc = memref.load %s[%i] : memref<?xf32>
      %t = arith.mulf %acc, %x : f32
      memref.store %t, %s[%i] : memref<?xf32>
    }
    scf.reduce
  }
  return
}

// -----

// CHECK-LABEL: func.func @reads_acc
// CHECK: gpu.func @reads_acc_loop0(
// CHECK-NOT: gpu.shuffle
// CHECK: scf.for %{{.+}} = %c0 to %c128 step %c1 {
// CHECK: gpu.return
func.func @reads_acc(%a: memref<?x128xf32>, %s: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %n = memref.dim %a, %c0 : memref<?x128xf32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    scf.for %k = %c0 to %c128 step %c1 {
      %x = memref.load %a[%i, %k] : memref<?x128xf32>
      %seen = memref.load %s[%i] : memref<?xf32>
      %y = arith.mulf %x, %seen : f32
      %acc = memref.load %s[%i] : memref<?xf32>
      %t = arith.addf %acc, %y : f32
      memref.store %t, %s[%i] : memref<?xf32>
    }
    scf.reduce
  }
  return
}

// -----

// CHECK-LABEL: func.func @f64_sum
// CHECK: gpu.func @f64_sum_loop0(
// CHECK-NOT: gpu.shuffle
// CHECK: scf.for %{{.+}} = %c0 to %c128 step %c1 {
// CHECK: gpu.return
func.func @f64_sum(%a: memref<?x128xf64>, %s: memref<?xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %n = memref.dim %a, %c0 : memref<?x128xf64>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    scf.for %k = %c0 to %c128 step %c1 {
      %x = memref.load %a[%i, %k] : memref<?x128xf64>
      %acc = memref.load %s[%i] : memref<?xf64>
      %t = arith.addf %acc, %x : f64
      memref.store %t, %s[%i] : memref<?xf64>
    }
    scf.reduce
  }
  return
}

// -----

// Before each launch of a kernel whose work-items run loops over device
// memory, the host passes the most loop steps one work-item runs to
// txl_device_serial_steps (the run counters' serial-launch lint): the
// trip count from the host's bounds (a row of %m), a grid-stride loop
// (its lower bound the work-item's) counted from 0, −1 for an upper bound
// computed in the kernel; a kernel without a loop passes nothing.

// CHECK-LABEL: func.func @steps
// CHECK-SAME: (%{{[^:]+}}: memref<?x?xf32>, %{{[^:]+}}: memref<?xf32>, %[[N:[^:]+]]: index, %[[M:[^:]+]]: index)
// CHECK: %[[SPAN:.+]] = arith.subi %[[M]], %{{.+}} : index
// CHECK: %[[TRIP:.+]] = arith.ceildivsi %[[SPAN]], %{{.+}} : index
// CHECK: %[[ROW:.+]] = arith.maxsi %[[TRIP]], %{{.+}} : index
// CHECK: %[[ROW64:.+]] = arith.index_cast %[[ROW]] : index to i64
// CHECK-NEXT: call @txl_device_serial_steps(%[[ROW64]]) : (i64) -> ()
// CHECK-NEXT: gpu.launch_func @txl_kernels::@steps_loop0
// CHECK: %[[FROM0:.+]] = arith.subi %[[N]], %c0{{.*}} : index
// CHECK: %[[STRIDED:.+]] = arith.ceildivsi %[[FROM0]], %c256{{.*}} : index
// CHECK: call @txl_device_serial_steps(
// CHECK-NEXT: gpu.launch_func @txl_kernels::@steps_loop1
// CHECK: %[[UNKNOWN:.+]] = arith.constant -1 : i64
// CHECK-NEXT: call @txl_device_serial_steps(%[[UNKNOWN]]) : (i64) -> ()
// CHECK-NEXT: gpu.launch_func @txl_kernels::@steps_loop2
// CHECK-NOT: txl_device_serial_steps
// CHECK: gpu.launch_func @txl_kernels::@steps_loop3
// CHECK-NEXT: return
func.func @steps(%a: memref<?x?xf32>, %b: memref<?xf32>, %n: index, %m: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %two = arith.constant 2.0 : f32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    scf.for %k = %c0 to %m step %c1 {
      %x = memref.load %a[%i, %k] : memref<?x?xf32>
      %y = arith.mulf %x, %two : f32
      memref.store %y, %a[%i, %k] : memref<?x?xf32>
    }
    scf.reduce
  }
  scf.parallel (%p) = (%c0) to (%c256) step (%c1) {
    scf.for %k = %p to %n step %c256 {
      %x = memref.load %b[%k] : memref<?xf32>
      %y = arith.mulf %x, %two : f32
      memref.store %y, %b[%k] : memref<?xf32>
    }
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %end = arith.addi %i, %c1 : index
    scf.for %k = %c0 to %end step %c1 {
      %x = memref.load %a[%i, %k] : memref<?x?xf32>
      %y = arith.mulf %x, %two : f32
      memref.store %y, %a[%i, %k] : memref<?x?xf32>
    }
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    memref.store %two, %b[%i] : memref<?xf32>
    scf.reduce
  }
  return
}

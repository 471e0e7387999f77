// RUN: txl-opt %s --txl-rel-attention-to-gpu --split-input-file | FileCheck %s
// RUN: txl-opt %s --txl-rel-attention-to-gpu --split-input-file \
// RUN:   | FileCheck %s --check-prefix=KERNEL

// One launch per op, after the checks of the dynamic sizes the kernel
// indexes by (pos_key's and value's rows against klen, key's and value's
// batch columns against the query's); the operands reach the kernel as read-only views of
// any layout, the output is one allocation of the result's shape, and the
// grid is ceil(qlen / 16) x (batch * n_head) workgroups of 128 work-items.

// CHECK: module attributes {gpu.container_module}
// CHECK-LABEL: func.func @eval
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<?x?x4x32xf32>
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : index
// CHECK-DAG: %[[C16:.+]] = arith.constant 16 : index
// CHECK-DAG: %[[C128:.+]] = arith.constant 128 : index
// CHECK-DAG: %[[SCALE:.+]] = arith.constant 0.176776692 : f32
// CHECK: cf.assert %{{.+}}, "txl.rel_attention: pos_key must have as many rows as key (klen)"
// CHECK: cf.assert %{{.+}}, "txl.rel_attention: value must have as many rows as key (klen)"
// CHECK: cf.assert %{{.+}}, "txl.rel_attention: query and key must agree on batch, n_head and d_head"
// CHECK: cf.assert %{{.+}}, "txl.rel_attention: query and value must agree on batch, n_head and d_head"
// CHECK-NOT: cf.assert
// CHECK: %[[OUT:.+]] = memref.alloc(%{{.+}}, %{{.+}}) : memref<?x?x4x32xf32>
// CHECK: %[[TILES:.+]] = arith.ceildivui %{{.+}}, %[[C16]] : index
// CHECK: %[[COLUMNS:.+]] = arith.muli %{{.+}}, %{{.+}} : index
// CHECK: %[[SAME:.+]] = arith.extui %{{.+}} : i1 to i32
// CHECK: bufferization.to_buffer %[[Q]] read_only : tensor<?x?x4x32xf32> to memref<?x?x4x32xf32, strided<[?, ?, ?, ?], offset: ?>>
// CHECK-COUNT-5: bufferization.to_buffer %{{.+}} read_only
// CHECK-NOT: memref.alloc
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_d32 blocks in (%[[TILES]], %[[COLUMNS]], %[[C1]]) threads in (%[[C128]], %[[C1]], %[[C1]])
// CHECK-SAME: %{{.+}} : index, %[[SAME]] : i32, %[[SCALE]] : f32)
// CHECK-NEXT: %[[R:.+]] = bufferization.to_tensor %[[OUT]] restrict writable
// CHECK-NEXT: return %[[R]]

// Two layers of one d_head share one kernel.
// CHECK-LABEL: func.func @two_layers
// CHECK-COUNT-2: gpu.launch_func @txl_kernels::@rel_attention_d32
// CHECK-NOT: = txl.rel_attention

// The kernel: its only global buffers are its seven memref operands (q, k,
// v, r, u, v_bias, out), whose sizes are the operands'; workgroup memory is
// four padded tiles in address space 3: q + u and q + v (16 rows), k (32
// rows) and the 16 + 32 - 1 rows of r one tile pair reads. Nothing is
// allocated inside it (no qlen x klen buffer anywhere); it synchronizes
// with two barriers per key tile, reduces with 32-lane shuffles, and
// stores only into the output. Its d_head and key loops are unrolled 4
// times (fully unrolled, ptxas spills under the 128-register bound).

// KERNEL: #loop_unroll = #llvm.loop_unroll<count = 4 : i32>
// KERNEL: #loop_annotation = #llvm.loop_annotation<unroll = #loop_unroll>
// KERNEL: gpu.module @txl_kernels
// KERNEL-NEXT: gpu.func @rel_attention_d32(
// KERNEL-SAME: %[[Q:arg0]]: memref<?x?x?x32xf32, strided<[?, ?, ?, ?], offset: ?>>
// KERNEL-SAME: %[[K:arg1]]: memref<?x?x?x32xf32, strided<[?, ?, ?, ?], offset: ?>>
// KERNEL-SAME: %[[V:arg2]]: memref<?x?x?x32xf32, strided<[?, ?, ?, ?], offset: ?>>
// KERNEL-SAME: %[[RR:arg3]]: memref<?x?x32xf32, strided<[?, ?, ?], offset: ?>>
// KERNEL-SAME: %[[U:arg4]]: memref<?x32xf32, strided<[?, ?], offset: ?>>
// KERNEL-SAME: %[[VB:arg5]]: memref<?x32xf32, strided<[?, ?], offset: ?>>
// KERNEL-SAME: %[[O:arg6]]: memref<?x?x?x32xf32, strided<[?, ?, ?, ?], offset: ?>>
// KERNEL-SAME: %{{.+}}: index, %{{.+}}: i32, %{{.+}}: f32)
// KERNEL-SAME: workgroup(%[[QU:.+]] : memref<16x33xf32, 3>, %[[QV:.+]] : memref<16x33xf32, 3>, %[[KT:.+]] : memref<32x33xf32, 3>, %[[RT:.+]] : memref<47x33xf32, 3>)
// KERNEL-SAME: kernel attributes {known_block_size = array<i32: 128, 1, 1>, nvvm.maxnreg = 128 : i32}
// KERNEL-NOT: memref.alloc
// KERNEL-NOT: memref.store {{.+}} %[[Q]]
// KERNEL: memref.store {{.+}}, %[[QU]]
// KERNEL: memref.store {{.+}}, %[[QV]]
// KERNEL: scf.for
// KERNEL-NEXT: gpu.barrier
// KERNEL: memref.load %[[K]]
// KERNEL: memref.store {{.+}}, %[[KT]]
// KERNEL: memref.load %[[RR]]
// KERNEL: memref.store {{.+}}, %[[RT]]
// KERNEL: gpu.barrier
// KERNEL-NOT: gpu.barrier
// KERNEL: scf.for
// KERNEL: } {loop_annotation = #loop_annotation}
// KERNEL: gpu.shuffle  xor {{.+}}, %c16_i32, %c32_i32 : f32
// KERNEL: gpu.shuffle  idx
// KERNEL: memref.load %[[V]]
// KERNEL-NOT: gpu.barrier
// KERNEL-NOT: memref.alloc
// KERNEL: memref.store {{.+}}, %[[O]]
// KERNEL-NOT: memref.alloc
// KERNEL: gpu.return
// KERNEL-NOT: gpu.func

func.func @eval(%q: tensor<?x?x4x32xf32>, %k: tensor<?x?x4x32xf32>, %v: tensor<?x?x4x32xf32>,
                %r: tensor<?x4x32xf32>, %u: tensor<4x32xf32>, %vb: tensor<4x32xf32>,
                %mem_len: index, %same: i1) -> tensor<?x?x4x32xf32> {
  %o = txl.rel_attention %q, %k, %v, %r, %u, %vb, %mem_len, %same {scale = 0.17677669 : f32}
      : tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>,
        tensor<?x4x32xf32>, tensor<4x32xf32>, tensor<4x32xf32> -> tensor<?x?x4x32xf32>
  return %o : tensor<?x?x4x32xf32>
}

func.func @two_layers(%q: tensor<?x?x4x32xf32>, %k: tensor<?x?x4x32xf32>, %v: tensor<?x?x4x32xf32>,
                      %r: tensor<?x4x32xf32>, %u: tensor<4x32xf32>, %vb: tensor<4x32xf32>,
                      %mem_len: index, %same: i1) -> tensor<?x?x4x32xf32> {
  %o1 = txl.rel_attention %q, %k, %v, %r, %u, %vb, %mem_len, %same {scale = 0.17677669 : f32}
      : tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>,
        tensor<?x4x32xf32>, tensor<4x32xf32>, tensor<4x32xf32> -> tensor<?x?x4x32xf32>
  %o2 = txl.rel_attention %o1, %k, %v, %r, %u, %vb, %mem_len, %same {scale = 0.17677669 : f32}
      : tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>,
        tensor<?x4x32xf32>, tensor<4x32xf32>, tensor<4x32xf32> -> tensor<?x?x4x32xf32>
  return %o2 : tensor<?x?x4x32xf32>
}

// -----

// With dropatt the kernel is its dropatt form, which takes seed, offset,
// the stream (stream_base + dropatt_stream), the column, the keep threshold
// ceil(rate 2^24) and 1 / (1 - rate) when training, 0 and 1 (the identity)
// when not (here stream_base is 0 and stream 3). Wide heads get a narrower query tile (d_head 128: 8 rows, so
// the four tiles fit in 48 KiB).

// CHECK-LABEL: func.func @dropatt_eval
// CHECK-SAME: %[[SEED:[^:]+]]: i64, %[[OFFSET:[^:]+]]: i64, %[[TRAINING:[^:]+]]: i1, %[[COL:[^:]+]]: i64) -> tensor<?x?x2x128xf32>
// CHECK-NOT: cf.assert
// CHECK-DAG: %[[KEPT:.+]] = arith.constant 1.11111116 : f32
// CHECK-DAG: %[[ONE:.+]] = arith.constant 1.000000e+00 : f32
// CHECK: arith.ceildivui %{{.+}}, %c8 : index
// CHECK: %[[MIN:.+]] = arith.select %[[TRAINING]], %c1677722_i32, %c0_i32 : i32
// CHECK: %[[SCALE:.+]] = arith.select %[[TRAINING]], %[[KEPT]], %[[ONE]] : f32
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_dropatt_d128
// CHECK-SAME: %[[SEED]] : i64, %[[OFFSET]] : i64, %c3_i64 : i64, %[[COL]] : i64, %[[MIN]] : i32, %[[SCALE]] : f32)
// KERNEL: gpu.func @rel_attention_dropatt_d128(
// KERNEL-SAME: %{{.+}}: i64, %{{.+}}: i64, %{{.+}}: i64, %{{.+}}: i64, %{{.+}}: i32, %{{.+}}: f32)
// KERNEL-SAME: workgroup(%{{.+}} : memref<8x129xf32, 3>, %{{.+}} : memref<8x129xf32, 3>, %{{.+}} : memref<32x129xf32, 3>, %{{.+}} : memref<39x129xf32, 3>)
// KERNEL: arith.mului_extended
func.func @dropatt_eval(%q: tensor<?x?x2x128xf32>, %k: tensor<?x?x2x128xf32>, %v: tensor<?x?x2x128xf32>,
                        %r: tensor<?x2x128xf32>, %u: tensor<2x128xf32>, %vb: tensor<2x128xf32>,
                        %mem_len: index, %same: i1, %seed: i64, %offset: i64, %training: i1,
                        %col: i64)
    -> tensor<?x?x2x128xf32> {
  %base = arith.constant 0 : i64
  %o = txl.rel_attention %q, %k, %v, %r, %u, %vb, %mem_len, %same
      dropatt(%seed, %offset, %training, %base, %col)
      {dropatt = 1.000000e-01 : f64, dropatt_stream = 3 : i64, scale = 0.088388346 : f32}
      : tensor<?x?x2x128xf32>, tensor<?x?x2x128xf32>, tensor<?x?x2x128xf32>,
        tensor<?x2x128xf32>, tensor<2x128xf32>, tensor<2x128xf32> -> tensor<?x?x2x128xf32>
  return %o : tensor<?x?x2x128xf32>
}

// -----

// Negative cases: ops the kernel does not cover stay for the CPU lowering,
// and a module without a kernel gets no gpu.module.

// CHECK-LABEL: module {
// CHECK-NOT: gpu.module
// CHECK-LABEL: func.func @f64_stays
// CHECK: txl.rel_attention
// CHECK-NOT: gpu.launch_func
func.func @f64_stays(%q: tensor<?x?x2x16xf64>, %k: tensor<?x?x2x16xf64>, %v: tensor<?x?x2x16xf64>,
                     %r: tensor<?x2x16xf64>, %u: tensor<2x16xf64>, %vb: tensor<2x16xf64>,
                     %mem_len: index, %same: i1) -> tensor<?x?x2x16xf64> {
  %o = txl.rel_attention %q, %k, %v, %r, %u, %vb, %mem_len, %same {scale = 0.25 : f32}
      : tensor<?x?x2x16xf64>, tensor<?x?x2x16xf64>, tensor<?x?x2x16xf64>,
        tensor<?x2x16xf64>, tensor<2x16xf64>, tensor<2x16xf64> -> tensor<?x?x2x16xf64>
  return %o : tensor<?x?x2x16xf64>
}

// CHECK-LABEL: func.func @dynamic_d_head_stays
// CHECK: txl.rel_attention
// CHECK-NOT: gpu.launch_func
// CHECK-NOT: gpu.module
func.func @dynamic_d_head_stays(%q: tensor<?x?x2x?xf32>, %k: tensor<?x?x2x?xf32>, %v: tensor<?x?x2x?xf32>,
                                %r: tensor<?x2x?xf32>, %u: tensor<2x?xf32>, %vb: tensor<2x?xf32>,
                                %mem_len: index, %same: i1) -> tensor<?x?x2x?xf32> {
  %o = txl.rel_attention %q, %k, %v, %r, %u, %vb, %mem_len, %same {scale = 0.25 : f32}
      : tensor<?x?x2x?xf32>, tensor<?x?x2x?xf32>, tensor<?x?x2x?xf32>,
        tensor<?x2x?xf32>, tensor<2x?xf32>, tensor<2x?xf32> -> tensor<?x?x2x?xf32>
  return %o : tensor<?x?x2x?xf32>
}

// -----

// CHECK-LABEL: module {
// CHECK-NOT: gpu.module
// CHECK: func.func @no_attention
func.func @no_attention(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// RUN: txl-opt %s --txl-rel-attention-to-gpu --split-input-file | FileCheck %s
// RUN: txl-opt %s --txl-rel-attention-to-gpu --split-input-file \
// RUN:   | FileCheck %s --check-prefix=KERNEL

// txl.rel_attention_grad (f32, no dropatt): the dynamic sizes the kernels
// index by checked first (txl-lower-host-asserts makes a failure an error);
// three launches on one set of
// read-only operand views, in the order _q (query tiles of 16 x every
// batch, head column; it writes the row statistics lse and delta,
// [batch, n_head, qlen]), _kv (key tiles of 16 x columns) and _r (tiles of
// 16 r rows x heads, the batch walked inside), 128 work-items each; then
// dq = d(q + u) + d(q + v) and du, dv_bias their sums over positions and
// batch.

// CHECK: module attributes {gpu.container_module}
// CHECK-LABEL: func.func @grad
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : index
// CHECK-DAG: %[[C4:.+]] = arith.constant 4 : index
// CHECK-DAG: %[[C16:.+]] = arith.constant 16 : index
// CHECK-DAG: %[[C128:.+]] = arith.constant 128 : index
// CHECK: cf.assert %{{.+}}, "txl.rel_attention_grad: pos_key must have as many rows as key (klen)"
// CHECK: cf.assert %{{.+}}, "txl.rel_attention_grad: value must have as many rows as key (klen)"
// CHECK: cf.assert %{{.+}}, "txl.rel_attention_grad: query and key must agree on batch, n_head and d_head"
// CHECK: cf.assert %{{.+}}, "txl.rel_attention_grad: query and value must agree on batch, n_head and d_head"
// CHECK: cf.assert %{{.+}}, "txl.rel_attention_grad: d_result must have the query shape"
// CHECK: cf.assert %{{.+}}, "txl.rel_attention_grad: d_result must have the query shape"
// CHECK-NOT: cf.assert
// CHECK: %[[QLEN:.+]] = tensor.dim %arg1, %c0
// CHECK: %[[BATCH:.+]] = tensor.dim %arg1, %[[C1]]
// CHECK: %[[KLEN:.+]] = tensor.dim %arg2, %c0
// CHECK: %[[COLUMNS:.+]] = arith.muli %[[BATCH]], %[[C4]]
// CHECK: %[[LSE:.+]] = memref.alloc(%[[BATCH]], %[[C4]], %[[QLEN]]) : memref<?x?x?xf32>
// CHECK: %[[DELTA:.+]] = memref.alloc(%[[BATCH]], %[[C4]], %[[QLEN]]) : memref<?x?x?xf32>
// CHECK: %[[DQU:.+]] = memref.alloc(%[[QLEN]], %[[BATCH]]) : memref<?x?x4x32xf32>
// CHECK: %[[DQV:.+]] = memref.alloc(%[[QLEN]], %[[BATCH]]) : memref<?x?x4x32xf32>
// CHECK: %[[DK:.+]] = memref.alloc(%[[KLEN]], %[[BATCH]]) : memref<?x?x4x32xf32>
// CHECK: %[[DV:.+]] = memref.alloc(%[[KLEN]], %[[BATCH]]) : memref<?x?x4x32xf32>
// CHECK: %[[DR:.+]] = memref.alloc(%[[KLEN]]) : memref<?x4x32xf32>
// CHECK-COUNT-7: bufferization.to_buffer %{{.+}} read_only
// CHECK-NOT: bufferization.to_buffer
// CHECK: %[[QTILES:.+]] = arith.ceildivui %[[QLEN]], %[[C16]]
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_grad_q_d32 blocks in (%[[QTILES]], %[[COLUMNS]], %[[C1]]) threads in (%[[C128]], %[[C1]], %[[C1]])
// CHECK-SAME: %[[LSE]] : memref<?x?x?xf32>, %[[DELTA]] : memref<?x?x?xf32>
// CHECK: %[[KTILES:.+]] = arith.ceildivui %[[KLEN]], %[[C16]]
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_grad_kv_d32 blocks in (%[[KTILES]], %[[COLUMNS]], %[[C1]]) threads in (%[[C128]], %[[C1]], %[[C1]])
// CHECK-SAME: %[[LSE]] : memref<?x?x?xf32>, %[[DELTA]] : memref<?x?x?xf32>
// CHECK: %[[RTILES:.+]] = arith.ceildivui %[[KLEN]], %[[C16]]
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_grad_r_d32 blocks in (%[[RTILES]], %[[C4]], %[[C1]]) threads in (%[[C128]], %[[C1]], %[[C1]])
// CHECK-SAME: %[[LSE]] : memref<?x?x?xf32>, %[[DELTA]] : memref<?x?x?xf32>
// CHECK: %[[GQU:.+]] = bufferization.to_tensor %[[DQU]] restrict writable
// CHECK: %[[GQV:.+]] = bufferization.to_tensor %[[DQV]] restrict writable
// CHECK: %[[DQ:.+]] = txl.add %[[GQU]], %[[GQV]] : tensor<?x?x4x32xf32>
// CHECK: %[[DU:.+]] = txl.sum_leading %[[GQU]] : tensor<?x?x4x32xf32> -> tensor<4x32xf32>
// CHECK: %[[DVB:.+]] = txl.sum_leading %[[GQV]] : tensor<?x?x4x32xf32> -> tensor<4x32xf32>
// CHECK: %[[GK:.+]] = bufferization.to_tensor %[[DK]] restrict writable
// CHECK: %[[GV:.+]] = bufferization.to_tensor %[[DV]] restrict writable
// CHECK: %[[GR:.+]] = bufferization.to_tensor %[[DR]] restrict writable
// CHECK-NOT: = txl.rel_attention_grad
// CHECK: return %[[DQ]], %[[GK]], %[[GV]], %[[GR]], %[[DU]], %[[DVB]]

// The kernels: workgroup memory only in padded tiles (rows of d_head + 1),
// the owned tile first; nothing allocated inside; each kernel stores only
// into its outputs (and _q into lse and delta), with two barriers around
// every tile load: _q in each of its two passes over the key tiles (the
// online softmax, then d(q + u) and d(q + v)), _kv per query tile, _r per
// (batch column, query tile).

// KERNEL: gpu.module @txl_kernels
// KERNEL: gpu.func @rel_attention_grad_q_d32(
// KERNEL-SAME: %[[LSE:arg7]]: memref<?x?x?xf32>, %[[DELTA:arg8]]: memref<?x?x?xf32>
// KERNEL-SAME: %[[DQU:arg9]]: memref<?x?x?x32xf32, strided<[?, ?, ?, ?], offset: ?>>, %[[DQV:arg10]]: memref<?x?x?x32xf32, strided<[?, ?, ?, ?], offset: ?>>
// KERNEL-SAME: %{{.+}}: index, %{{.+}}: i32, %{{.+}}: f32)
// KERNEL-SAME: workgroup(%{{.+}} : memref<16x33xf32, 3>, %{{.+}} : memref<16x33xf32, 3>, %{{.+}} : memref<16x33xf32, 3>, %{{.+}} : memref<32x33xf32, 3>, %{{.+}} : memref<47x33xf32, 3>)
// KERNEL-SAME: kernel attributes {known_block_size = array<i32: 128, 1, 1>, nvvm.maxnreg = 128 : i32}
// KERNEL-NOT: memref.alloc
// KERNEL: gpu.barrier
// KERNEL: gpu.barrier
// KERNEL: math.log
// KERNEL: memref.store %{{.+}}, %[[LSE]]
// KERNEL: memref.store %{{.+}}, %[[DELTA]]
// KERNEL: gpu.barrier
// KERNEL: gpu.barrier
// KERNEL-NOT: gpu.barrier
// KERNEL: memref.store %{{.+}}, %[[DQU]]
// KERNEL: memref.store %{{.+}}, %[[DQV]]
// KERNEL-NOT: memref.alloc
// KERNEL: gpu.return
// KERNEL: gpu.func @rel_attention_grad_kv_d32(
// KERNEL-SAME: %[[DK:arg9]]: memref<?x?x?x32xf32, strided<[?, ?, ?, ?], offset: ?>>, %[[DV:arg10]]: memref<?x?x?x32xf32, strided<[?, ?, ?, ?], offset: ?>>
// KERNEL-SAME: workgroup(%{{.+}} : memref<16x33xf32, 3>, %{{.+}} : memref<16x33xf32, 3>, %{{.+}} : memref<32x33xf32, 3>, %{{.+}} : memref<32x33xf32, 3>, %{{.+}} : memref<32x33xf32, 3>, %{{.+}} : memref<47x33xf32, 3>)
// KERNEL-NOT: memref.alloc
// KERNEL: scf.for
// KERNEL: gpu.barrier
// KERNEL: gpu.barrier
// KERNEL-NOT: gpu.barrier
// KERNEL: memref.store %{{.+}}, %[[DV]]
// KERNEL: memref.store %{{.+}}, %[[DK]]
// KERNEL-NOT: memref.alloc
// KERNEL: gpu.return
// KERNEL: gpu.func @rel_attention_grad_r_d32(
// KERNEL-SAME: %[[DR:arg9]]: memref<?x?x32xf32, strided<[?, ?, ?], offset: ?>>
// KERNEL-SAME: workgroup(%{{.+}} : memref<16x33xf32, 3>, %{{.+}} : memref<32x33xf32, 3>, %{{.+}} : memref<32x33xf32, 3>, %{{.+}} : memref<32x33xf32, 3>, %{{.+}} : memref<47x33xf32, 3>)
// KERNEL-NOT: memref.alloc
// KERNEL: scf.for
// KERNEL: scf.for
// KERNEL: gpu.barrier
// KERNEL: gpu.barrier
// KERNEL-NOT: gpu.barrier
// KERNEL: memref.store %{{.+}}, %[[DR]]
// KERNEL-NOT: memref.alloc
// KERNEL: gpu.return
func.func @grad(%do: tensor<?x?x4x32xf32>, %q: tensor<?x?x4x32xf32>, %k: tensor<?x?x4x32xf32>,
                %v: tensor<?x?x4x32xf32>, %r: tensor<?x4x32xf32>, %u: tensor<4x32xf32>,
                %vb: tensor<4x32xf32>, %m: index, %s: i1)
    -> (tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>, tensor<?x4x32xf32>,
        tensor<4x32xf32>, tensor<4x32xf32>) {
  %g:6 = txl.rel_attention_grad %do, %q, %k, %v, %r, %u, %vb, %m, %s {scale = 0.17677669 : f32}
      : tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>, tensor<?x4x32xf32>,
        tensor<4x32xf32>, tensor<4x32xf32>
  return %g#0, %g#1, %g#2, %g#3, %g#4, %g#5
      : tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>, tensor<?x4x32xf32>,
        tensor<4x32xf32>, tensor<4x32xf32>
}

// -----

// Narrower row tiles where d_head 80's tiles would pass 48 KiB at 16 rows:
// _q keeps 16 rows (41.1 KB), _kv and _r take 8 (48.9 and 41.6 KB).

// CHECK-LABEL: func.func @grad_d80
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_grad_q_d80
// KERNEL-LABEL: gpu.func @rel_attention_grad_q_d80(
// KERNEL-SAME: workgroup(%{{.+}} : memref<16x81xf32, 3>
// KERNEL-LABEL: gpu.func @rel_attention_grad_kv_d80(
// KERNEL-SAME: workgroup(%{{.+}} : memref<8x81xf32, 3>
// KERNEL-LABEL: gpu.func @rel_attention_grad_r_d80(
// KERNEL-SAME: workgroup(%{{.+}} : memref<8x81xf32, 3>
func.func @grad_d80(%do: tensor<?x?x2x80xf32>, %q: tensor<?x?x2x80xf32>, %k: tensor<?x?x2x80xf32>,
                    %v: tensor<?x?x2x80xf32>, %r: tensor<?x2x80xf32>, %u: tensor<2x80xf32>,
                    %vb: tensor<2x80xf32>, %m: index, %s: i1)
    -> (tensor<?x?x2x80xf32>, tensor<?x?x2x80xf32>, tensor<?x?x2x80xf32>, tensor<?x2x80xf32>,
        tensor<2x80xf32>, tensor<2x80xf32>) {
  %g:6 = txl.rel_attention_grad %do, %q, %k, %v, %r, %u, %vb, %m, %s {scale = 0.11180340 : f32}
      : tensor<?x?x2x80xf32>, tensor<?x?x2x80xf32>, tensor<?x?x2x80xf32>, tensor<?x2x80xf32>,
        tensor<2x80xf32>, tensor<2x80xf32>
  return %g#0, %g#1, %g#2, %g#3, %g#4, %g#5
      : tensor<?x?x2x80xf32>, tensor<?x?x2x80xf32>, tensor<?x?x2x80xf32>, tensor<?x2x80xf32>,
        tensor<2x80xf32>, tensor<2x80xf32>
}

// -----

// With dropatt, the kernels' dropatt forms, each taking seed, offset, the
// stream (stream_base + dropatt_stream), the column, the keep threshold and the kept
// scale (0 and 1 when not training), the masks drawn as the forward's.

// CHECK-LABEL: func.func @dropatt
// CHECK-SAME: %[[SEED:[^:]+]]: i64, %[[OFF:[^:]+]]: i64, %[[TRAINING:[^:]+]]: i1, %[[BASE:[^:]+]]: i64, %[[COL:[^:]+]]: i64)
// CHECK: %[[STREAM:.+]] = arith.addi %[[BASE]], %c3_i64 : i64
// CHECK: %[[MIN:.+]] = arith.select %[[TRAINING]], %c3355444_i32, %c0_i32 : i32
// CHECK: %[[SCALE:.+]] = arith.select %[[TRAINING]]
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_grad_q_dropatt_d32
// CHECK-SAME: %[[SEED]] : i64, %[[OFF]] : i64, %[[STREAM]] : i64, %[[COL]] : i64, %[[MIN]] : i32, %[[SCALE]] : f32)
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_grad_kv_dropatt_d32
// CHECK-SAME: %[[SEED]] : i64, %[[OFF]] : i64, %[[STREAM]] : i64, %[[COL]] : i64, %[[MIN]] : i32, %[[SCALE]] : f32)
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_grad_r_dropatt_d32
// CHECK-SAME: %[[SEED]] : i64, %[[OFF]] : i64, %[[STREAM]] : i64, %[[COL]] : i64, %[[MIN]] : i32, %[[SCALE]] : f32)
// KERNEL-LABEL: gpu.func @rel_attention_grad_q_dropatt_d32(
// KERNEL-SAME: %{{.+}}: i64, %{{.+}}: i64, %{{.+}}: i64, %{{.+}}: i64, %{{.+}}: i32, %{{.+}}: f32)
// KERNEL: arith.mului_extended
// KERNEL-LABEL: gpu.func @rel_attention_grad_kv_dropatt_d32(
// KERNEL: arith.mului_extended
// KERNEL-LABEL: gpu.func @rel_attention_grad_r_dropatt_d32(
// KERNEL: arith.mului_extended
func.func @dropatt(%do: tensor<?x?x2x32xf32>, %q: tensor<?x?x2x32xf32>, %r: tensor<?x2x32xf32>,
                   %u: tensor<2x32xf32>, %m: index, %s: i1, %seed: i64, %off: i64,
                   %training: i1, %base: i64, %col: i64) -> tensor<?x?x2x32xf32> {
  %g:6 = txl.rel_attention_grad %do, %q, %q, %q, %r, %u, %u, %m, %s dropatt(%seed, %off, %training, %base, %col)
      {dropatt = 0.2 : f64, dropatt_stream = 3 : i64, scale = 0.5 : f32}
      : tensor<?x?x2x32xf32>, tensor<?x?x2x32xf32>, tensor<?x?x2x32xf32>, tensor<?x2x32xf32>,
        tensor<2x32xf32>, tensor<2x32xf32>
  return %g#0 : tensor<?x?x2x32xf32>
}

// -----

// The forward's saved statistics (txl-save-attention-stats): the forward
// launches rel_attention_lse_d32, which also writes each row's log-sum-exp
// into a [batch, n_head, qlen] buffer; the backward's first launch is
// _q_saved, which reads that buffer and the forward's output instead of
// recomputing them (one pass over the key tiles, not two: one barrier
// before it reads the dO tile for D, then two per key tile); _kv and _r
// read the same lse buffer.

// CHECK-LABEL: func.func @saved
// CHECK: %[[FLSE:.+]] = memref.alloc(%{{.+}}, %{{.+}}) : memref<?x2x?xf32>
// CHECK: %[[FLSEV:.+]] = memref.cast %[[FLSE]] : memref<?x2x?xf32> to memref<?x?x?xf32>
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_lse_d32
// CHECK-SAME: %[[FLSEV]] : memref<?x?x?xf32>, %{{.+}} : memref<?x?x?x?x32xf32>, %{{.+}} : memref<?x?x?x?xf32>)
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_combine_lse
// CHECK-SAME: %[[FLSEV]] : memref<?x?x?xf32>)
// CHECK: %[[OUT:.+]] = bufferization.to_tensor %{{.+}} restrict writable : memref<?x?x2x32xf32>
// CHECK: %[[LSEB:.+]] = memref.cast %[[FLSE]] : memref<?x2x?xf32> to memref<?x?x?xf32>
// CHECK: %[[DELTA:.+]] = memref.alloc(%{{.+}}, %{{.+}}, %{{.+}}) : memref<?x?x?xf32>
// CHECK: %[[OUTB:.+]] = bufferization.to_buffer %[[OUT]] read_only
// CHECK: %[[OUTV:.+]] = memref.cast %[[OUTB]]
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_grad_q_saved_d32
// CHECK-SAME: %[[LSEB]] : memref<?x?x?xf32>, %[[DELTA]] : memref<?x?x?xf32>, %[[OUTV]] : memref<?x?x?x32xf32, strided<[?, ?, ?, ?], offset: ?>>
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_grad_kv_d32
// CHECK-SAME: %[[LSEB]] : memref<?x?x?xf32>, %[[DELTA]] : memref<?x?x?xf32>
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_grad_r_d32
// CHECK-SAME: %[[LSEB]] : memref<?x?x?xf32>, %[[DELTA]] : memref<?x?x?xf32>
// KERNEL-LABEL: gpu.func @rel_attention_grad_q_saved_d32(
// KERNEL-SAME: %[[SLSE:arg7]]: memref<?x?x?xf32>, %[[SDELTA:arg8]]: memref<?x?x?xf32>, %[[SOUT:arg9]]: memref<?x?x?x32xf32, strided<[?, ?, ?, ?], offset: ?>>, %[[SDQU:arg10]]: memref<?x?x?x32xf32, strided<[?, ?, ?, ?], offset: ?>>, %[[SDQV:arg11]]: memref<?x?x?x32xf32, strided<[?, ?, ?, ?], offset: ?>>
// KERNEL-NOT: math.log
// KERNEL: gpu.barrier
// KERNEL: memref.load %[[SOUT]]
// KERNEL: memref.load %[[SLSE]]
// KERNEL-NOT: memref.store %{{.+}}, %[[SLSE]]
// KERNEL: memref.store %{{.+}}, %[[SDELTA]]
// KERNEL: scf.for
// KERNEL: gpu.barrier
// KERNEL: gpu.barrier
// KERNEL-NOT: gpu.barrier
// KERNEL: memref.store %{{.+}}, %[[SDQU]]
// KERNEL: memref.store %{{.+}}, %[[SDQV]]
// KERNEL: gpu.return
// KERNEL-LABEL: gpu.func @rel_attention_lse_d32(
// KERNEL-SAME: %[[FWDLSE:arg10]]: memref<?x?x?xf32>, %{{.+}}: memref<?x?x?x?x32xf32>, %{{.+}}: memref<?x?x?x?xf32>)
// KERNEL: scf.for
// KERNEL: gpu.barrier
// KERNEL: gpu.barrier
// KERNEL: math.log
// KERNEL: memref.store %{{.+}}, %[[FWDLSE]]
// KERNEL: gpu.return
// Split over the keys, the combine writes the lse: M + log sum_z w_z.
// KERNEL-LABEL: gpu.func @rel_attention_combine_lse(
// KERNEL-SAME: %[[CLSE:arg3]]: memref<?x?x?xf32>)
// KERNEL: math.log
// KERNEL: memref.store %{{.+}}, %[[CLSE]]
// KERNEL: gpu.return
func.func @saved(%do: tensor<?x?x2x32xf32>, %q: tensor<?x?x2x32xf32>, %r: tensor<?x2x32xf32>,
                 %u: tensor<2x32xf32>, %m: index, %s: i1) -> (tensor<?x?x2x32xf32>, tensor<?x?x2x32xf32>) {
  %o, %lse = txl.rel_attention %q, %q, %q, %r, %u, %u, %m, %s {scale = 0.5 : f32}
      : tensor<?x?x2x32xf32>, tensor<?x?x2x32xf32>, tensor<?x?x2x32xf32>, tensor<?x2x32xf32>,
        tensor<2x32xf32>, tensor<2x32xf32> -> tensor<?x?x2x32xf32>, tensor<?x2x?xf32>
  %g:6 = txl.rel_attention_grad %do, %q, %q, %q, %r, %u, %u, %m, %s saved(%lse, %o : tensor<?x2x?xf32>, tensor<?x?x2x32xf32>)
      {scale = 0.5 : f32}
      : tensor<?x?x2x32xf32>, tensor<?x?x2x32xf32>, tensor<?x?x2x32xf32>, tensor<?x2x32xf32>,
        tensor<2x32xf32>, tensor<2x32xf32>
  return %o, %g#0 : tensor<?x?x2x32xf32>, tensor<?x?x2x32xf32>
}

// -----

// d_head 128: the tiles of _kv and _r fit 48 KiB at no row tile, so they
// take the widest within 80 KiB (8 rows: 77,916 and 73,788 bytes, CUDA
// dynamic shared memory after txl-dynamic-shared-memory); _q fits 48 KiB
// at 8 rows (49,020 bytes).

// CHECK-LABEL: func.func @d128
// CHECK-NOT: = txl.rel_attention_grad
// CHECK-COUNT-3: gpu.launch_func
// CHECK-NOT: = txl.rel_attention_grad
// CHECK: return
// CHECK-LABEL: gpu.func @rel_attention_grad_q_d128
// CHECK-SAME: workgroup({{%.+}} : memref<8x129xf32, 3>, {{%.+}} : memref<8x129xf32, 3>, {{%.+}} : memref<8x129xf32, 3>, {{%.+}} : memref<32x129xf32, 3>, {{%.+}} : memref<39x129xf32, 3>) kernel
// CHECK-LABEL: gpu.func @rel_attention_grad_kv_d128
// CHECK-SAME: workgroup({{%.+}} : memref<8x129xf32, 3>, {{%.+}} : memref<8x129xf32, 3>, {{%.+}} : memref<32x129xf32, 3>, {{%.+}} : memref<32x129xf32, 3>, {{%.+}} : memref<32x129xf32, 3>, {{%.+}} : memref<39x129xf32, 3>) kernel
// CHECK-LABEL: gpu.func @rel_attention_grad_r_d128
// CHECK-SAME: workgroup({{%.+}} : memref<8x129xf32, 3>, {{%.+}} : memref<32x129xf32, 3>, {{%.+}} : memref<32x129xf32, 3>, {{%.+}} : memref<32x129xf32, 3>, {{%.+}} : memref<39x129xf32, 3>) kernel
func.func @d128(%do: tensor<?x?x2x128xf32>, %q: tensor<?x?x2x128xf32>, %r: tensor<?x2x128xf32>,
                %u: tensor<2x128xf32>, %m: index, %s: i1) -> tensor<?x?x2x128xf32> {
  %g:6 = txl.rel_attention_grad %do, %q, %q, %q, %r, %u, %u, %m, %s {scale = 0.5 : f32}
      : tensor<?x?x2x128xf32>, tensor<?x?x2x128xf32>, tensor<?x?x2x128xf32>, tensor<?x2x128xf32>,
        tensor<2x128xf32>, tensor<2x128xf32>
  return %g#0 : tensor<?x?x2x128xf32>
}

// -----

// Negative cases, left for the loop lowering (txl-to-linalg): d_head 256
// (the _kv tiles need 140 KB at 4 rows, over 80 KiB) and f64; a module
// with only those gets no gpu.module.

// CHECK-LABEL: module {
// CHECK-NOT: gpu.module
// CHECK-LABEL: func.func @d256_stays
// CHECK: txl.rel_attention_grad
// CHECK-NOT: gpu.launch_func
// CHECK-LABEL: func.func @f64_stays
// CHECK: txl.rel_attention_grad
// CHECK-NOT: gpu.launch_func
// CHECK: return
func.func @d256_stays(%do: tensor<?x?x2x256xf32>, %q: tensor<?x?x2x256xf32>, %r: tensor<?x2x256xf32>,
                      %u: tensor<2x256xf32>, %m: index, %s: i1) -> tensor<?x?x2x256xf32> {
  %g:6 = txl.rel_attention_grad %do, %q, %q, %q, %r, %u, %u, %m, %s {scale = 0.5 : f32}
      : tensor<?x?x2x256xf32>, tensor<?x?x2x256xf32>, tensor<?x?x2x256xf32>, tensor<?x2x256xf32>,
        tensor<2x256xf32>, tensor<2x256xf32>
  return %g#0 : tensor<?x?x2x256xf32>
}

func.func @f64_stays(%do: tensor<?x?x2x32xf64>, %q: tensor<?x?x2x32xf64>, %r: tensor<?x2x32xf64>,
                     %u: tensor<2x32xf64>, %m: index, %s: i1) -> tensor<?x?x2x32xf64> {
  %g:6 = txl.rel_attention_grad %do, %q, %q, %q, %r, %u, %u, %m, %s {scale = 0.5 : f32}
      : tensor<?x?x2x32xf64>, tensor<?x?x2x32xf64>, tensor<?x?x2x32xf64>, tensor<?x2x32xf64>,
        tensor<2x32xf64>, tensor<2x32xf64>
  return %g#0 : tensor<?x?x2x32xf64>
}

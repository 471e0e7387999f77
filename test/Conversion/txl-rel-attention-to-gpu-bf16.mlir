// RUN: txl-opt %s --txl-rel-attention-to-gpu=precision=bf16 | FileCheck %s
// RUN: txl-opt %s --txl-rel-attention-to-gpu=precision=f16 | FileCheck %s --check-prefix=F16
// RUN: not txl-opt %s --txl-rel-attention-to-gpu=precision=fp16 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD

// precision=bf16: the tensor-core kernel. Its operands are views with a
// unit stride along d_head (column offsets become immediates of the loads),
// the grid is ceil(qlen / 64) x (batch * n_head) x parts workgroups of 128
// work-items (4 subgroups of 16 query rows); the runtime chooses the parts
// for 2 resident workgroups per SM, and rel_attention_combine joins them.

// CHECK-LABEL: func.func @eval
// CHECK-DAG: %[[C2I64:.+]] = arith.constant 2 : i64
// CHECK-DAG: %[[C64:.+]] = arith.constant 64 : index
// CHECK-DAG: %[[C128:.+]] = arith.constant 128 : index
// CHECK: %[[TILES:.+]] = arith.ceildivui %{{.+}}, %[[C64]] : index
// CHECK: bufferization.to_buffer %{{.+}} read_only : tensor<?x?x4x32xf32> to memref<?x?x4x32xf32, strided<[?, ?, ?, 1], offset: ?>>
// CHECK: call @txl_device_attention_parts(%{{.+}}, %[[C2I64]], %{{.+}})
// CHECK: %[[PARTS:.+]] = arith.index_cast %{{.+}} : i64 to index
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_bf16_d32 blocks in (%[[TILES]], %{{.+}}, %[[PARTS]]) threads in (%[[C128]], %c1, %c1)
// CHECK-SAME: memref<?x?x?x?x32xf32>, %{{.+}} : memref<?x?x?x?xf32>)
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_combine

// The kernel: global buffers are only its operands; workgroup memory is the
// AC (64 x 32) and X (64 x 48: the 16 + 32 - 1 window rows of r, padded to
// 6 blocks of 8) tiles of the 4 subgroups. Per key tile: a barrier, the AC
// block loop (4 blocks of 8 keys, 2 k-steps of 16 for d_head 32) and the X
// block loop (6 blocks), both kept rolled, each storing its accumulators,
// a second barrier, then the online softmax (quad shuffles) and the P·V
// loop over 2 key halves with 4 blocks of 8 output columns. 8 mma.sync in
// all; nothing allocated; the output is the only global store.

// CHECK: gpu.func @rel_attention_bf16_d32(
// CHECK-SAME: %[[Q:arg0]]: memref<?x?x?x32xf32, strided<[?, ?, ?, 1], offset: ?>>
// CHECK-SAME: %[[O:arg6]]: memref<?x?x?x32xf32, strided<[?, ?, ?, 1], offset: ?>>
// CHECK-SAME: %[[PO:arg10]]: memref<?x?x?x?x32xf32>, %[[PL:arg11]]: memref<?x?x?x?xf32>)
// CHECK-SAME: workgroup(%[[AC:.+]] : memref<64x33xf32, 3>, %[[X:.+]] : memref<64x49xf32, 3>)
// CHECK-SAME: kernel attributes {known_block_size = array<i32: 128, 1, 1>, nvvm.maxnreg = 255 : i32}
// CHECK-NOT: memref.alloc
// CHECK-COUNT-4: arith.truncf %{{.+}} : f32 to bf16
// CHECK: scf.for
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: scf.for %{{.+}} = %c0 to %c4 step %c1 {
// CHECK-COUNT-2: nvgpu.mma.sync({{.+}}) {mmaShape = [16, 8, 16]} : (vector<4x2xbf16>, vector<2x2xbf16>, vector<2x2xf32>) -> vector<2x2xf32>
// CHECK-COUNT-4: memref.store %{{.+}}, %[[AC]]
// CHECK-NEXT: } {loop_annotation = #loop_annotation}
// CHECK: scf.for %{{.+}} = %c0 to %c6 step %c1 {
// CHECK-COUNT-2: nvgpu.mma.sync
// CHECK-COUNT-4: memref.store %{{.+}}, %[[X]]
// CHECK-NEXT: } {loop_annotation = #loop_annotation}
// CHECK-NEXT: gpu.barrier
// CHECK-NOT: gpu.barrier
// CHECK: memref.load %[[AC]]
// CHECK: memref.load %[[X]]
// CHECK: gpu.shuffle  xor %{{.+}}, %c2_i32, %c32_i32 : f32
// CHECK: gpu.shuffle  xor %{{.+}}, %c1_i32, %c32_i32 : f32
// CHECK: scf.for %{{.+}} = %c0 to %c2 step %c1 iter_args(
// CHECK-COUNT-4: nvgpu.mma.sync
// CHECK-NOT: nvgpu.mma.sync
// CHECK-NOT: gpu.barrier
// CHECK-NOT: memref.alloc
// CHECK: scf.if
// CHECK: memref.store %{{.+}}, %[[PL]]
// CHECK: memref.store %{{.+}}, %[[PO]]
// CHECK: } else {
// CHECK: memref.store %{{.+}}, %[[O]]
// CHECK: gpu.return

// precision=f16 (--precision=fp16): the same kernel with f16 operands.
// F16: gpu.launch_func @txl_kernels::@rel_attention_f16_d32
// F16: gpu.func @rel_attention_f16_d32(
// F16-COUNT-4: arith.truncf %{{.+}} : f32 to f16
// F16: nvgpu.mma.sync({{.+}}) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>

// BAD: error: precision must be f32, bf16 or f16, not 'fp16'

func.func @eval(%q: tensor<?x?x4x32xf32>, %k: tensor<?x?x4x32xf32>, %v: tensor<?x?x4x32xf32>,
                %r: tensor<?x4x32xf32>, %u: tensor<4x32xf32>, %vb: tensor<4x32xf32>,
                %mem_len: index, %same: i1) -> tensor<?x?x4x32xf32> {
  %o = txl.rel_attention %q, %k, %v, %r, %u, %vb, %mem_len, %same {scale = 0.17677669 : f32}
      : tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>,
        tensor<?x4x32xf32>, tensor<4x32xf32>, tensor<4x32xf32> -> tensor<?x?x4x32xf32>
  return %o : tensor<?x?x4x32xf32>
}

// RUN: txl-opt %s --txl-rel-attention-to-gpu=precision=bf16 --split-input-file | FileCheck %s
// RUN: txl-opt %s --txl-rel-attention-to-gpu=precision=fp16 --split-input-file \
// RUN:   | FileCheck %s --check-prefix=F16 --implicit-check-not=bf16
// RUN: txl-opt %s --txl-rel-attention-to-gpu --split-input-file \
// RUN:   | FileCheck %s --check-prefix=F32
// RUN: awk '/^func.func @grad\(/,/^}/' %s | txl-opt --txl-rel-attention-to-gpu=precision=bf16 \
// RUN:   | grep -c nvgpu.mma.sync | FileCheck %s --check-prefix=MMAS

// precision=bf16: txl.rel_attention_grad's _kv launch is the
// tensor-core kernel rel_attention_grad_kv_bf16_d<d_head> over key tiles of
// 64 (4 subgroups of 16 keys) x the (batch, head) columns, and its _r
// launch rel_attention_grad_r_bf16_d<d_head> over tiles of 64 r rows x the
// heads, with the f32 kernels' arguments (with a unit stride along
// d_head); without the forward's saved statistics, _q stays the f32
// kernel on 16-row tiles (with them, @saved below). precision=fp16 makes the
// same kernels with f16 operands (rel_attention_grad_kv_f16_d<d_head>, no
// bf16 left); precision=f32 keeps the f32 kernels. Over d_head 80 the
// accumulators of all of d_head's columns would spill: the columns are
// split over the grid's z (@grad_d128, @saved_dropatt_d128), and past 128
// the f32 kernels run (@grad_d144).

// CHECK: #[[NOUNROLL:.+]] = #llvm.loop_unroll<disable = true>
// CHECK: #[[$ROLLED:.+]] = #llvm.loop_annotation<unroll = #[[NOUNROLL]]>
// CHECK-LABEL: func.func @grad
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : index
// CHECK-DAG: %[[C16:.+]] = arith.constant 16 : index
// CHECK-DAG: %[[C64:.+]] = arith.constant 64 : index
// CHECK-DAG: %[[C128:.+]] = arith.constant 128 : index

// CHECK: %[[COLUMNS:.+]] = arith.muli
// CHECK: %[[LSE:.+]] = memref.alloc(
// CHECK: %[[DELTA:.+]] = memref.alloc(
// CHECK: arith.ceildivui %{{.+}}, %[[C16]]
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_grad_q_d32
// CHECK: %[[KTILES:.+]] = arith.ceildivui %[[KLEN:.+]], %[[C64]]
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_grad_kv_bf16_d32 blocks in (%[[KTILES]], %[[COLUMNS]], %[[C1]]) threads in (%[[C128]], %[[C1]], %[[C1]])
// CHECK-SAME: %[[LSE]] : memref<?x?x?xf32>, %[[DELTA]] : memref<?x?x?xf32>
// CHECK: %[[RTILES:.+]] = arith.ceildivui %[[KLEN]], %[[C64]]
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_grad_r_bf16_d32 blocks in (%[[RTILES]], %c4, %[[C1]]) threads in (%[[C128]], %[[C1]], %[[C1]])

// F16-LABEL: func.func @grad
// F16: gpu.launch_func @txl_kernels::@rel_attention_grad_q_d32
// F16: gpu.launch_func @txl_kernels::@rel_attention_grad_kv_f16_d32 blocks in (%{{.+}}, %{{.+}}, %c1) threads in (%c128, %c1, %c1)
// F16: gpu.launch_func @txl_kernels::@rel_attention_grad_r_f16_d32 blocks in (%{{.+}}, %c4, %c1) threads in (%c128, %c1, %c1)
// F16: gpu.func @rel_attention_grad_kv_f16_d32(
// F16-NOT: gpu.func
// F16: nvgpu.mma.sync({{.+}}) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
// F16: gpu.func @rel_attention_grad_r_f16_d32(
// F16-NOT: gpu.func
// F16: nvgpu.mma.sync({{.+}}) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
// F32: gpu.launch_func @txl_kernels::@rel_attention_grad_kv_d32
// F32-NOT: nvgpu.mma.sync
// F32: gpu.func @rel_attention_grad_kv_d32(

// The kernel: its global buffers are its arguments, taken with a unit
// stride along d_head; workgroup memory only X, the 32 queries x 96 window
// rows of (q + v) r_window^T (padded to 97 columns), and the P M and dS
// tiles of the 4 subgroups' 16 keys x 32 queries. The key and value A
// fragments (2 k-steps of d_head 32, 8 values each) are loaded once, then
// k_j . u (a loop over the quad's columns and two xor shuffles), before the
// walk over query tiles of 32, whose loop carries dv's and dk's
// accumulators (4 blocks of 8 columns x 4 values each) and the lanes' dS
// row sums. Per tile: a barrier; the rolled loop that stages the tile's dO
// and q (32 queries x 32 columns, 8 elements per work-item), rounded, as
// B(i, d) core matrices at [d / 8][i / 8][d % 8][i % 8]; the rolled loop
// over the subgroup's 6 blocks of X storing its accumulators; a second
// barrier (for X and the staged tiles), then a rolled loop over 4 blocks
// of 8 queries: AC^T and dP^T (2 k-steps each), the rows' lse and D, the
// score's positional term read from X at row ii and column 31 - ii + jj
// (the rel-shift), P M and dS stored; then the lane's own P M and dS
// entries (2 k-steps of 16 queries) as the A operands of dv's and dk's
// warpgroup products on the staged dO and q (4 blocks of 8 columns each).
// dv and dk (plus the dS row sum times u) are stored under the key and
// column bounds.
// MMAS: {{^}}12{{$}}
// (_kv: 2 in the X loop, 4 for AC^T and dP^T; _r: 4 in the Z and V loop,
// 2 for BD^T; dv, dk and dr are warpgroup products.)

// CHECK: gpu.func @rel_attention_grad_kv_bf16_d32(
// CHECK-SAME: %[[DO:arg0]]: memref<?x?x?x32xf32, strided<[?, ?, ?, 1], offset: ?>>, %[[Q:arg1]]: memref<?x?x?x32xf32, strided<[?, ?, ?, 1], offset: ?>>
// CHECK-SAME: %[[LSEK:arg7]]: memref<?x?x?xf32>, %[[DELTAK:arg8]]: memref<?x?x?xf32>
// CHECK-SAME: %[[DK:arg9]]: memref<?x?x?x32xf32, strided<[?, ?, ?, 1], offset: ?>>, %[[DV:arg10]]: memref<?x?x?x32xf32, strided<[?, ?, ?, 1], offset: ?>>
// CHECK-SAME: %{{.+}}: index, %{{.+}}: i32, %{{.+}}: f32)
// CHECK-SAME: workgroup(%[[X:.+]] : memref<32x97xf32, 3>, %[[PT:.+]] : memref<64x33xf32, 3>, %[[DST:.+]] : memref<64x33xf32, 3>, %[[DOT:.+]] : memref<4x4x8x8xbf16, 3>, %[[QT:.+]] : memref<4x4x8x8xbf16, 3>)
// CHECK-SAME: kernel attributes {known_block_size = array<i32: 128, 1, 1>, nvvm.maxnreg = 255 : i32}
// CHECK-NOT: memref.alloc
// CHECK-COUNT-32: arith.truncf %{{.+}} : f32 to bf16
// CHECK: scf.for %{{.+}} = %{{.+}} to %c32 step %c4 iter_args(
// CHECK: gpu.shuffle  xor %{{.+}}, %c2_i32, %c32_i32 : f32
// CHECK: gpu.shuffle  xor %{{.+}}, %c1_i32, %c32_i32 : f32
// CHECK: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c32 iter_args({{.+}}) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: gpu.thread_id  x
// CHECK-NEXT: scf.for %{{.+}} = %c0 to %c8 step %c1 {
// CHECK: %[[SI:.+]] = arith.divui %{{.+}}, %c32 : index
// CHECK-NEXT: %[[SD:.+]] = arith.remui %{{.+}}, %c32 : index
// CHECK-NEXT: %[[IBLK:.+]] = arith.divui %[[SI]], %c8 : index
// CHECK-NEXT: %[[IIN:.+]] = arith.remui %[[SI]], %c8 : index
// CHECK-NEXT: %[[DBLK:.+]] = arith.divui %[[SD]], %c8 : index
// CHECK-NEXT: %[[DIN:.+]] = arith.remui %[[SD]], %c8 : index
// CHECK: memref.load %[[DO]][%{{.+}}, %{{.+}}, %{{.+}}, %[[SD]]]
// CHECK: arith.truncf %{{.+}} : f32 to bf16
// CHECK-NEXT: memref.store %{{.+}}, %[[DOT]][%[[DBLK]], %[[IBLK]], %[[DIN]], %[[IIN]]]
// CHECK: memref.load %[[Q]][%{{.+}}, %{{.+}}, %{{.+}}, %[[SD]]]
// CHECK: arith.truncf %{{.+}} : f32 to bf16
// CHECK-NEXT: memref.store %{{.+}}, %[[QT]][%[[DBLK]], %[[IBLK]], %[[DIN]], %[[IIN]]]
// CHECK-NEXT: } {loop_annotation = #[[$ROLLED]]}
// CHECK: scf.for %{{.+}} = %c0 to %c6 step %c1 {
// CHECK-COUNT-2: nvgpu.mma.sync({{.+}}) {mmaShape = [16, 8, 16]} : (vector<4x2xbf16>, vector<2x2xbf16>, vector<2x2xf32>) -> vector<2x2xf32>
// CHECK-COUNT-4: memref.store %{{.+}}, %[[X]]
// CHECK-NEXT: } {loop_annotation = #[[$ROLLED]]}
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: scf.for %{{.+}} = %c0 to %c4 step %c1 {
// CHECK-COUNT-4: nvgpu.mma.sync
// CHECK: memref.load %[[LSEK]]
// CHECK: memref.load %[[DELTAK]]
// CHECK: %[[SKEW:.+]] = arith.subi %c31, %[[II:.+]] : index
// CHECK-NEXT: %[[W:.+]] = arith.addi %[[SKEW]], %{{.+}} : index
// CHECK-NEXT: memref.load %[[X]][%[[II]], %[[W]]] : memref<32x97xf32, 3>
// CHECK: math.exp
// CHECK: memref.store %{{.+}}, %[[PT]][%{{.+}}, %[[II]]]
// CHECK-NEXT: memref.store %{{.+}}, %[[DST]][%{{.+}}, %[[II]]]
// CHECK: } {loop_annotation = #[[$ROLLED]]}
// CHECK-NOT: nvgpu.mma.sync
// CHECK-COUNT-16: memref.load %[[PT]]
// CHECK-NOT: nvgpu.mma.sync
// CHECK: txl.warpgroup_mma %{{.+}}, %[[DOT]], %{{.+}} : vector<2x4x2xbf16>, memref<4x4x8x8xbf16, 3>, vector<4x2x2xf32>
// CHECK: txl.warpgroup_mma %{{.+}}, %[[QT]], %{{.+}} : vector<2x4x2xbf16>, memref<4x4x8x8xbf16, 3>, vector<4x2x2xf32>
// CHECK-NOT: nvgpu.mma.sync
// CHECK: scf.yield
// CHECK-NOT: gpu.barrier
// CHECK-NOT: memref.alloc
// CHECK: memref.store %{{.+}}, %[[DV]]
// CHECK: memref.store %{{.+}}, %[[DK]]
// CHECK-NOT: memref.alloc
// CHECK: gpu.return

// The _r kernel: workgroup memory only Z and V, (q + u) k_window^T and
// dO v_window^T for 32 queries x the 96 window keys (k row m0 - qlen + 1 +
// i0 + w) of a tile pair, padded to 97 columns, the dS^T tile of the 4
// subgroups' 16 r rows x 32 queries, and the query tile's q + v as B(i, d)
// core matrices. The r fragments (2 k-steps of d_head 32) are loaded once;
// the batch loop and in it the walk over query tiles of 32 carry dr's
// accumulators (4 blocks of 8 columns x 4 values). Per tile: a barrier,
// the rolled loop staging q + v (rounded; the bias added), the rolled loop
// over the subgroup's 6 blocks of Z and V (2 k-steps each) storing both, a
// second barrier, then a rolled loop over 4 blocks of 8 queries: BD^T (2
// k-steps), the queries' lse and D, AC^T and dP^T read from Z and V at row
// ii and column mm + ii (the rel-shift), dS^T stored at the lane's own
// position; then those entries (2 k-steps of 16 queries) as the A operand
// of dr's warpgroup product on the staged q + v (4 blocks). dr is stored
// under the row and column bounds.

// CHECK-LABEL: gpu.func @rel_attention_grad_r_bf16_d32(
// CHECK-SAME: %[[LSER:arg7]]: memref<?x?x?xf32>, %[[DELTAR:arg8]]: memref<?x?x?xf32>
// CHECK-SAME: %[[DR:arg9]]: memref<?x?x32xf32, strided<[?, ?, 1], offset: ?>>
// CHECK-SAME: workgroup(%[[Z:.+]] : memref<32x97xf32, 3>, %[[V:.+]] : memref<32x97xf32, 3>, %[[DSR:.+]] : memref<64x33xf32, 3>, %[[QVT:.+]] : memref<4x4x8x8xbf16, 3>)
// CHECK-SAME: kernel attributes {known_block_size = array<i32: 128, 1, 1>, nvvm.maxnreg = 255 : i32}
// CHECK-NOT: memref.alloc
// CHECK-COUNT-16: arith.truncf %{{.+}} : f32 to bf16
// CHECK: scf.for %{{.+}} = %c0 to %{{.+}} step %c1 iter_args({{.+}}) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
// CHECK-NEXT: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c32 iter_args(
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: gpu.thread_id  x
// CHECK-NEXT: scf.for %{{.+}} = %c0 to %c8 step %c1 {
// CHECK: %[[SIR:.+]] = arith.divui %{{.+}}, %c32 : index
// CHECK-NEXT: %[[SDR:.+]] = arith.remui %{{.+}}, %c32 : index
// CHECK-NEXT: %[[IBLKR:.+]] = arith.divui %[[SIR]], %c8 : index
// CHECK-NEXT: %[[IINR:.+]] = arith.remui %[[SIR]], %c8 : index
// CHECK-NEXT: %[[DBLKR:.+]] = arith.divui %[[SDR]], %c8 : index
// CHECK-NEXT: %[[DINR:.+]] = arith.remui %[[SDR]], %c8 : index
// CHECK: memref.load %arg1[%{{.+}}, %{{.+}}, %{{.+}}, %[[SDR]]]
// CHECK: memref.load %arg6[%{{.+}}, %[[SDR]]]
// CHECK: arith.addf
// CHECK-NEXT: arith.truncf %{{.+}} : f32 to bf16
// CHECK-NEXT: memref.store %{{.+}}, %[[QVT]][%[[DBLKR]], %[[IBLKR]], %[[DINR]], %[[IINR]]]
// CHECK-NEXT: } {loop_annotation = #[[$ROLLED]]}
// CHECK: scf.for %{{.+}} = %c0 to %c6 step %c1 {
// CHECK-COUNT-4: nvgpu.mma.sync({{.+}}) {mmaShape = [16, 8, 16]} : (vector<4x2xbf16>, vector<2x2xbf16>, vector<2x2xf32>) -> vector<2x2xf32>
// CHECK-COUNT-4: memref.store %{{.+}}, %[[Z]]
// CHECK-COUNT-4: memref.store %{{.+}}, %[[V]]
// CHECK-NEXT: } {loop_annotation = #[[$ROLLED]]}
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: scf.for %{{.+}} = %c0 to %c4 step %c1 {
// CHECK-COUNT-2: nvgpu.mma.sync
// CHECK: memref.load %[[LSER]]
// CHECK-NEXT: memref.load %[[DELTAR]]
// The query's visible keys as one 32-bit range (first, count), set once per
// query; then per pair one unsigned comparison of the key against it.
// CHECK: %[[COUNTR:.+]] = arith.select %{{.+}}, %{{.+}}, %c0_i32 : i32
// CHECK-NEXT: %[[FIRSTR:.+]] = arith.addi %{{.+}}, %c1_i32 : i32
// CHECK-NEXT: %[[MM:.+]] = arith.addi %{{.+}}, %{{.+}} : index
// CHECK-NEXT: arith.addi %{{.+}}, %[[MM]] : index
// CHECK-NEXT: %[[WR:.+]] = arith.addi %[[MM]], %[[IIR:.+]] : index
// CHECK-NEXT: memref.load %[[Z]][%[[IIR]], %[[WR]]]
// CHECK-NEXT: memref.load %[[V]][%[[IIR]], %[[WR]]]
// CHECK-NOT: arith.cmpi {{sle|sgt|sge|slt}}
// CHECK: %[[KEYR:.+]] = arith.subi %{{.+}}, %[[FIRSTR]] : i32
// CHECK-NEXT: arith.cmpi ult, %[[KEYR]], %[[COUNTR]] : i32
// CHECK-NOT: arith.cmpi {{sle|sgt|sge|slt}}
// CHECK: math.exp
// CHECK: memref.store %{{.+}}, %[[DSR]][%[[MM]], %[[IIR]]]
// CHECK: } {loop_annotation = #[[$ROLLED]]}
// CHECK-NOT: nvgpu.mma.sync
// CHECK-COUNT-16: memref.load %[[DSR]]
// CHECK-NOT: nvgpu.mma.sync
// CHECK: txl.warpgroup_mma %{{.+}}, %[[QVT]], %{{.+}} : vector<2x4x2xbf16>, memref<4x4x8x8xbf16, 3>, vector<4x2x2xf32>
// CHECK-NOT: nvgpu.mma.sync
// CHECK: scf.yield
// CHECK-NOT: gpu.barrier
// CHECK-NOT: memref.alloc
// CHECK: memref.store %{{.+}}, %[[DR]]
// CHECK: gpu.return
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

// d_head 128: the tensor-core _kv kernel over 4 parts of 32 columns and
// _r over 2 of 64, along the grid's z; each workgroup computes the
// probabilities over all of d_head and accumulates its blocks of 8 columns
// from 32 z (_kv; 64 z for _r: the staged dO, q and q + v columns and the
// stores offset by it): dv's and dk's warpgroup products have N = 32, a
// quarter of d_head 128, dr's N = 64.
// CHECK-LABEL: func.func @grad_d128
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_grad_q_d128 blocks in (%{{.+}}, %{{.+}}, %c1)
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_grad_kv_bf16_d128 blocks in (%{{.+}}, %{{.+}}, %c4) threads in (%c128, %c1, %c1)
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_grad_r_bf16_d128 blocks in (%{{.+}}, %{{.+}}, %c2) threads in (%c128, %c1, %c1)
// CHECK-LABEL: gpu.func @rel_attention_grad_kv_bf16_d128(
// CHECK: %[[KVZ:.+]] = gpu.block_id  z
// CHECK-NEXT: %[[KVCOL0:.+]] = arith.muli %[[KVZ]], %c32 : index
// CHECK: gpu.barrier
// CHECK: scf.for %{{.+}} = %c0 to %c8 step %c1 {
// CHECK: %[[KVSD:.+]] = arith.remui %{{.+}}, %c32 : index
// CHECK: %[[KVD:.+]] = arith.addi %[[KVCOL0]], %[[KVSD]] : index
// CHECK: memref.load %{{.+}}[%{{.+}}, %{{.+}}, %{{.+}}, %[[KVD]]]
// CHECK: gpu.barrier
// CHECK: } {loop_annotation =
// CHECK-NOT: nvgpu.mma.sync
// CHECK: txl.warpgroup_mma %{{.+}} : vector<2x4x2xbf16>, memref<4x4x8x8xbf16, 3>, vector<4x2x2xf32>
// CHECK: txl.warpgroup_mma %{{.+}} : vector<2x4x2xbf16>, memref<4x4x8x8xbf16, 3>, vector<4x2x2xf32>
// CHECK-NOT: nvgpu.mma.sync
// CHECK: arith.addi %[[KVCOL0]], %{{.+}} : index
// CHECK: memref.store
// CHECK-LABEL: gpu.func @rel_attention_grad_r_bf16_d128(
// CHECK: %[[RZ:.+]] = gpu.block_id  z
// CHECK-NEXT: arith.muli %[[RZ]], %c64 : index
// CHECK: txl.warpgroup_mma %{{.+}} : vector<2x4x2xbf16>, memref<8x4x8x8xbf16, 3>, vector<8x2x2xf32>
// CHECK: gpu.return
func.func @grad_d128(%do: tensor<?x?x2x128xf32>, %q: tensor<?x?x2x128xf32>, %r: tensor<?x2x128xf32>,
                     %u: tensor<2x128xf32>, %m: index, %s: i1) -> tensor<?x?x2x128xf32> {
  %g:6 = txl.rel_attention_grad %do, %q, %q, %q, %r, %u, %u, %m, %s {scale = 0.088388346 : f32}
      : tensor<?x?x2x128xf32>, tensor<?x?x2x128xf32>, tensor<?x?x2x128xf32>, tensor<?x2x128xf32>,
        tensor<2x128xf32>, tensor<2x128xf32>
  return %g#1 : tensor<?x?x2x128xf32>
}

// -----

// The dropatt forms at d_head 128: _q_saved, _kv and _r over 4 parts of
// 32 columns (in 2, ptxas spilled); only the first part writes
// D_i; the loop that draws the Philox multipliers keeps its loop-invariant
// values (the round keys) in it (licm disabled).
// CHECK: #[[$NOLICM:.+]] = #llvm.loop_licm<disable = true>
// CHECK: #[[$DRAWS:.+]] = #llvm.loop_annotation<unroll = #{{.+}}, licm = #[[$NOLICM]]>
// CHECK-LABEL: func.func @saved_dropatt_d128
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_grad_q_saved_bf16_dropatt_d128 blocks in (%{{.+}}, %{{.+}}, %c4)
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_grad_kv_bf16_dropatt_d128 blocks in (%{{.+}}, %{{.+}}, %c4)
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_grad_r_bf16_dropatt_d128 blocks in (%{{.+}}, %{{.+}}, %c4)
// CHECK-LABEL: gpu.func @rel_attention_grad_q_saved_bf16_dropatt_d128(
// CHECK: %[[QZ:.+]] = gpu.block_id  z
// CHECK-NEXT: %[[QCOL0:.+]] = arith.muli %[[QZ]], %c32 : index
// CHECK: %[[FIRST:.+]] = arith.cmpi eq, %[[QCOL0]], %c0 : index
// CHECK: %[[WRITES:.+]] = arith.andi %{{.+}}, %[[FIRST]] : i1
// CHECK-NEXT: scf.if %[[WRITES]] {
// CHECK-NEXT: memref.store
// CHECK: arith.mului_extended
// CHECK: } {loop_annotation = #[[$DRAWS]]}
// CHECK-LABEL: gpu.func @rel_attention_grad_kv_bf16_dropatt_d128(
// CHECK: %[[KZ:.+]] = gpu.block_id  z
// CHECK-NEXT: arith.muli %[[KZ]], %c32 : index
// CHECK: arith.mului_extended
// CHECK: } {loop_annotation = #[[$DRAWS]]}
// CHECK-LABEL: gpu.func @rel_attention_grad_r_bf16_dropatt_d128(
// CHECK: %[[PZ:.+]] = gpu.block_id  z
// CHECK-NEXT: arith.muli %[[PZ]], %c32 : index
func.func @saved_dropatt_d128(%do: tensor<?x?x2x128xf32>, %q: tensor<?x?x2x128xf32>, %r: tensor<?x2x128xf32>,
                              %u: tensor<2x128xf32>, %o: tensor<?x?x2x128xf32>, %lse: tensor<?x2x?xf32>,
                              %m: index, %s: i1, %seed: i64, %off: i64, %training: i1, %base: i64,
                              %col: i64) -> (tensor<?x?x2x128xf32>, tensor<?x?x2x128xf32>) {
  %g:6 = txl.rel_attention_grad %do, %q, %q, %q, %r, %u, %u, %m, %s dropatt(%seed, %off, %training, %base, %col)
      saved(%lse, %o : tensor<?x2x?xf32>, tensor<?x?x2x128xf32>)
      {dropatt = 0.2 : f64, dropatt_stream = 3 : i64, scale = 0.088388346 : f32}
      : tensor<?x?x2x128xf32>, tensor<?x?x2x128xf32>, tensor<?x?x2x128xf32>, tensor<?x2x128xf32>,
        tensor<2x128xf32>, tensor<2x128xf32>
  return %g#0, %g#1 : tensor<?x?x2x128xf32>, tensor<?x?x2x128xf32>
}

// -----

// Past kMmaGradSplitMaxHead: the f32 kernels.
// CHECK-LABEL: func.func @grad_d144
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_grad_kv_d144 blocks in (%{{.+}}, %{{.+}}, %c1)
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_grad_r_d144 blocks in (%{{.+}}, %{{.+}}, %c1)
// CHECK-NOT: nvgpu.mma.sync
func.func @grad_d144(%do: tensor<?x?x2x144xf32>, %q: tensor<?x?x2x144xf32>, %r: tensor<?x2x144xf32>,
                     %u: tensor<2x144xf32>, %m: index, %s: i1) -> tensor<?x?x2x144xf32> {
  %g:6 = txl.rel_attention_grad %do, %q, %q, %q, %r, %u, %u, %m, %s {scale = 0.083333336 : f32}
      : tensor<?x?x2x144xf32>, tensor<?x?x2x144xf32>, tensor<?x?x2x144xf32>, tensor<?x2x144xf32>,
        tensor<2x144xf32>, tensor<2x144xf32>
  return %g#1 : tensor<?x?x2x144xf32>
}

// -----

// With dropatt: the dropatt form, with the six Dropatt arguments of the
// f32 kernels, drawing each pair's multiplier (Philox) for P's and dP's
// products.

// CHECK-LABEL: func.func @dropatt
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_grad_q_dropatt_d32
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_grad_kv_bf16_dropatt_d32
// CHECK-SAME: : i64, %{{.+}} : i64, %{{.+}} : i64, %{{.+}} : i64, %{{.+}} : i32, %{{.+}} : f32)
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_grad_r_bf16_dropatt_d32
// CHECK-LABEL: gpu.func @rel_attention_grad_kv_bf16_dropatt_d32(
// CHECK-SAME: %{{.+}}: i64, %{{.+}}: i64, %{{.+}}: i64, %{{.+}}: i64, %[[MINKEPT:.+]]: i32, %{{.+}}: f32)
// CHECK: arith.cmpi ne, %[[MINKEPT]], %c0_i32
// CHECK: arith.mului_extended
// CHECK: nvgpu.mma.sync
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

// With the forward's saved statistics (txl-save-attention-stats): the
// forward is the tensor-core kernel's lse form, and _q is the tensor-core
// rel_attention_grad_q_saved_bf16_d<d_head> over query tiles of 64 (4
// subgroups of 16 queries), with the f32 _q_saved kernel's arguments. Its
// workgroup memory: the subgroups' X (16 queries x 48 window rows of
// (q + v) r_window^T each, padded to 49), dS (16 x 32 keys) and Y (dS
// skewed into the window's columns). Y is zeroed once by the whole
// workgroup; then D_i = dO_i . O_i (a loop over the quad's columns and two
// xor shuffles, stored by the quad's first lane) and lse_i for the lane's
// rows. The key loop carries d(q + u)'s and d(q + v)'s accumulators (4
// blocks of 8 columns x 4 values each). Per key tile of 32: a barrier, the
// rolled loop staging the tile's k (32 keys x 32 columns, 8 per
// work-item), rounded, as B(j, d) core matrices at [d / 8][j / 8][d % 8][j %
// 8], the rolled X loop (6 blocks), a second barrier, the rolled loop over
// 4 blocks of 8 keys (AC and dP, 2 k-steps each; BD from X at row ii and
// column 15 - ii + jj, the rel-shift; dS stored to the dS tile at the
// lane's own position and to Y at the skewed one), a third barrier, then
// d(q + u) += dS k as a warpgroup product on the staged k (2 k-steps of 16
// keys, A from the lane's own dS entries) and the rolled loop of d(q + v)
// += Y r_window (3 k-steps of 16 window rows).
// precision=fp16 keeps the f32 _q_saved (its lse and output from the f16
// forward kernel).

// CHECK: #[[NOUNROLLS:.+]] = #llvm.loop_unroll<disable = true>
// CHECK: #[[$ROLLEDS:.+]] = #llvm.loop_annotation<unroll = #[[NOUNROLLS]]>
// CHECK-LABEL: func.func @saved
// CHECK-DAG: %[[C64Q:.+]] = arith.constant 64 : index
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_bf16_lse_d32
// CHECK: %[[QTILES:.+]] = arith.ceildivui %{{.+}}, %[[C64Q]]
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_grad_q_saved_bf16_d32 blocks in (%[[QTILES]],
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_grad_kv_bf16_d32
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_grad_r_bf16_d32
// CHECK-LABEL: gpu.func @rel_attention_grad_q_saved_bf16_d32(
// CHECK-SAME: %[[LSEQ:arg7]]: memref<?x?x?xf32>, %[[DELTAQ:arg8]]: memref<?x?x?xf32>, %[[OUT:arg9]]: memref<?x?x?x32xf32, strided<[?, ?, ?, 1], offset: ?>>
// CHECK-SAME: %[[DQU:arg10]]: memref<?x?x?x32xf32, strided<[?, ?, ?, 1], offset: ?>>, %[[DQV:arg11]]: memref<?x?x?x32xf32, strided<[?, ?, ?, 1], offset: ?>>
// CHECK-SAME: workgroup(%[[XQ:.+]] : memref<64x49xf32, 3>, %[[DSQ:.+]] : memref<64x33xf32, 3>, %[[Y:.+]] : memref<64x49xf32, 3>, %[[KT:.+]] : memref<4x4x8x8xbf16, 3>)
// CHECK-SAME: kernel attributes {known_block_size = array<i32: 128, 1, 1>, nvvm.maxnreg = 255 : i32}
// CHECK-NOT: memref.alloc
// CHECK: scf.for %{{.+}} = %{{.+}} to %c3136 step %c128 {
// CHECK: memref.store %{{.+}}, %[[Y]]
// CHECK-NEXT: }
// CHECK: memref.load %[[OUT]]
// CHECK: gpu.shuffle  xor %{{.+}}, %c2_i32, %c32_i32 : f32
// CHECK: gpu.shuffle  xor %{{.+}}, %c1_i32, %c32_i32 : f32
// CHECK: memref.store %{{.+}}, %[[DELTAQ]]
// CHECK: memref.load %[[LSEQ]]
// CHECK-NOT: gpu.barrier
// CHECK: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c32 iter_args({{.+}}) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: gpu.thread_id  x
// CHECK-NEXT: scf.for %{{.+}} = %c0 to %c8 step %c1 {
// CHECK: %[[SJ:.+]] = arith.divui %{{.+}}, %c32 : index
// CHECK-NEXT: %[[SDQ:.+]] = arith.remui %{{.+}}, %c32 : index
// CHECK-NEXT: %[[JBLK:.+]] = arith.divui %[[SJ]], %c8 : index
// CHECK-NEXT: %[[JIN:.+]] = arith.remui %[[SJ]], %c8 : index
// CHECK-NEXT: %[[DBLKQ:.+]] = arith.divui %[[SDQ]], %c8 : index
// CHECK-NEXT: %[[DINQ:.+]] = arith.remui %[[SDQ]], %c8 : index
// CHECK: memref.load %arg2[%{{.+}}, %{{.+}}, %{{.+}}, %[[SDQ]]]
// CHECK: arith.truncf %{{.+}} : f32 to bf16
// CHECK-NEXT: memref.store %{{.+}}, %[[KT]][%[[DBLKQ]], %[[JBLK]], %[[DINQ]], %[[JIN]]]
// CHECK-NEXT: } {loop_annotation = #[[$ROLLEDS]]}
// CHECK: scf.for %{{.+}} = %c0 to %c6 step %c1 {
// CHECK-COUNT-2: nvgpu.mma.sync({{.+}}) {mmaShape = [16, 8, 16]} : (vector<4x2xbf16>, vector<2x2xbf16>, vector<2x2xf32>) -> vector<2x2xf32>
// CHECK-COUNT-4: memref.store %{{.+}}, %[[XQ]]
// CHECK-NEXT: } {loop_annotation = #[[$ROLLEDS]]}
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: scf.for %{{.+}} = %c0 to %c4 step %c1 {
// CHECK-COUNT-4: nvgpu.mma.sync
// CHECK: %[[SKQ:.+]] = arith.subi %c15, %[[IIQ:.+]] : index
// CHECK-NEXT: %[[WQ:.+]] = arith.addi %[[SKQ]], %[[JJQ:.+]] : index
// CHECK-NEXT: %[[ROWQ:.+]] = arith.addi %{{.+}}, %[[IIQ]] : index
// CHECK-NEXT: memref.load %[[XQ]][%[[ROWQ]], %[[WQ]]] : memref<64x49xf32, 3>
// CHECK: math.exp
// CHECK: memref.store %[[DS:.+]], %[[DSQ]][%{{.+}}, %[[JJQ]]]
// CHECK: memref.store %[[DS]], %[[Y]][%{{.+}}, %[[WQ]]]
// CHECK: } {loop_annotation = #[[$ROLLEDS]]}
// CHECK-NEXT: gpu.barrier
// CHECK-COUNT-16: memref.load %[[DSQ]]
// CHECK-NOT: nvgpu.mma.sync
// CHECK: txl.warpgroup_mma %{{.+}}, %[[KT]], %{{.+}} : vector<2x4x2xbf16>, memref<4x4x8x8xbf16, 3>, vector<4x2x2xf32>
// CHECK-NOT: nvgpu.mma.sync
// CHECK: scf.for %{{.+}} = %c0 to %c3 step %c1 iter_args(
// CHECK-COUNT-8: memref.load %[[Y]]
// CHECK-COUNT-4: nvgpu.mma.sync
// CHECK: } {loop_annotation = #[[$ROLLEDS]]}
// CHECK-NOT: gpu.barrier
// CHECK-NOT: memref.alloc
// CHECK: memref.store %{{.+}}, %[[DQU]]
// CHECK-NEXT: memref.store %{{.+}}, %[[DQV]]
// CHECK: gpu.return

// F16-LABEL: func.func @saved
// F16: gpu.launch_func @txl_kernels::@rel_attention_f16_lse_d32
// F16: gpu.launch_func @txl_kernels::@rel_attention_grad_q_saved_f16_d32
// F16: gpu.launch_func @txl_kernels::@rel_attention_grad_kv_f16_d32
// F16: gpu.launch_func @txl_kernels::@rel_attention_grad_r_f16_d32
// F16: gpu.func @rel_attention_grad_q_saved_f16_d32(
// F16-NOT: gpu.func
// F16: nvgpu.mma.sync({{.+}}) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
func.func @saved(%do: tensor<?x?x4x32xf32>, %q: tensor<?x?x4x32xf32>, %k: tensor<?x?x4x32xf32>,
                 %v: tensor<?x?x4x32xf32>, %r: tensor<?x4x32xf32>, %u: tensor<4x32xf32>,
                 %vb: tensor<4x32xf32>, %m: index, %s: i1)
    -> (tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>) {
  %o, %lse = txl.rel_attention %q, %k, %v, %r, %u, %vb, %m, %s {scale = 0.17677669 : f32}
      : tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>, tensor<?x4x32xf32>,
        tensor<4x32xf32>, tensor<4x32xf32> -> tensor<?x?x4x32xf32>, tensor<?x4x?xf32>
  %g:6 = txl.rel_attention_grad %do, %q, %k, %v, %r, %u, %vb, %m, %s
      saved(%lse, %o : tensor<?x4x?xf32>, tensor<?x?x4x32xf32>) {scale = 0.17677669 : f32}
      : tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>, tensor<?x4x32xf32>,
        tensor<4x32xf32>, tensor<4x32xf32>
  return %o, %g#0, %g#1 : tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>
}

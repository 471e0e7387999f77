// RUN: txl-opt %s --txl-rel-attention-to-gpu=precision=bf16 --split-input-file | FileCheck %s
// RUN: txl-opt %s --txl-rel-attention-to-gpu=precision=f16 --split-input-file \
// RUN:   | FileCheck %s --check-prefix=F16
// RUN: txl-opt %s --txl-rel-attention-to-gpu --split-input-file \
// RUN:   | FileCheck %s --check-prefix=F32
// RUN: awk '/^func.func @grad/,/^}/' %s | txl-opt --txl-rel-attention-to-gpu=precision=bf16 \
// RUN:   | grep -c nvgpu.mma.sync | FileCheck %s --check-prefix=MMAS

// precision=bf16: txl.rel_attention_grad's _kv launch is the
// tensor-core kernel rel_attention_grad_kv_bf16_d<d_head> over key tiles of
// 64 (4 subgroups of 16 keys) x the (batch, head) columns, with the f32 _kv
// kernel's arguments (with a unit stride along d_head); _q and _r stay the
// f32 kernels, on 16-row tiles. precision=f32 keeps the f32 _kv kernel, and
// so do precision=f16 (whose loss scaling is exact for an f32 backward
// only, train-fp16-opencl.test) and a d_head over 80 (@grad_d128), whose
// accumulators would spill.

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
// CHECK: %[[RTILES:.+]] = arith.ceildivui %[[KLEN]], %[[C16]]
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_grad_r_d32 blocks in (%[[RTILES]]

// F16: gpu.launch_func @txl_kernels::@rel_attention_grad_kv_d32
// F16-NOT: nvgpu.mma.sync
// F16: gpu.func @rel_attention_grad_kv_d32(
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
// row sums. Per tile: a barrier, the rolled loop over the subgroup's 6
// blocks of X storing its accumulators, a second barrier, then a rolled
// loop over 4 blocks of 8 queries: AC^T and dP^T (2 k-steps each), the
// rows' lse and D, the score's positional term read from X at row ii and
// column 31 - ii + jj (the rel-shift), P M and dS stored; then a rolled
// loop over 2 k-steps of 16 queries reading the lane's own P M and dS
// entries as A fragments for dv and dk (4 blocks each). dv and dk (plus
// the dS row sum times u) are stored under the key and column bounds.
// MMAS: {{^}}14{{$}}
// (2 in the X loop, 4 for AC^T and dP^T, 8 for dv and dk.)

// CHECK: gpu.func @rel_attention_grad_kv_bf16_d32(
// CHECK-SAME: %[[Q:arg1]]: memref<?x?x?x32xf32, strided<[?, ?, ?, 1], offset: ?>>
// CHECK-SAME: %[[LSEK:arg7]]: memref<?x?x?xf32>, %[[DELTAK:arg8]]: memref<?x?x?xf32>
// CHECK-SAME: %[[DK:arg9]]: memref<?x?x?x32xf32, strided<[?, ?, ?, 1], offset: ?>>, %[[DV:arg10]]: memref<?x?x?x32xf32, strided<[?, ?, ?, 1], offset: ?>>
// CHECK-SAME: %{{.+}}: index, %{{.+}}: i32, %{{.+}}: f32)
// CHECK-SAME: workgroup(%[[X:.+]] : memref<32x97xf32, 3>, %[[PT:.+]] : memref<64x33xf32, 3>, %[[DST:.+]] : memref<64x33xf32, 3>)
// CHECK-SAME: kernel attributes {known_block_size = array<i32: 128, 1, 1>, nvvm.maxnreg = 255 : i32}
// CHECK-NOT: memref.alloc
// CHECK-COUNT-32: arith.truncf %{{.+}} : f32 to bf16
// CHECK: scf.for %{{.+}} = %{{.+}} to %c32 step %c4 iter_args(
// CHECK: gpu.shuffle  xor %{{.+}}, %c2_i32, %c32_i32 : f32
// CHECK: gpu.shuffle  xor %{{.+}}, %c1_i32, %c32_i32 : f32
// CHECK: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c32 iter_args({{.+}}) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
// CHECK-NEXT: gpu.barrier
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
// CHECK-NEXT: scf.for %{{.+}} = %c0 to %c2 step %c1 iter_args(
// CHECK-COUNT-8: memref.load %[[PT]]
// CHECK-COUNT-8: nvgpu.mma.sync
// CHECK-NEXT: vector.extract
// CHECK: } {loop_annotation = #[[$ROLLED]]}
// CHECK-NOT: gpu.barrier
// CHECK-NOT: memref.alloc
// CHECK: memref.store %{{.+}}, %[[DV]]
// CHECK: memref.store %{{.+}}, %[[DK]]
// CHECK-NOT: memref.alloc
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

func.func @grad_d128(%do: tensor<?x?x2x128xf32>, %q: tensor<?x?x2x128xf32>, %r: tensor<?x2x128xf32>,
                     %u: tensor<2x128xf32>, %m: index, %s: i1) -> tensor<?x?x2x128xf32> {
  %g:6 = txl.rel_attention_grad %do, %q, %q, %q, %r, %u, %u, %m, %s {scale = 0.088388346 : f32}
      : tensor<?x?x2x128xf32>, tensor<?x?x2x128xf32>, tensor<?x?x2x128xf32>, tensor<?x2x128xf32>,
        tensor<2x128xf32>, tensor<2x128xf32>
  return %g#1 : tensor<?x?x2x128xf32>
}

// -----

// With dropatt: the dropatt form, with the six Dropatt arguments of the
// f32 kernels, drawing each pair's multiplier (Philox) for P's and dP's
// products.

// CHECK-LABEL: func.func @grad_d128
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_grad_kv_d128
// CHECK-LABEL: func.func @dropatt
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_grad_q_dropatt_d32
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_grad_kv_bf16_dropatt_d32
// CHECK-SAME: : i64, %{{.+}} : i64, %{{.+}} : i64, %{{.+}} : i64, %{{.+}} : i32, %{{.+}} : f32)
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_grad_r_dropatt_d32
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

// RUN: txl-opt %s --txl-rel-attention-to-gpu=precision=bf16 \
// RUN:   | FileCheck %s --implicit-check-not=rel_attention_dropatt_d32
// RUN: txl-opt %s --txl-rel-attention-to-gpu=precision=fp16 \
// RUN:   | FileCheck %s --check-prefix=F16 --implicit-check-not=rel_attention_dropatt_d32
// RUN: txl-opt %s --txl-rel-attention-to-gpu=precision=f32 | FileCheck %s --check-prefix=F32

// With dropatt the tensor-core kernels take the dropatt form's arguments
// (the f32 kernel's: seed, offset, stream, column, keep threshold, scale)
// and draw the CPU's Philox masks on the probabilities before the P·V
// product: one launch, in training and in evaluation (the identity), no
// f32 kernel. At f32 there is one launch of the f32 dropatt kernel.
// CHECK-LABEL: func.func @dropatt
// CHECK-SAME: %[[SEED:[^:]+]]: i64, %[[OFFSET:[^:]+]]: i64, %[[TRAINING:[^:]+]]: i1)
// CHECK-NOT: scf.if %[[TRAINING]]
// CHECK: %[[MIN:.+]] = arith.select %[[TRAINING]], %c1677722_i32, %c0_i32 : i32
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_bf16_dropatt_d32
// CHECK-SAME: %[[SEED]] : i64, %[[OFFSET]] : i64, %c3_i64 : i64, %{{.+}} : i64, %[[MIN]] : i32
// CHECK: return
// The kernel: the bf16 products, then per probability the Philox draw (its
// multiply-high rounds) before the P·V warpgroup product.
// CHECK: gpu.func @rel_attention_bf16_dropatt_d32(
// CHECK-SAME: %{{.+}}: i64, %{{.+}}: i64, %{{.+}}: i64, %{{.+}}: i64, %{{.+}}: i32, %{{.+}}: f32, %{{.+}}: memref<?x?x?x?x32xf32>, %{{.+}}: memref<?x?x?x?xf32>)
// CHECK: nvgpu.mma.sync
// CHECK: arith.mului_extended
// CHECK: txl.warpgroup_mma %{{.+}} : vector<2x4x2xbf16>, memref<4x4x8x8xbf16, 3>, vector<4x2x2xf32>
// F16: gpu.launch_func @txl_kernels::@rel_attention_f16_dropatt_d32
// F16: gpu.func @rel_attention_f16_dropatt_d32(
// F32-LABEL: func.func @dropatt
// F32-NOT: scf.if
// F32: gpu.launch_func @txl_kernels::@rel_attention_dropatt_d32
// F32: gpu.launch_func @txl_kernels::@rel_attention_combine
// F32-NOT: gpu.launch_func
// F32: return
func.func @dropatt(%q: tensor<?x?x4x32xf32>, %k: tensor<?x?x4x32xf32>, %v: tensor<?x?x4x32xf32>,
                   %r: tensor<?x4x32xf32>, %u: tensor<4x32xf32>, %vb: tensor<4x32xf32>,
                   %mem_len: index, %same: i1, %seed: i64, %offset: i64, %training: i1)
    -> tensor<?x?x4x32xf32> {
  %base = arith.constant 0 : i64
  %o = txl.rel_attention %q, %k, %v, %r, %u, %vb, %mem_len, %same
      dropatt(%seed, %offset, %training, %base, %base)
      {dropatt = 1.000000e-01 : f64, dropatt_stream = 3 : i64, scale = 0.17677669 : f32}
      : tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>,
        tensor<?x4x32xf32>, tensor<4x32xf32>, tensor<4x32xf32> -> tensor<?x?x4x32xf32>
  return %o : tensor<?x?x4x32xf32>
}

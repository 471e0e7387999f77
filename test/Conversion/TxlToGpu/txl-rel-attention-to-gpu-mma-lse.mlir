// RUN: txl-opt %s --txl-rel-attention-to-gpu=precision=bf16 | FileCheck %s
// RUN: txl-opt %s --txl-rel-attention-to-gpu=precision=fp16 | FileCheck %s --check-prefix=F16

// An op with an lse result (txl-save-attention-stats, the GPU training
// path): the tensor-core kernel's lse form rel_attention_bf16_lse_d<d_head>,
// whose argument after the Dropatt ones (here after scale) is the rows'
// log-sum-exp [batch, n_head, qlen], before the key parts' workspace. With
// one part, the lanes with t = 0 write lse[batch, head, i] = m + log l
// next to the output; split over the keys, each part's lse goes to the
// workspace as in the plain form, and rel_attention_combine_lse writes the
// rows' lse with the output.

// CHECK-LABEL: func.func @lse
// CHECK: %[[LSE:.+]] = memref.alloc({{.+}}) : memref<?x4x?xf32>
// CHECK: %[[LSEARG:.+]] = memref.cast %[[LSE]] : memref<?x4x?xf32> to memref<?x?x?xf32>
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_bf16_lse_d32
// CHECK-SAME: %{{.+}} : f32, %[[LSEARG]] : memref<?x?x?xf32>, %{{.+}} : memref<?x?x?x?x32xf32>, %{{.+}} : memref<?x?x?x?xf32>)
// CHECK: scf.if
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_combine_lse
// CHECK-SAME: %[[LSEARG]] : memref<?x?x?xf32>)
// CHECK: bufferization.to_tensor %[[LSE]]

// CHECK-LABEL: gpu.func @rel_attention_bf16_lse_d32(
// CHECK-SAME: %[[O:arg6]]: memref<?x?x?x32xf32, strided<[?, ?, ?, 1], offset: ?>>
// CHECK-SAME: %{{.+}}: f32, %[[LSEK:arg11]]: memref<?x?x?xf32>, %[[PO:arg12]]: memref<?x?x?x?x32xf32>, %[[PL:arg13]]: memref<?x?x?x?xf32>)
// CHECK: nvgpu.mma.sync
// CHECK: scf.if
// CHECK: math.log
// CHECK-NEXT: arith.addf
// CHECK-NEXT: memref.store %{{.+}}, %[[PL]]
// CHECK: memref.store %{{.+}}, %[[PO]]
// CHECK: } else {
// CHECK: %[[T0:.+]] = arith.cmpi eq, %{{.+}}, %c0 : index
// CHECK-NEXT: %[[FIRST:.+]] = arith.andi %{{.+}}, %[[T0]] : i1
// CHECK-NEXT: scf.if %[[FIRST]] {
// The running maximum is kept in base 2: m ln 2 + log l.
// CHECK-NEXT: %[[M:.+]] = arith.mulf %{{.+}}, %[[LN2:.+]] : f32
// CHECK-NEXT: %[[LOGL:.+]] = math.log %[[L:.+]] : f32
// CHECK-NEXT: %[[ROWLSE:.+]] = arith.addf %[[M]], %[[LOGL]] : f32
// CHECK-NEXT: memref.store %[[ROWLSE]], %[[LSEK]]
// CHECK: memref.store %{{.+}}, %[[O]]
// CHECK: gpu.return

// F16: gpu.launch_func @txl_kernels::@rel_attention_f16_lse_d32
// F16: gpu.func @rel_attention_f16_lse_d32(

func.func @lse(%q: tensor<?x?x4x32xf32>, %k: tensor<?x?x4x32xf32>, %v: tensor<?x?x4x32xf32>,
               %r: tensor<?x4x32xf32>, %u: tensor<4x32xf32>, %vb: tensor<4x32xf32>,
               %mem_len: index, %same: i1) -> (tensor<?x?x4x32xf32>, tensor<?x4x?xf32>) {
  %o, %lse = txl.rel_attention %q, %k, %v, %r, %u, %vb, %mem_len, %same {scale = 0.17677669 : f32}
      : tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>,
        tensor<?x4x32xf32>, tensor<4x32xf32>, tensor<4x32xf32> -> tensor<?x?x4x32xf32>, tensor<?x4x?xf32>
  return %o, %lse : tensor<?x?x4x32xf32>, tensor<?x4x?xf32>
}

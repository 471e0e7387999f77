// RUN: txl-opt %s --txl-rel-attention-to-gpu=precision=bf16 | FileCheck %s

// precision=bf16 at d_head 128, the negative case of
// txl-rel-attention-to-gpu-bf16.mlir's straight-line staging (d_head 32):
// the r window would take the tiles past 48 KiB of static shared memory,
// and K and V's 32 steps in flight would spill; so K and V are staged in a
// rolled loop, and each lane reads its r rows in another.
// Its loads are of one f32 each: the launch checks no alignment.
// CHECK-LABEL: func.func @eval_d128
// CHECK-NOT: memref.extract_strided_metadata
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_bf16_d128
// CHECK-LABEL: gpu.func @rel_attention_bf16_d128(
// CHECK-SAME: workgroup(%{{.+}} : memref<64x49xf32, 3>, %{{.+}} : memref<4x16x8x8xbf16, 3>, %{{.+}} : memref<16x4x8x8xbf16, 3>) kernel
// CHECK-NOT: memref.subview
// CHECK: scf.for
// CHECK: gpu.barrier {txl.sync = "reads-done"}
// CHECK: scf.for %{{.+}} = %c0 to %c32 step %c1
// CHECK: gpu.barrier {txl.sync = "kv-staged"}
// CHECK: scf.for %{{.+}} = %c0 to %c6 step %c1
// CHECK: txl.subgroup_barrier {txl.sync = "stores-done"}

func.func @eval_d128(%q: tensor<?x?x2x128xf32>, %k: tensor<?x?x2x128xf32>, %v: tensor<?x?x2x128xf32>,
                     %r: tensor<?x2x128xf32>, %u: tensor<2x128xf32>, %vb: tensor<2x128xf32>,
                     %mem_len: index, %same: i1) -> tensor<?x?x2x128xf32> {
  %o = txl.rel_attention %q, %k, %v, %r, %u, %vb, %mem_len, %same {scale = 0.088388346 : f32}
      : tensor<?x?x2x128xf32>, tensor<?x?x2x128xf32>, tensor<?x?x2x128xf32>,
        tensor<?x2x128xf32>, tensor<2x128xf32>, tensor<2x128xf32> -> tensor<?x?x2x128xf32>
  return %o : tensor<?x?x2x128xf32>
}

// RUN: txl-opt %s --txl-rel-attention-to-gpu=precision=bf16 | FileCheck %s

// precision=bf16 at d_head 80: the packed form of d_head 128
// (txl-rel-attention-to-gpu-bf16-d128.mlir), K, V and r zero-padded to 128
// columns (forwardPad), whose products skip what lies wholly in the zero
// columns. AC takes K = 80 of K's 128-wide tile (5 k-steps: A is
// vector<5x4x2xbf16> against memref<4x16x8x8xbf16>), P·V N = 80 of V's (10
// n-blocks: vector<10x2x2xf32> against memref<16x4x8x8xbf16>), so that O is
// 40 accumulators a work-item (the walk's state: m, l and O, 44 values);
// X's products read 3 pairs of k-steps and skip the sixth k-step
// (columns 80 to 95): 5 products a block; without dropatt the 6 blocks'
// chains interleave all together (defaultXChains: 6 ldmatrix a pair of
// k-steps, then the 6 blocks' products of each k-step).
// Products over the zero columns gave sm_90a's wgmma one register for all
// four of A's, and ptxas serialized every wgmma of the kernel (C7511,
// ptxas-budgets.test).
// CHECK-LABEL: gpu.func @rel_attention_bf16_d80(
// CHECK-SAME: %[[KT:[a-z0-9]+]] : memref<4x16x8x8xbf16, 3>, %[[VT:[a-z0-9]+]] : memref<16x4x8x8xbf16, 3>
// CHECK: %{{.+}}:44 = scf.for
// CHECK: txl.warpgroup_mma async %{{.+}}, %{{.+}}, %{{.+}} : vector<5x4x2xbf16>, memref<4x16x8x8xbf16, 3>, vector<4x2x2xf32>
// CHECK-COUNT-6: nvgpu.ldmatrix
// CHECK-COUNT-12: nvgpu.mma.sync
// CHECK-COUNT-6: nvgpu.ldmatrix
// CHECK-COUNT-12: nvgpu.mma.sync
// CHECK-COUNT-6: nvgpu.ldmatrix
// CHECK-COUNT-6: nvgpu.mma.sync
// CHECK-NOT: nvgpu.mma.sync
// CHECK-COUNT-24: memref.store
// CHECK-NOT: nvgpu.mma.sync
// CHECK: txl.warpgroup_mma_wait
// CHECK: txl.warpgroup_mma %{{.+}}, %{{.+}}, %{{.+}} : vector<2x4x2xbf16>, memref<16x4x8x8xbf16, 3>, vector<10x2x2xf32>
// CHECK: scf.yield
// CHECK: gpu.return

func.func @eval_d80(%q: tensor<?x?x2x80xf32>, %k: tensor<?x?x2x80xf32>, %v: tensor<?x?x2x80xf32>,
                    %r: tensor<?x2x80xf32>, %u: tensor<2x80xf32>, %vb: tensor<2x80xf32>,
                    %mem_len: index, %same: i1) -> tensor<?x?x2x80xf32> {
  %o = txl.rel_attention %q, %k, %v, %r, %u, %vb, %mem_len, %same {scale = 0.111803398 : f32}
      : tensor<?x?x2x80xf32>, tensor<?x?x2x80xf32>, tensor<?x?x2x80xf32>,
        tensor<?x2x80xf32>, tensor<2x80xf32>, tensor<2x80xf32> -> tensor<?x?x2x80xf32>
  return %o : tensor<?x?x2x80xf32>
}

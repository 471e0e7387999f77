// RUN: txl-opt %S/../Inputs/warpgroup-mma.mlir \
// RUN:   --pass-pipeline='builtin.module(gpu.module(txl-mma-to-nvvm{wgmma=true}))' \
// RUN:   | FileCheck %s --implicit-check-not=txl.warpgroup_mma --implicit-check-not=nvvm.mma.sync
// RUN: txl-opt %S/../Inputs/warpgroup-mma.mlir \
// RUN:   --pass-pipeline='builtin.module(gpu.module(txl-mma-to-nvvm))' -o %t.sync.mlir
// RUN: FileCheck %s --check-prefix=SYNC --implicit-check-not=txl.warpgroup_mma \
// RUN:   --implicit-check-not=llvm.inline_asm --implicit-check-not=wgmma < %t.sync.mlir
// RUN: FileCheck %s --check-prefix=SYNC-MMA < %t.sync.mlir
// RUN: txl-opt %s --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(gpu.module(txl-mma-to-nvvm{wgmma=true}))'
// RUN: sed -e 's/bf16/f16/g' %S/../Inputs/warpgroup-mma.mlir \
// RUN:   | txl-opt --pass-pipeline='builtin.module(gpu.module(txl-mma-to-nvvm{wgmma=true}))' \
// RUN:   | FileCheck %s --check-prefix=F16
//
// The whole chip pipeline on sm_90a, then ptxas: the kernel assembles with
// its wgmma (no spill, no serialization warning).
// RUN: rm -rf %t && mkdir -p %t
// RUN: txl-translate --kernels-to-ptx --ptx-chip=sm_90a %S/../Inputs/warpgroup-mma.mlir -o %t/wg.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t/wg.ptx
// RUN: %ptxas -arch=sm_90a -warn-spills -Werror %t/wg.ptx -o %t/wg.cubin
// And on sm_80 the same module has no wgmma.
// RUN: txl-translate --kernels-to-ptx --ptx-chip=sm_80 %S/../Inputs/warpgroup-mma.mlir -o %t/wg80.ptx
// RUN: FileCheck %s --check-prefix=PTX80 < %t/wg80.ptx
// RUN: FileCheck %s --check-prefix=PTX80-LD < %t/wg80.ptx
// RUN: %ptxas -arch=sm_80 -warn-spills -Werror %t/wg80.ptx -o %t/wg80.cubin

// wgmma=true (sm_90a): the barrier after the staging gets the async-proxy
// fence; the product is the fence, one m64n32k16 per k-step with A's four
// i32 registers and B's descriptor (the tile's shared address + 256 bytes
// per k-step, bits 4-17 into bits 0-13; LBO 128 bytes and SBO 512 bytes as
// 8 << 16 | 32 << 32 = 137439477760), the accumulators tied in place;
// then commit and wait for the group, after which the results are read.
// CHECK-LABEL: gpu.func @wg
// CHECK-SAME: workgroup(%{{.+}} : memref<4x4x8x8xbf16, 3> {llvm.align = 16 : i64})
// CHECK: scf.for
// CHECK: }
// CHECK-NEXT: llvm.inline_asm has_side_effects "fence.proxy.async.shared::cta;", ""  : () -> ()
// CHECK-NEXT: gpu.barrier
// CHECK: %[[PTR:.+]] = memref.extract_aligned_pointer_as_index %{{.+}} : memref<4x4x8x8xbf16, 3> -> index
// CHECK: %[[BASE:.+]] = arith.index_castui %[[PTR]] : index to i64
// CHECK: %[[M0:.+]] = arith.andi %[[BASE]], %c262143_i64
// CHECK: %[[F0:.+]] = arith.shrui %[[M0]], %c4_i64
// CHECK: %[[D0:.+]] = arith.ori %[[F0]], %c137439477760_i64
// CHECK: %[[S1:.+]] = arith.addi %[[BASE]], %c256_i64
// CHECK: %[[M1:.+]] = arith.andi %[[S1]], %c262143_i64
// CHECK: %[[F1:.+]] = arith.shrui %[[M1]], %c4_i64
// CHECK: %[[D1:.+]] = arith.ori %[[F1]], %c137439477760_i64
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-NEXT: %[[W0:.+]] = llvm.inline_asm has_side_effects "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 {$0, $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15}, {$32, $33, $34, $35}, $36, 1, 1, 1, 0;", "=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,r,r,r,r,l"
// CHECK-SAME: %[[D0]] : (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, i32, i32, i32, i32, i64) -> !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>
// CHECK: llvm.inline_asm has_side_effects "wgmma.mma_async
// CHECK-SAME: %[[D1]] :
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-COUNT-16: memref.store %{{.+}} : memref<128x4x2x2xf32>
// CHECK-NOT: llvm.inline_asm
// CHECK: gpu.return

// F16: wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16
// F16: wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16

// Without wgmma: each subgroup's 2 k-steps x 4 n-blocks of mma.sync, the
// B fragments of two n-blocks read by one ldmatrix of 4 core matrices
// from the tile, which gets 16-byte alignment; no scalar load of it, no
// fence.
// SYNC-LABEL: gpu.func @wg
// SYNC-SAME: workgroup(%[[TILE:.+]] : memref<4x4x8x8xbf16, 3> {llvm.align = 16 : i64})
// SYNC: gpu.barrier
// SYNC-NOT: memref.load %{{.+}} : memref<4x4x8x8xbf16, 3>
// SYNC-COUNT-4: nvgpu.ldmatrix %[[TILE]][{{.+}}] {numTiles = 4 : i32, transpose = false} : memref<4x4x8x8xbf16, 3> -> vector<4x2xbf16>
// SYNC-NOT: memref.load %{{.+}} : memref<4x4x8x8xbf16, 3>
// SYNC-NOT: nvgpu.ldmatrix
// SYNC: gpu.return
// SYNC-MMA-COUNT-8: nvvm.mma.sync
// SYNC-MMA-NOT: nvvm.mma.sync
// SYNC-MMA: gpu.return

// PTX: .target sm_90a
// PTX: .shared .align 16 .b8 __wg_wg_0[2048];
// PTX: fence.proxy.async.shared::cta;
// PTX: bar.sync
// PTX: wgmma.fence.sync.aligned;
// PTX-COUNT-2: wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16
// PTX: wgmma.commit_group.sync.aligned;
// PTX: wgmma.wait_group.sync.aligned 0;
// PTX80: .target sm_80
// PTX80: .shared .align 16 .b8 __wg_wg_0[2048];
// PTX80-NOT: wgmma
// PTX80-NOT: fence.proxy
// PTX80-COUNT-8: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// PTX80-LD-COUNT-4: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// PTX80-LD-NOT: ldmatrix
// PTX80-LD: ret;

// B must be a workgroup attribution (whose alignment the lowering sets).
gpu.module @txl_kernels {
  gpu.func @argument(%a: vector<1x4x2xbf16>, %b: memref<1x2x8x8xbf16, 3>,
                     %c: vector<1x2x2xf32>) kernel {
    // expected-error @+1 {{needs b to be a workgroup attribution of its kernel or a view of its dynamic shared memory at a multiple of 16 bytes (its 16-byte alignment)}}
    %d = txl.warpgroup_mma %a, %b, %c : vector<1x4x2xbf16>, memref<1x2x8x8xbf16, 3>, vector<1x2x2xf32>
    gpu.return
  }
}

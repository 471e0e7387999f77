// RUN: txl-opt %s --pass-pipeline='builtin.module(gpu.module(txl-mma-to-nvvm{wgmma=true}))' \
// RUN:   | FileCheck %s
// RUN: txl-opt %s --pass-pipeline='builtin.module(gpu.module(txl-mma-to-nvvm))' \
// RUN:   | FileCheck %s --check-prefix=SYNC
// RUN: rm -rf %t && mkdir -p %t
// RUN: txl-translate --kernels-to-ptx --ptx-chip=sm_90a %s -o %t/prefix.ptx
// RUN: %ptxas -arch=sm_90a -warn-spills -Werror %t/prefix.ptx -o %t/prefix.cubin

// A warpgroup product over a prefix of its tile (the tensor-core
// attention's AC and P·V at a zero-padded d_head): K = 32 (2 k-steps) and
// N = 16 (2 n-blocks) of a tile of 4 n-blocks x 8 k-blocks. The
// descriptors step 256 bytes a k-step as always, and their stride
// dimension byte offset is the tile's row of 8 core matrices, 1,024 bytes
// (1024 >> 4 = 64 in bits 32-45, with LBO 128 >> 4 = 8 in bits 16-29:
// 274878431232), not the 512 of a tile of 2 k-steps: wgmma m64n16k16.
// CHECK-LABEL: gpu.func @prefix
// CHECK: %[[PTR:.+]] = memref.extract_aligned_pointer_as_index %{{.+}} : memref<4x8x8x8xbf16, 3> -> index
// CHECK: arith.ori %{{.+}}, %c274878431232_i64
// CHECK: arith.addi %{{.+}}, %c256_i64
// CHECK: arith.ori %{{.+}}, %c274878431232_i64
// CHECK: "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16
// CHECK: "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16
// CHECK-NOT: wgmma.mma_async
// CHECK: gpu.return

// Without wgmma: each subgroup's 2 k-steps of one ldmatrix of 4 core
// matrices (its 2 n-blocks), whose rows are found with the tile's 8
// k-blocks: the core matrix index divided and taken modulo 8.
// SYNC-LABEL: gpu.func @prefix
// SYNC-COUNT-2: nvgpu.ldmatrix %{{.+}} {numTiles = 4 : i32, transpose = false} : memref<4x8x8x8xbf16, 3> -> vector<4x2xbf16>
// SYNC-NOT: nvgpu.ldmatrix
// SYNC: gpu.return
gpu.module @txl_kernels {
  gpu.func @prefix(%a: vector<2x4x2xbf16>, %c: vector<2x2x2xf32>,
                   %o: memref<128x2x2x2xf32>)
      workgroup(%tile : memref<4x8x8x8xbf16, 3>)
      kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
    gpu.barrier
    %d = txl.warpgroup_mma %a, %tile, %c
        : vector<2x4x2xbf16>, memref<4x8x8x8xbf16, 3>, vector<2x2x2xf32>
    %tid = gpu.thread_id x
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %e0 = vector.extract %d[0, 0, 0] : f32 from vector<2x2x2xf32>
    %e1 = vector.extract %d[1, 1, 1] : f32 from vector<2x2x2xf32>
    memref.store %e0, %o[%tid, %c0, %c0, %c0] : memref<128x2x2x2xf32>
    memref.store %e1, %o[%tid, %c1, %c1, %c1] : memref<128x2x2x2xf32>
    gpu.return
  }
}

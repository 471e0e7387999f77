// RUN: txl-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(gpu.module(txl-mma-to-nvvm))' | FileCheck %s

// A workgroup tile that nvgpu.ldmatrix reads gets 16-byte alignment (its
// rows' addresses must be 16-byte aligned; 2-byte elements alone give a
// workgroup attribution 2); the other tile keeps its own. The ldmatrix
// stays for upstream's convert-nvgpu-to-nvvm.
// CHECK-LABEL: gpu.func @tile
// CHECK-SAME: workgroup(%[[TILE:.+]] : memref<16x40xbf16, 3> {llvm.align = 16 : i64}, %{{.+}} : memref<8xbf16, 3>)
// CHECK: nvgpu.ldmatrix %[[TILE]]
gpu.module @txl_kernels {
  gpu.func @tile(%row: index, %o: memref<2xf32>)
      workgroup(%tile : memref<16x40xbf16, 3>, %other : memref<8xbf16, 3>) kernel {
    %c0 = arith.constant 0 : index
    %v = nvgpu.ldmatrix %tile[%row, %c0] {numTiles = 2 : i32, transpose = false}
        : memref<16x40xbf16, 3> -> vector<2x2xbf16>
    %x = vector.extract %v[1, 1] : bf16 from vector<2x2xbf16>
    memref.store %x, %other[%c0] : memref<8xbf16, 3>
    gpu.return
  }
}

// -----

// A source that is not the kernel's workgroup attribution has no alignment
// the lowering can set.
gpu.module @txl_kernels {
  gpu.func @argument(%row: index, %tile: memref<16x40xbf16, 3>, %o: memref<2xf32>) kernel {
    %c0 = arith.constant 0 : index
    // expected-error @+1 {{needs its source to be a workgroup attribution of its kernel or a view of its dynamic shared memory at a multiple of 16 bytes (its 16-byte alignment)}}
    %v = nvgpu.ldmatrix %tile[%row, %c0] {numTiles = 2 : i32, transpose = false}
        : memref<16x40xbf16, 3> -> vector<2x2xbf16>
    gpu.return
  }
}

// -----

// So does the destination of an nvgpu.device_async_copy (cp.async of 16
// bytes to a 16-byte aligned address); the copy, its group and wait stay
// for convert-nvgpu-to-nvvm.
// CHECK-LABEL: gpu.func @async_copy
// CHECK-SAME: workgroup(%[[DST:.+]] : memref<4x8xbf16, 3> {llvm.align = 16 : i64})
// CHECK: %[[TOKEN:.+]] = nvgpu.device_async_copy %{{.+}}[%{{.+}}], %[[DST]][%{{.+}}, %{{.+}}], 8 {bypassL1}
// CHECK-NEXT: %[[GROUP:.+]] = nvgpu.device_async_create_group %[[TOKEN]]
// CHECK-NEXT: nvgpu.device_async_wait %[[GROUP]] {numGroups = 0 : i32}
gpu.module @txl_kernels {
  gpu.func @async_copy(%src: memref<64xbf16>, %i: index)
      workgroup(%dst : memref<4x8xbf16, 3>) kernel {
    %c0 = arith.constant 0 : index
    %t = nvgpu.device_async_copy %src[%i], %dst[%i, %c0], 8 {bypassL1}
        : memref<64xbf16> to memref<4x8xbf16, 3>
    %g = nvgpu.device_async_create_group %t
    nvgpu.device_async_wait %g {numGroups = 0 : i32}
    gpu.return
  }
}

// -----

// A destination that views such a tile as its 16-byte chunks
// (memref.collapse_shape: the attention forward's copies of a key tile,
// chunk x to chunk x) aligns the tile it views.
// CHECK-LABEL: gpu.func @async_copy_chunks
// CHECK-SAME: workgroup(%[[TILE:.+]] : memref<2x4x8x8xbf16, 3> {llvm.align = 16 : i64})
// CHECK: %[[CHUNKS:.+]] = memref.collapse_shape %[[TILE]] {{\[}}[0, 1, 2], [3]] : memref<2x4x8x8xbf16, 3> into memref<64x8xbf16, 3>
// CHECK-NEXT: nvgpu.device_async_copy %{{.+}}[%{{.+}}, %{{.+}}], %[[CHUNKS]][%{{.+}}, %{{.+}}], 8 {bypassL1}
gpu.module @txl_kernels {
  gpu.func @async_copy_chunks(%src: memref<64x8xbf16>, %i: index)
      workgroup(%tile : memref<2x4x8x8xbf16, 3>) kernel {
    %c0 = arith.constant 0 : index
    %chunks = memref.collapse_shape %tile [[0, 1, 2], [3]]
        : memref<2x4x8x8xbf16, 3> into memref<64x8xbf16, 3>
    %t = nvgpu.device_async_copy %src[%i, %c0], %chunks[%i, %c0], 8 {bypassL1}
        : memref<64x8xbf16> to memref<64x8xbf16, 3>
    gpu.return
  }
}

// -----

// A view of a tile that is not a workgroup attribution is not either.
gpu.module @txl_kernels {
  gpu.func @async_chunks_argument(%src: memref<64x8xbf16>, %tile: memref<2x4x8x8xbf16, 3>, %i: index) kernel {
    %c0 = arith.constant 0 : index
    %chunks = memref.collapse_shape %tile [[0, 1, 2], [3]]
        : memref<2x4x8x8xbf16, 3> into memref<64x8xbf16, 3>
    // expected-error @+1 {{needs its destination to be a workgroup attribution of its kernel or a view of its dynamic shared memory at a multiple of 16 bytes (its 16-byte alignment)}}
    %t = nvgpu.device_async_copy %src[%i, %c0], %chunks[%i, %c0], 8 {bypassL1}
        : memref<64x8xbf16> to memref<64x8xbf16, 3>
    gpu.return
  }
}

// -----

// A destination that is not a workgroup attribution is an error.
gpu.module @txl_kernels {
  gpu.func @async_argument(%src: memref<64xbf16>, %dst: memref<4x8xbf16, 3>, %i: index) kernel {
    %c0 = arith.constant 0 : index
    // expected-error @+1 {{needs its destination to be a workgroup attribution of its kernel or a view of its dynamic shared memory at a multiple of 16 bytes (its 16-byte alignment)}}
    %t = nvgpu.device_async_copy %src[%i], %dst[%i, %c0], 8 {bypassL1}
        : memref<64xbf16> to memref<4x8xbf16, 3>
    gpu.return
  }
}

// -----

// txl.subgroup_barrier => bar.warp.sync over the whole warp.
// CHECK-LABEL: gpu.func @warp_barrier
// CHECK: %[[ALL:.+]] = arith.constant -1 : i32
// CHECK-NEXT: nvvm.bar.warp.sync %[[ALL]] : i32
// CHECK-NOT: txl.subgroup_barrier
// CHECK: gpu.return
gpu.module @txl_kernels {
  gpu.func @warp_barrier() kernel {
    txl.subgroup_barrier
    gpu.return
  }
}

// RUN: txl-opt %s --pass-pipeline='builtin.module(gpu.module(txl-mma-to-nvvm{wgmma=true}))' \
// RUN:   | FileCheck %s

// fence.proxy.async.shared::cta goes only before the barriers that may
// follow a generic write to a tile that a wgmma reads, searching back to
// the barrier before (around the loop: the previous iteration's end, then
// what precedes the loop). In @walk, as in the attention forward's walk
// over key tiles: the barrier that opens an iteration (behind it the
// previous iteration's product and its reads of %x) gets none, the one
// after the tile's staging one, the one after the stores to %x (a tile no
// wgmma reads) none.
// CHECK-LABEL: gpu.func @walk
// CHECK: scf.for
// CHECK-NOT: fence.proxy.async
// CHECK: gpu.barrier {txl.sync = "reads-done"}
// CHECK: memref.store %{{.+}}, %{{.+}} : memref<2x2x8x8xbf16, 3>
// CHECK-NEXT: llvm.inline_asm has_side_effects "fence.proxy.async.shared::cta;"
// CHECK-NEXT: gpu.barrier {txl.sync = "kv-staged"}
// CHECK: wgmma.mma_async
// CHECK: memref.store %{{.+}}, %{{.+}} : memref<64xf32, 3>
// CHECK-NOT: fence.proxy.async
// CHECK: gpu.barrier {txl.sync = "stores-done"}
// CHECK-NOT: fence.proxy.async
// CHECK: gpu.return

// In @late the iteration's last write to the tile has no barrier after it
// in the body: the barrier that opens the next iteration is fenced; so is
// one whose search reaches a view of the tile (its writes are not
// followed).
// CHECK-LABEL: gpu.func @late
// CHECK: scf.for
// CHECK-NEXT: llvm.inline_asm has_side_effects "fence.proxy.async.shared::cta;"
// CHECK-NEXT: gpu.barrier {txl.sync = "reads-done"}
// CHECK: memref.subview
// CHECK-NEXT: llvm.inline_asm has_side_effects "fence.proxy.async.shared::cta;"
// CHECK-NEXT: gpu.barrier {txl.sync = "stores-done"}
// CHECK: gpu.return
gpu.module @txl_kernels {
  gpu.func @walk(%a: vector<1x4x2xbf16>, %c: vector<2x2x2xf32>, %h: bf16, %f: f32,
                 %o: memref<2x2x2xf32>)
      workgroup(%tile : memref<2x2x8x8xbf16, 3>, %x : memref<64xf32, 3>)
      kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %tid = gpu.thread_id x
    %r = scf.for %s = %c0 to %c4 step %c1 iter_args(%acc = %c) -> (vector<2x2x2xf32>) {
      gpu.barrier {txl.sync = "reads-done"}
      memref.store %h, %tile[%c0, %c0, %c0, %s] : memref<2x2x8x8xbf16, 3>
      gpu.barrier {txl.sync = "kv-staged"}
      %d = txl.warpgroup_mma %a, %tile, %acc : vector<1x4x2xbf16>, memref<2x2x8x8xbf16, 3>, vector<2x2x2xf32>
      memref.store %f, %x[%tid] : memref<64xf32, 3>
      gpu.barrier {txl.sync = "stores-done"}
      %y = memref.load %x[%s] : memref<64xf32, 3>
      %e = vector.broadcast %y : f32 to vector<2x2x2xf32>
      %n = arith.addf %d, %e : vector<2x2x2xf32>
      scf.yield %n : vector<2x2x2xf32>
    }
    vector.store %r, %o[%c0, %c0, %c0] : memref<2x2x2xf32>, vector<2x2x2xf32>
    gpu.return
  }

  gpu.func @late(%a: vector<1x4x2xbf16>, %c: vector<2x2x2xf32>, %h: bf16,
                 %o: memref<2x2x2xf32>)
      workgroup(%tile : memref<2x2x8x8xbf16, 3>)
      kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %r = scf.for %s = %c0 to %c4 step %c1 iter_args(%acc = %c) -> (vector<2x2x2xf32>) {
      gpu.barrier {txl.sync = "reads-done"}
      %d = txl.warpgroup_mma %a, %tile, %acc : vector<1x4x2xbf16>, memref<2x2x8x8xbf16, 3>, vector<2x2x2xf32>
      memref.store %h, %tile[%c0, %c0, %c0, %s] : memref<2x2x8x8xbf16, 3>
      scf.yield %d : vector<2x2x2xf32>
    }
    gpu.barrier {txl.sync = "ds-stored"}
    %view = memref.subview %tile[0, 0, 0, 0] [1, 1, 8, 8] [1, 1, 1, 1]
        : memref<2x2x8x8xbf16, 3> to memref<1x1x8x8xbf16, strided<[128, 64, 8, 1]>, 3>
    gpu.barrier {txl.sync = "stores-done"}
    %one = memref.load %view[%c0, %c0, %c0, %c0] : memref<1x1x8x8xbf16, strided<[128, 64, 8, 1]>, 3>
    %wide = arith.extf %one : bf16 to f32
    %more = vector.broadcast %wide : f32 to vector<2x2x2xf32>
    %sum = arith.addf %r, %more : vector<2x2x2xf32>
    vector.store %sum, %o[%c0, %c0, %c0] : memref<2x2x2xf32>, vector<2x2x2xf32>
    gpu.return
  }
}

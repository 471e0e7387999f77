// RUN: txl-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(gpu.module(txl-mma-to-nvvm{wgmma=true}))' \
// RUN:   | FileCheck %s
//
// A product whose B is one of two buffers, chosen by an arith.select (the
// tensor-core attention's K and V by a key tile's parity; the other
// buffer takes the next tile's copies meanwhile): both buffers get
// 16-byte alignment (LBO 128 and SBO 256 bytes, 8 << 16 | 16 << 32 =
// 68720001024); each k-step's descriptor is the false buffer's
// (loop-invariant) with the select of the two buffers' difference or 0
// added in its low 32 bits (one select, then one 32-bit addition a step;
// no descriptor re-encoded from a selected address); and a barrier after
// copies into the buffer that the select names for them gets the
// async-proxy fence, as after writes to the product's own tile.
// CHECK-LABEL: gpu.func @buffers
// CHECK-SAME: workgroup(%[[EVEN:.+]] : memref<1x2x8x8xbf16, 3> {llvm.align = 16 : i64}, %[[ODD:.+]] : memref<1x2x8x8xbf16, 3> {llvm.align = 16 : i64})
// CHECK: scf.for
// CHECK: %[[P:.+]] = arith.cmpi ne
// CHECK-NEXT: %[[NEXT:.+]] = arith.select %[[P]], %[[EVEN]], %[[ODD]]
// CHECK-NEXT: nvgpu.device_async_copy %{{.+}}, %[[NEXT]]
// CHECK-NEXT: llvm.inline_asm has_side_effects "fence.proxy.async.shared::cta;", ""  : () -> ()
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: memref.extract_aligned_pointer_as_index %[[ODD]]
// CHECK: %[[DODD:.+]] = arith.ori %{{.+}}, %c68720001024_i64 : i64
// CHECK-NEXT: %[[LODD:.+]] = arith.trunci %[[DODD]] : i64 to i32
// CHECK-NEXT: memref.extract_aligned_pointer_as_index %[[EVEN]]
// CHECK: %[[DEVEN:.+]] = arith.ori %{{.+}}, %c68720001024_i64 : i64
// CHECK-NEXT: %[[LEVEN:.+]] = arith.trunci %[[DEVEN]] : i64 to i32
// CHECK-NEXT: %[[DELTA:.+]] = arith.subi %[[LODD]], %[[LEVEN]] : i32
// CHECK-NEXT: %[[SHIFT:.+]] = arith.select %[[P]], %[[DELTA]], %c0_i32 : i32
// CHECK-NOT: memref.extract_aligned_pointer_as_index
// CHECK: %[[D0:.+]] = arith.ori %{{.+}}, %c68720001024_i64 : i64
// CHECK-NEXT: %[[L0:.+]] = arith.trunci %[[D0]] : i64 to i32
// CHECK-NEXT: %[[LOW0:.+]] = arith.addi %[[L0]], %[[SHIFT]] : i32
// CHECK-NEXT: %[[HIGH0:.+]] = arith.andi %[[D0]], %c-4294967296_i64 : i64
// CHECK-NEXT: %[[WIDE0:.+]] = arith.extui %[[LOW0]] : i32 to i64
// CHECK-NEXT: %[[DESC0:.+]] = arith.ori %[[HIGH0]], %[[WIDE0]] : i64
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-NEXT: llvm.inline_asm has_side_effects "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16
// CHECK-SAME: %[[DESC0]] :
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
gpu.module @txl_kernels {
  gpu.func @buffers(%a: vector<1x4x2xbf16>, %c: vector<1x2x2xf32>,
                    %src: memref<64xbf16>, %o: memref<128x1x2x2xf32>)
      workgroup(%even : memref<1x2x8x8xbf16, 3>, %odd : memref<1x2x8x8xbf16, 3>)
      kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %tid = gpu.thread_id x
    %acc = scf.for %s = %c0 to %c4 step %c1 iter_args(%x = %c) -> (vector<1x2x2xf32>) {
      %bit = arith.andi %s, %c1 : index
      %p = arith.cmpi ne, %bit, %c0 : index
      %cur = arith.select %p, %odd, %even : memref<1x2x8x8xbf16, 3>
      %next = arith.select %p, %even, %odd : memref<1x2x8x8xbf16, 3>
      %t = nvgpu.device_async_copy %src[%c0], %next[%c0, %c0, %c0, %c0], 8 {bypassL1} : memref<64xbf16> to memref<1x2x8x8xbf16, 3>
      gpu.barrier
      %d = txl.warpgroup_mma %a, %cur, %x : vector<1x4x2xbf16>, memref<1x2x8x8xbf16, 3>, vector<1x2x2xf32>
      scf.yield %d : vector<1x2x2xf32>
    }
    %e = vector.extract %acc[0] : vector<2x2xf32> from vector<1x2x2xf32>
    vector.store %e, %o[%tid, %c0, %c0, %c0] : memref<128x1x2x2xf32>, vector<2x2xf32>
    gpu.return
  }
}

// -----

// A select between a workgroup attribution and anything else is no
// buffer of the kernel's to align.
gpu.module @txl_kernels {
  gpu.func @not_buffers(%a: vector<1x4x2xbf16>, %b: memref<1x2x8x8xbf16, 3>,
                        %c: vector<1x2x2xf32>, %p: i1)
      workgroup(%tile : memref<1x2x8x8xbf16, 3>) kernel {
    %chosen = arith.select %p, %tile, %b : memref<1x2x8x8xbf16, 3>
    // expected-error @+1 {{needs b to be a workgroup attribution of its kernel or a view of its dynamic shared memory at a multiple of 16 bytes (its 16-byte alignment)}}
    %d = txl.warpgroup_mma %a, %chosen, %c : vector<1x4x2xbf16>, memref<1x2x8x8xbf16, 3>, vector<1x2x2xf32>
    gpu.return
  }
}

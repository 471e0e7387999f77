// RUN: txl-opt %S/../Inputs/warpgroup-mma.mlir \
// RUN:   --pass-pipeline='builtin.module(gpu.module(txl-emulate-mma))' \
// RUN:   | FileCheck %s --implicit-check-not=txl.warpgroup_mma \
// RUN:     --implicit-check-not=nvgpu.mma.sync --implicit-check-not=bf16
// RUN: txl-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(gpu.module(txl-emulate-mma))'

// On OpenCL the warpgroup product is each subgroup's mma.sync products
// (emulated with shuffles), its B fragments read through the k-step's
// descriptor; the bf16 tile becomes an f32 tile of the rounded values:
// the staging stores the rounded f32 (round to nearest even on the bits,
// no bf16 value left), the 32 fragment loads read f32.
// CHECK-LABEL: gpu.func @wg
// CHECK-SAME: workgroup(%[[TILE:.+]] : memref<4x4x8x8xf32, 3>)
// CHECK: scf.for
// CHECK: %[[X:.+]] = memref.load %{{.+}} : memref<4x4x8x8xf32>
// CHECK: arith.andi %{{.+}}, %c-65536_i32 : i32
// CHECK: %[[R:.+]] = arith.select %{{.+}}, %[[X]], %{{.+}} : f32
// CHECK: memref.store %[[R]], %[[TILE]]
// CHECK: gpu.barrier
// CHECK: gpu.lane_id
// CHECK-COUNT-32: memref.load %[[TILE]]
// CHECK-NOT: memref.load %[[TILE]]
// CHECK: gpu.shuffle  idx
// CHECK: gpu.return

// A bf16 tile used other than by loads and stores has no f32 form.
gpu.module @k {
  gpu.func @view(%o: memref<8xf32>) workgroup(%tile : memref<8x8xbf16, 3>) kernel {
    %c0 = arith.constant 0 : index
    // expected-error @+1 {{uses a 'bf16' workgroup tile, which txl-emulate-mma widens to f32 for OpenCL: only loads and stores can}}
    %row = memref.subview %tile[0, 0] [1, 8] [1, 1] : memref<8x8xbf16, 3> to memref<8xbf16, strided<[1]>, 3>
    gpu.return
  }
}

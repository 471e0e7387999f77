// RUN: txl-opt %s --pass-pipeline='builtin.module(gpu.module(txl-mma-to-nvvm))' \
// RUN:   | FileCheck %s
// RUN: txl-translate %s --kernels-to-ptx --ptx-chip=sm_90a | FileCheck %s --check-prefix=PTX

// f32 math.exp2 with fastmath afn (the tensor-core attention's
// probabilities) => PTX ex2.approx.ftz.f32, one instruction; without afn,
// or in f64, it is left to the NVVM lowering (libdevice): the negative
// cases.

// CHECK-LABEL: gpu.func @exp2
// CHECK-SAME: (%[[X:[^:]+]]: f32, %[[Z:[^:]+]]: f32, %[[Y:[^:]+]]: f64, %[[OUT:[^:]+]]: memref<3xf32>, %[[OUT64:[^:]+]]: memref<1xf64>)
// CHECK: %[[E:.+]] = llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"(%[[X]]) : (f32) -> f32
// CHECK: memref.store %[[E]], %[[OUT]]
// CHECK: %[[PLAIN:.+]] = math.exp2 %[[X]] : f32
// CHECK: memref.store %[[PLAIN]], %[[OUT]]
// fast includes afn.
// CHECK: %[[FAST:.+]] = llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"(%[[Z]])
// CHECK: memref.store %[[FAST]], %[[OUT]]
// CHECK: %[[WIDE:.+]] = math.exp2 %[[Y]] fastmath<afn> : f64
// CHECK: memref.store %[[WIDE]], %[[OUT64]]

// In the PTX of the CUDA target's pipeline (which runs txl-mma-to-nvvm):
// two ex2.approx.ftz.f32; the plain case is libdevice's exp2f (ex2.approx.f32
// with its subnormal fix-up).
// PTX-COUNT-2: ex2.approx.ftz.f32
// PTX-NOT: ex2.approx.ftz.f32
// PTX: ret;
gpu.module @txl_kernels {
  gpu.func @exp2(%x: f32, %z: f32, %y: f64, %out: memref<3xf32>, %out64: memref<1xf64>) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %e = math.exp2 %x fastmath<afn> : f32
    memref.store %e, %out[%c0] : memref<3xf32>
    %p = math.exp2 %x : f32
    memref.store %p, %out[%c1] : memref<3xf32>
    %f = math.exp2 %z fastmath<fast> : f32
    memref.store %f, %out[%c2] : memref<3xf32>
    %w = math.exp2 %y fastmath<afn> : f64
    memref.store %w, %out64[%c0] : memref<1xf64>
    gpu.return
  }
}

// RUN: txl-opt %s --txl-rel-attention-to-gpu=precision=bf16 | FileCheck %s
// RUN: txl-opt %s --txl-rel-attention-to-gpu=precision=f16 | FileCheck %s --check-prefix=F16
// RUN: txl-opt %s --txl-rel-attention-to-gpu=precision=f32 | FileCheck %s --check-prefix=F32

// The tensor-core kernels have no dropout: with dropatt, an scf.if on the
// op's `training` runs the f32 dropatt kernel (the CPU's Philox masks) in
// training and the tensor-core kernel in evaluation, where dropatt is the
// identity. At f32 there is one launch of the dropatt kernel.
// CHECK-LABEL: func.func @dropatt
// CHECK-SAME: %[[SEED:[^:]+]]: i64, %[[OFFSET:[^:]+]]: i64, %[[TRAINING:[^:]+]]: i1)
// CHECK: %[[R:.+]] = scf.if %[[TRAINING]] -> (tensor<?x?x4x32xf32>) {
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_dropatt_d32
// CHECK-SAME: %[[SEED]] : i64, %[[OFFSET]] : i64
// CHECK: scf.yield
// CHECK-NEXT: } else {
// CHECK: gpu.launch_func @txl_kernels::@rel_attention_bf16_d32
// CHECK-NOT: %[[SEED]]
// CHECK: scf.yield
// CHECK: return %[[R]]
// CHECK-DAG: gpu.func @rel_attention_dropatt_d32(
// CHECK-DAG: gpu.func @rel_attention_bf16_d32(
// F16: scf.if
// F16: gpu.launch_func @txl_kernels::@rel_attention_dropatt_d32
// F16: } else {
// F16: gpu.launch_func @txl_kernels::@rel_attention_f16_d32
// F32-LABEL: func.func @dropatt
// F32-NOT: scf.if
// F32: gpu.launch_func @txl_kernels::@rel_attention_dropatt_d32
// F32: gpu.launch_func @txl_kernels::@rel_attention_combine
// F32-NOT: gpu.launch_func
// F32: return
func.func @dropatt(%q: tensor<?x?x4x32xf32>, %k: tensor<?x?x4x32xf32>, %v: tensor<?x?x4x32xf32>,
                   %r: tensor<?x4x32xf32>, %u: tensor<4x32xf32>, %vb: tensor<4x32xf32>,
                   %mem_len: index, %same: i1, %seed: i64, %offset: i64, %training: i1)
    -> tensor<?x?x4x32xf32> {
  %base = arith.constant 0 : i64
  %o = txl.rel_attention %q, %k, %v, %r, %u, %vb, %mem_len, %same
      dropatt(%seed, %offset, %training, %base, %base)
      {dropatt = 1.000000e-01 : f64, dropatt_stream = 3 : i64, scale = 0.17677669 : f32}
      : tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>,
        tensor<?x4x32xf32>, tensor<4x32xf32>, tensor<4x32xf32> -> tensor<?x?x4x32xf32>
  return %o : tensor<?x?x4x32xf32>
}

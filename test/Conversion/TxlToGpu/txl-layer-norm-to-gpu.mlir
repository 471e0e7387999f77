// RUN: txl-opt %s --split-input-file --txl-layer-norm-to-gpu | FileCheck %s
// RUN: txl-opt %s --split-input-file --txl-layer-norm-to-gpu | grep -c "gpu.func @layer_norm_d64(" | FileCheck %s --check-prefix=ONE
// ONE: {{^}}1{{$}}

// A [qlen, batch, 128] layer norm becomes one launch of layer_norm_d128 on
// the rows collapsed to [qlen·batch, 128]: ceil(rows / 8) workgroups of 256
// work-items, the output a fresh [rows, 128] buffer expanded back.
// CHECK-LABEL: func.func @ln(
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x?x128xf32>, %[[G:[^:]+]]: tensor<128xf32>, %[[B:[^:]+]]: tensor<128xf32>)
// CHECK-NOT: txl.layer_norm
// CHECK-DAG: %[[EPS:.+]] = arith.constant 9.99999974E-6 : f32
// CHECK-DAG: %[[C256:.+]] = arith.constant 256 : index
// CHECK-DAG: %[[C8:.+]] = arith.constant 8 : index
// CHECK: %[[X2:.+]] = tensor.collapse_shape %[[X]] {{\[}}[0, 1], [2]] : tensor<?x?x128xf32> into tensor<?x128xf32>
// CHECK: %[[OUT:.+]] = memref.alloc(%{{.+}}) : memref<?x128xf32>
// CHECK: %[[GRID:.+]] = arith.ceildivui %{{.+}}, %[[C8]] : index
// CHECK: %[[XB:.+]] = bufferization.to_buffer %[[X2]] read_only : tensor<?x128xf32> to memref<?x128xf32, strided<[?, 1], offset: ?>>
// CHECK: %[[OUTV:.+]] = memref.cast %[[OUT]]
// CHECK: gpu.launch_func @txl_kernels::@layer_norm_d128 blocks in (%[[GRID]], %{{.+}}, %{{.+}}) threads in (%[[C256]], %{{.+}}, %{{.+}}) args(%[[XB]] : {{.+}}, %{{.+}} : memref<128xf32, strided<[?], offset: ?>>, %{{.+}} : memref<128xf32, strided<[?], offset: ?>>, %[[OUTV]] : {{.+}}, %[[EPS]] : f32)
// CHECK: %[[Y2:.+]] = bufferization.to_tensor %[[OUT]] restrict writable
// CHECK: %[[Y:.+]] = tensor.expand_shape %[[Y2]] {{\[}}[0, 1], [2]]
// CHECK: return %[[Y]]
//
// The kernel: subgroup s of workgroup w takes row 8w + s; its lane l reads
// columns l, l + 32, ... (a step of 32); mean and variance each end in a
// five-step xor-shuffle butterfly over the 32 lanes; the division by d is
// exact (divf by 128, not a multiplication by its rounded inverse), and
// the output is written once, as fma(normalised, weight, bias).
// CHECK: gpu.module @txl_kernels
// CHECK: gpu.func @layer_norm_d128(%[[KX:[^:]+]]: memref<?x128xf32, strided<[?, 1], offset: ?>>, %[[KW:[^:]+]]: memref<128xf32, strided<[?], offset: ?>>, %[[KB:[^:]+]]: memref<128xf32, strided<[?], offset: ?>>, %[[KY:[^:]+]]: memref<?x128xf32, strided<[?, 1], offset: ?>>, %[[KEPS:[^:]+]]: f32) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// CHECK-DAG: %[[K32:.+]] = arith.constant 32 : index
// CHECK-DAG: %[[K128:.+]] = arith.constant 128 : index
// CHECK-DAG: %[[D:.+]] = arith.constant 1.280000e+02 : f32
// CHECK: %[[TID:.+]] = gpu.thread_id x
// CHECK: %[[SG:.+]] = arith.divui %[[TID]], %[[K32]]
// CHECK: %[[LANE:.+]] = arith.remui %[[TID]], %[[K32]]
// CHECK: %[[ROW:.+]] = arith.addi %{{.+}}, %[[SG]]
// CHECK: scf.if
// CHECK: scf.for %[[C:.+]] = %[[LANE]] to %[[K128]] step %[[K32]]
// CHECK: memref.load %[[KX]][%[[ROW]], %[[C]]]
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK: %[[MEAN:.+]] = arith.divf %{{.+}}, %[[D]] : f32
// CHECK: scf.for %{{.+}} = %[[LANE]] to %[[K128]] step %[[K32]]
// CHECK: arith.subf %{{.+}}, %[[MEAN]]
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK: %[[VAR:.+]] = arith.divf %{{.+}}, %[[D]] : f32
// CHECK: %[[S:.+]] = arith.addf %[[VAR]], %[[KEPS]]
// CHECK: %[[RSTD:.+]] = math.rsqrt %[[S]]
// CHECK: scf.for %[[C2:.+]] = %[[LANE]] to %[[K128]] step %[[K32]]
// CHECK: %[[N:.+]] = arith.mulf %{{.+}}, %[[RSTD]]
// CHECK: %[[WV:.+]] = memref.load %[[KW]][%[[C2]]]
// CHECK: %[[BV:.+]] = memref.load %[[KB]][%[[C2]]]
// CHECK: %[[O:.+]] = math.fma %[[N]], %[[WV]], %[[BV]]
// CHECK: memref.store %[[O]], %[[KY]][%[[ROW]], %[[C2]]]
// CHECK: gpu.return
func.func @ln(%x: tensor<?x?x128xf32>, %g: tensor<128xf32>, %b: tensor<128xf32>) -> tensor<?x?x128xf32> {
  %y = txl.layer_norm %x, %g, %b {epsilon = 1.0e-05 : f32} : tensor<?x?x128xf32>, tensor<128xf32>, tensor<128xf32>
  return %y : tensor<?x?x128xf32>
}

// -----

// Two layer norms of the same width share one kernel (the grep -c run: one
// layer_norm_d64 in the output); another width gets its own. A 2-D input
// needs no reshape.
// CHECK-LABEL: func.func @shared(
// CHECK-NOT: tensor.collapse_shape
// CHECK: gpu.launch_func @txl_kernels::@layer_norm_d64
// CHECK: gpu.launch_func @txl_kernels::@layer_norm_d64
// CHECK: gpu.launch_func @txl_kernels::@layer_norm_d32
// CHECK: gpu.module @txl_kernels
// CHECK-DAG: gpu.func @layer_norm_d64(
// CHECK-DAG: gpu.func @layer_norm_d32(
func.func @shared(%x: tensor<?x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>, %z: tensor<5x7x32xf32>, %g2: tensor<32xf32>, %b2: tensor<32xf32>) -> (tensor<?x64xf32>, tensor<5x7x32xf32>) {
  %y = txl.layer_norm %x, %g, %b {epsilon = 1.0e-05 : f32} : tensor<?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %y2 = txl.layer_norm %y, %g, %b {epsilon = 1.0e-05 : f32} : tensor<?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %z2 = txl.layer_norm %z, %g2, %b2 {epsilon = 1.0e-05 : f32} : tensor<5x7x32xf32>, tensor<32xf32>, tensor<32xf32>
  return %y2, %z2 : tensor<?x64xf32>, tensor<5x7x32xf32>
}

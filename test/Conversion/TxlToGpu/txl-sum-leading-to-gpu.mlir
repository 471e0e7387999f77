// RUN: txl-opt %s --split-input-file --txl-sum-leading-to-gpu | FileCheck %s
// RUN: txl-opt %s --split-input-file --txl-sum-leading-to-gpu | grep -c "gpu.func @sum_rows_part_c512(" | FileCheck %s --check-prefix=ONE
// ONE: {{^}}1{{$}}

// A [qlen, batch, 512] bias gradient: the rows collapsed to [R, 512], a
// [ceil(R / 16), 512] buffer of parts written by the first launch (parts
// on x, 2 column blocks of 256 on y), the [512] sum by the second; two
// sums of the same width share the kernels (the ONE line above).
// CHECK-LABEL: func.func @ff(
// CHECK-SAME: %[[DY:[^:]+]]: tensor<?x?x512xf32>,
// CHECK-NOT: txl.sum_leading
// CHECK-DAG: %[[C16:.+]] = arith.constant 16 : index
// CHECK-DAG: %[[C256:.+]] = arith.constant 256 : index
// CHECK-DAG: %[[C2:.+]] = arith.constant 2 : index
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : index
// CHECK: %[[X2:.+]] = tensor.collapse_shape %[[DY]] {{\[}}[0, 1], [2]] : tensor<?x?x512xf32> into tensor<?x512xf32>
// CHECK: %[[R:.+]] = tensor.dim %[[X2]]
// CHECK: %[[P:.+]] = arith.ceildivui %[[R]], %[[C16]] : index
// CHECK: %[[PARTS:.+]] = memref.alloc(%[[P]]) : memref<?x512xf32>
// CHECK: %[[OUT:.+]] = memref.alloc() : memref<512xf32>
// CHECK: %[[XB:.+]] = bufferization.to_buffer %[[X2]] read_only : tensor<?x512xf32> to memref<?x512xf32, strided<[?, 1], offset: ?>>
// CHECK: gpu.launch_func @txl_kernels::@sum_rows_part_c512 blocks in (%[[P]], %[[C2]], %[[C1]]) threads in (%[[C256]], %[[C1]], %[[C1]]) args(%[[XB]] : {{.+}}, %[[PARTS]] : memref<?x512xf32>)
// CHECK: gpu.launch_func @txl_kernels::@sum_rows_parts_c512 blocks in (%[[C1]], %[[C2]], %[[C1]]) threads in (%[[C256]], %[[C1]], %[[C1]]) args(%[[PARTS]] : memref<?x512xf32>, %[[OUT]] : memref<512xf32>)
// CHECK: %[[DB:.+]] = bufferization.to_tensor %[[OUT]] restrict writable
// CHECK: gpu.launch_func @txl_kernels::@sum_rows_part_c512
// CHECK: return %[[DB]],
//
// The kernels: column = 256 · workgroup y + work-item, guarded by < 512;
// the first sums rows [16 · part, min(16 · part + 16, R)) in order, the
// second the column's parts 0 .. P in order.
// CHECK: gpu.module @txl_kernels
// CHECK: gpu.func @sum_rows_part_c512(%[[KX:[^:]+]]: memref<?x512xf32, strided<[?, 1], offset: ?>>, %[[KP:[^:]+]]: memref<?x512xf32>) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// CHECK: %[[COL:.+]] = arith.addi
// CHECK: arith.cmpi ult, %[[COL]], %{{.+}} : index
// CHECK: %[[PART:.+]] = gpu.block_id x
// CHECK: %[[BEGIN:.+]] = arith.muli %[[PART]], %{{.+}} : index
// CHECK: %[[END:.+]] = arith.minui
// CHECK: %[[SUM:.+]] = scf.for %[[ROW:.+]] = %[[BEGIN]] to %[[END]] step %{{.+}} iter_args(%[[ACC:.+]] = %{{.+}}) -> (f32) {
// CHECK-NEXT: %[[V:.+]] = memref.load %[[KX]][%[[ROW]], %[[COL]]]
// CHECK-NEXT: %[[NEXT:.+]] = arith.addf %[[ACC]], %[[V]] : f32
// CHECK-NEXT: scf.yield %[[NEXT]]
// CHECK: memref.store %[[SUM]], %[[KP]][%[[PART]], %[[COL]]]
// CHECK: gpu.func @sum_rows_parts_c512(%[[KIN:[^:]+]]: memref<?x512xf32>, %[[KOUT:[^:]+]]: memref<512xf32>)
// CHECK: %[[NP:.+]] = memref.dim %[[KIN]]
// CHECK: scf.for %{{.+}} = %{{.+}} to %[[NP]]
// CHECK: memref.store %{{.+}}, %[[KOUT]][%{{.+}}] : memref<512xf32>
func.func @ff(%dy: tensor<?x?x512xf32>, %dz: tensor<?x?x512xf32>) -> (tensor<512xf32>, tensor<512xf32>) {
  %0 = txl.sum_leading %dy : tensor<?x?x512xf32> -> tensor<512xf32>
  %1 = txl.sum_leading %dz : tensor<?x?x512xf32> -> tensor<512xf32>
  return %0, %1 : tensor<512xf32>, tensor<512xf32>
}

// -----

// A [4, 32] result (the attention's head biases): [qlen, batch, 4, 32] as
// [R, 128], the [128] sum expanded back to [4, 32].
// CHECK-LABEL: func.func @heads(
// CHECK: tensor.collapse_shape %{{.+}} {{\[}}[0, 1], [2, 3]] : tensor<?x?x4x32xf32> into tensor<?x128xf32>
// CHECK: gpu.launch_func @txl_kernels::@sum_rows_part_c128
// CHECK: gpu.launch_func @txl_kernels::@sum_rows_parts_c128
// CHECK: %[[T:.+]] = bufferization.to_tensor %{{.+}} restrict writable : memref<128xf32> to tensor<128xf32>
// CHECK: %[[E:.+]] = tensor.expand_shape %[[T]] {{\[}}[0, 1]] output_shape [4, 32] : tensor<128xf32> into tensor<4x32xf32>
// CHECK: return %[[E]]
func.func @heads(%dq: tensor<?x?x4x32xf32>) -> tensor<4x32xf32> {
  %0 = txl.sum_leading %dq : tensor<?x?x4x32xf32> -> tensor<4x32xf32>
  return %0 : tensor<4x32xf32>
}

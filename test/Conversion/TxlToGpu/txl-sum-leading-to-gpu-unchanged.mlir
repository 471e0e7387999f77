// RUN: txl-opt %s --txl-sum-leading-to-gpu | FileCheck %s --implicit-check-not=gpu

// Not covered, left to the generic lowering: f64 (the gradient checks'
// element type) and a result with a dynamic size. Nothing of the gpu
// dialect appears: no launch, no kernel module, no gpu.container_module
// attribute.
// CHECK: module {
// CHECK-LABEL: func.func @f64(
// CHECK: txl.sum_leading %{{.+}} : tensor<?x?x16xf64> -> tensor<16xf64>
// CHECK-LABEL: func.func @dynamic(
// CHECK: txl.sum_leading %{{.+}} : tensor<?x?x?xf32> -> tensor<?xf32>
// CHECK: return
func.func @f64(%dy: tensor<?x?x16xf64>) -> tensor<16xf64> {
  %0 = txl.sum_leading %dy : tensor<?x?x16xf64> -> tensor<16xf64>
  return %0 : tensor<16xf64>
}
func.func @dynamic(%dy: tensor<?x?x?xf32>) -> tensor<?xf32> {
  %0 = txl.sum_leading %dy : tensor<?x?x?xf32> -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// RUN: txl-opt %s --txl-layer-norm-to-gpu | FileCheck %s --implicit-check-not=gpu

// Not covered, left to the generic lowering: f64 (the gradient checks'
// element type). Nothing of the gpu dialect appears: no launch, no kernel
// module, no gpu.container_module attribute.
// CHECK: module {
// CHECK-LABEL: func.func @f64(
// CHECK: txl.layer_norm %{{.+}} : tensor<?x?x16xf64>, tensor<16xf64>, tensor<16xf64>
// CHECK: return
func.func @f64(%x: tensor<?x?x16xf64>, %g: tensor<16xf64>, %b: tensor<16xf64>) -> tensor<?x?x16xf64> {
  %0 = txl.layer_norm %x, %g, %b {epsilon = 1.0e-05 : f32} : tensor<?x?x16xf64>, tensor<16xf64>, tensor<16xf64>
  return %0 : tensor<?x?x16xf64>
}

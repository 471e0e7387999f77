// RUN: txl-opt %s --split-input-file --txl-fuse-bias-relu | FileCheck %s

// The feed-forward's first product and its ReLU: the product loses its
// bias, and one generic adds the bias (broadcast over the rows) and takes
// the maximum with 0, in that order.
// CHECK-DAG: #[[$ID:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[$LAST:.+]] = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-LABEL: func.func @ff1(
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x?x128xf32>, %[[W:[^:]+]]: tensor<512x128xf32>, %[[B:[^:]+]]: tensor<512xf32>)
// CHECK: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[P:.+]] = txl.linear %[[X]], %[[W]] : tensor<?x?x128xf32>, tensor<512x128xf32> -> tensor<?x?x512xf32>
// CHECK-NOT: txl.relu
// CHECK: %[[E:.+]] = tensor.empty(%{{.+}}, %{{.+}}) : tensor<?x?x512xf32>
// CHECK: %[[Y:.+]] = linalg.generic {indexing_maps = [#[[$ID]], #[[$LAST]], #[[$ID]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[P]], %[[B]] : tensor<?x?x512xf32>, tensor<512xf32>) outs(%[[E]] : tensor<?x?x512xf32>)
// CHECK-NEXT: ^bb0(%[[V:.+]]: f32, %[[BV:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT: %[[S:.+]] = arith.addf %[[V]], %[[BV]] : f32
// CHECK-NEXT: %[[M:.+]] = arith.maxnumf %[[S]], %[[ZERO]] : f32
// CHECK-NEXT: linalg.yield %[[M]] : f32
// CHECK: return %[[Y]]
func.func @ff1(%x: tensor<?x?x128xf32>, %w: tensor<512x128xf32>, %b: tensor<512xf32>) -> tensor<?x?x512xf32> {
  %h = txl.linear %x, %w, %b : tensor<?x?x128xf32>, tensor<512x128xf32>, tensor<512xf32> -> tensor<?x?x512xf32>
  %y = txl.relu %h : tensor<?x?x512xf32>
  return %y : tensor<?x?x512xf32>
}

// -----

// Left alone: a product without a bias, and one whose value is also used
// elsewhere (its bias must stay in it).
// CHECK-LABEL: func.func @no_bias(
// CHECK: %[[H:.+]] = txl.linear
// CHECK-NEXT: txl.relu %[[H]]
// CHECK-LABEL: func.func @used_twice(
// CHECK: %[[H2:.+]] = txl.linear %{{.+}}, %{{.+}}, %{{.+}} :
// CHECK-NEXT: txl.relu %[[H2]]
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @no_bias(%x: tensor<?x128xf32>, %w: tensor<512x128xf32>) -> tensor<?x512xf32> {
  %h = txl.linear %x, %w : tensor<?x128xf32>, tensor<512x128xf32> -> tensor<?x512xf32>
  %y = txl.relu %h : tensor<?x512xf32>
  return %y : tensor<?x512xf32>
}
func.func @used_twice(%x: tensor<?x128xf32>, %w: tensor<512x128xf32>, %b: tensor<512xf32>) -> (tensor<?x512xf32>, tensor<?x512xf32>) {
  %h = txl.linear %x, %w, %b : tensor<?x128xf32>, tensor<512x128xf32>, tensor<512xf32> -> tensor<?x512xf32>
  %y = txl.relu %h : tensor<?x512xf32>
  return %y, %h : tensor<?x512xf32>, tensor<?x512xf32>
}

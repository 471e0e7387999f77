// RUN: txl-opt %s --convert-txl-to-linalg | FileCheck %s

// txl.log_softmax: the row log-sum-exp (max, then the sum of exp(x - max),
// as txl.nll's), then one generic subtracting it from every logit.
// CHECK-DAG: #[[$ROW:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[$ID:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @log_softmax
// CHECK-SAME: (%[[X:.+]]: tensor<?x?x50xf32>)
// CHECK: arith.maximumf %{{.+}}, %{{.+}} fastmath<reassoc,nnan,nsz> : f32
// CHECK: math.exp
// CHECK: math.log
// CHECK: linalg.generic {indexing_maps = [#[[$ID]], #[[$ROW]], #[[$ID]]], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK-SAME: ins(%[[X]], %{{.+}} : tensor<?x?x50xf32>, tensor<?x?xf32>)
// CHECK: ^bb0(%[[L:[^:]+]]: f32, %[[LSE:[^:]+]]: f32, %{{.+}}: f32):
// CHECK-NEXT: %[[R:.+]] = arith.subf %[[L]], %[[LSE]]
// CHECK-NEXT: linalg.yield %[[R]]
func.func @log_softmax(%x: tensor<?x?x50xf32>) -> tensor<?x?x50xf32> {
  %y = txl.log_softmax %x : tensor<?x?x50xf32>
  return %y : tensor<?x?x50xf32>
}

// RUN: not txl-opt %s --txl-generate-backward 2>&1 | FileCheck %s
// RUN: txl-opt %s --txl-generate-backward=function=other | FileCheck %s --check-prefix=OTHER

// The function to differentiate must exist.
// CHECK: error: txl-generate-backward: no function @segment
// OTHER: func.func @other_grad
func.func @other(%w: tensor<4xf32>) -> tensor<4xf32> {
  return %w : tensor<4xf32>
}

// RUN: not txl-opt %s --txl-generate-backward 2>&1 | FileCheck %s
// RUN: txl-opt %s --txl-generate-backward=function=other | FileCheck %s --check-prefix=OTHER
// RUN: not txl-opt %s --txl-generate-backward=function=external 2>&1 | FileCheck %s --check-prefix=EXTERNAL
// RUN: txl-opt %s --txl-generate-backward="function=hidden grad-function=named" | FileCheck %s --check-prefix=NAMED
// RUN: not txl-opt %s --txl-generate-backward="function=other grad-function=hidden" 2>&1 | FileCheck %s --check-prefix=TAKEN
// RUN: txl-opt %s --txl-generate-backward="function=marked grad-entry=txl_segment_grad" | FileCheck %s --check-prefix=ENTRY
// RUN: txl-opt %s --txl-generate-backward=function=marked | FileCheck %s --check-prefix=NO-ENTRY

// The function to differentiate must exist, and have a body.
// CHECK: error: txl-generate-backward: no function @segment
// OTHER: func.func @other_grad
// EXTERNAL: error: txl-generate-backward: @external must have a body of one block
// grad-function names the result, public even when the forward is private.
// NAMED: func.func private @hidden(
// NAMED: func.func @named(
// TAKEN: error: txl-generate-backward: @hidden already exists
// The forward's packed entry (txl.entry) is its own: grad-entry gives the
// gradient function its entry, and without it the clone has none.
// ENTRY: func.func @marked({{.*}} attributes {llvm.emit_c_interface, txl.entry = "txl_segment_forward"}
// ENTRY: func.func @marked_grad({{.*}} attributes {llvm.emit_c_interface, txl.entry = "txl_segment_grad"}
// NO-ENTRY: func.func @marked_grad({{.*}} attributes {llvm.emit_c_interface} {
func.func @other(%w: tensor<4xf32>) -> tensor<4xf32> {
  return %w : tensor<4xf32>
}
func.func private @external(tensor<4xf32>) -> tensor<4xf32>
func.func private @hidden(%w: tensor<4xf32>) -> tensor<4xf32> {
  return %w : tensor<4xf32>
}
func.func @marked(%w: tensor<4xf32>) -> tensor<4xf32>
    attributes {llvm.emit_c_interface, txl.entry = "txl_segment_forward"} {
  return %w : tensor<4xf32>
}

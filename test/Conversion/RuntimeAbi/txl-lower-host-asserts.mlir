// RUN: txl-opt %s --split-input-file --txl-lower-host-asserts --verify-diagnostics | FileCheck %s --implicit-check-not=cf.assert --implicit-check-not=@abort

// Each host check becomes a branch to a block that calls the runtime's
// txl_rt_assert_failed with the message and ends unreachable; two checks
// with one message share its string; an existing symbol of the string's
// name is not clobbered (the new one is renamed).
// CHECK-LABEL: module
// CHECK-DAG: llvm.mlir.global internal constant @[[$MSG:txl_assert_message[_0-9]*]]("txl.rel_attention: pos_key must have as many rows as key (klen)\00")
// CHECK-DAG: llvm.mlir.global internal constant @[[$MSG2:txl_assert_message[_0-9]*]]("other\00")
// CHECK-DAG: llvm.mlir.global internal constant @txl_assert_message(0 : i32)
// CHECK-DAG: llvm.func @txl_rt_assert_failed(!llvm.ptr)
// CHECK-LABEL: llvm.func @segment
// CHECK-SAME: (%[[A:.+]]: i1, %[[B:.+]]: i1)
// CHECK: cf.cond_br %[[A]], ^[[OK1:.+]], ^[[FAIL1:[a-z0-9]+]]
// CHECK: ^[[FAIL1]]:
// CHECK-NEXT: %[[P1:.+]] = llvm.mlir.addressof @[[$MSG]] : !llvm.ptr
// CHECK-NEXT: llvm.call @txl_rt_assert_failed(%[[P1]]) : (!llvm.ptr) -> ()
// CHECK-NEXT: llvm.unreachable
// CHECK: ^[[OK1]]:
// CHECK-NEXT: cf.cond_br %[[B]], ^[[OK2:.+]], ^[[FAIL2:[a-z0-9]+]]
// CHECK: ^[[FAIL2]]:
// CHECK-NEXT: llvm.mlir.addressof @[[$MSG]] : !llvm.ptr
// CHECK: ^[[OK2]]:
// CHECK: llvm.mlir.addressof @[[$MSG2]] : !llvm.ptr
// CHECK: llvm.return
module {
  llvm.mlir.global internal constant @txl_assert_message(0 : i32) : i32
  llvm.func @segment(%a: i1, %b: i1) {
    cf.assert %a, "txl.rel_attention: pos_key must have as many rows as key (klen)"
    cf.assert %b, "txl.rel_attention: pos_key must have as many rows as key (klen)"
    cf.assert %b, "other"
    llvm.return
  }
}

// -----

// Checks inside a kernel module are the device's and stay as they are; a
// module with no host check is unchanged (no declaration added).
// CHECK-LABEL: module attributes {gpu.container_module}
// CHECK-NOT: txl_rt_assert_failed
// CHECK: gpu.module @kernels
// CHECK: cf.assert %{{.+}}, "device"
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k(%a: i1) kernel {
      cf.assert %a, "device"
      gpu.return
    }
  }
}

// -----

// A declaration of the runtime's function with another type is an error.
module {
  // expected-error @+1 {{'txl_rt_assert_failed' has type '!llvm.func<i32 (ptr)>', expected '!llvm.func<void (ptr)>'}}
  llvm.func @txl_rt_assert_failed(!llvm.ptr) -> i32
  llvm.func @segment(%a: i1) {
    cf.assert %a, "x"
    llvm.return
  }
}

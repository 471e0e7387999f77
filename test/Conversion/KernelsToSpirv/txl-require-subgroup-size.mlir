// RUN: txl-opt %s --split-input-file --pass-pipeline="builtin.module(gpu.module(txl-require-subgroup-size))" \
// RUN:   --verify-diagnostics | FileCheck %s

// Every kernel requires subgroups of 32 work-items (the CUDA warp the
// kernels' shuffles assume); a kernel that already does keeps it, and a
// function that is not a kernel gets nothing.
// CHECK-LABEL: gpu.module @kernels
// CHECK: gpu.func @reduce() kernel attributes {intel_reqd_sub_group_size = 32 : i32}
// CHECK: gpu.func @marked() kernel attributes {intel_reqd_sub_group_size = 32 : i32}
// CHECK: gpu.func @helper() {
gpu.module @kernels {
  gpu.func @reduce() kernel {
    gpu.return
  }
  gpu.func @marked() kernel attributes {intel_reqd_sub_group_size = 32 : i32} {
    gpu.return
  }
  gpu.func @helper() {
    gpu.return
  }
}

// -----

// A kernel that requires another size is not silently changed.
gpu.module @kernels {
  // expected-error @+1 {{txl-require-subgroup-size: the kernel requires 16 : i32 as its subgroup size; txlc's kernels assume 32 (the CUDA warp)}}
  gpu.func @narrow() kernel attributes {intel_reqd_sub_group_size = 16 : i32} {
    gpu.return
  }
}

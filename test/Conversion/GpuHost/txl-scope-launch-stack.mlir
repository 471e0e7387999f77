// RUN: txl-opt %s --txl-scope-launch-stack | FileCheck %s

// A launch inside a host loop (a block other than the entry block) gets its
// own stack scope, so that the argument array its translation allocates
// there is freed every iteration; a launch in the entry block, whose
// allocas get a fixed frame slot, is left unchanged.

module attributes {gpu.container_module} {
  gpu.module @txl_kernels {
    gpu.func @k(%x: !llvm.ptr) kernel {
      gpu.return
    }
  }

  // CHECK-LABEL: llvm.func @loop
  // CHECK-NOT: llvm.intr.stacksave
  // CHECK: gpu.launch_func @txl_kernels::@k
  // CHECK-NEXT: llvm.br ^bb1
  // CHECK: ^bb2:
  // CHECK-NEXT: %[[SP:.+]] = llvm.intr.stacksave : !llvm.ptr
  // CHECK-NEXT: gpu.launch_func @txl_kernels::@k
  // CHECK-NEXT: llvm.intr.stackrestore %[[SP]] : !llvm.ptr
  // CHECK-NEXT: llvm.add
  // CHECK: ^bb3:
  // CHECK-NEXT: llvm.return
  llvm.func @loop(%p: !llvm.ptr, %n: i64) {
    %c0 = llvm.mlir.constant(0 : i64) : i64
    %c1 = llvm.mlir.constant(1 : i64) : i64
    %one = llvm.mlir.constant(1 : index) : i64
    gpu.launch_func @txl_kernels::@k blocks in (%one, %one, %one)
        threads in (%one, %one, %one) : i64 args(%p : !llvm.ptr)
    llvm.br ^bb1(%c0 : i64)
  ^bb1(%i: i64):
    %more = llvm.icmp "slt" %i, %n : i64
    llvm.cond_br %more, ^bb2, ^bb3
  ^bb2:
    gpu.launch_func @txl_kernels::@k blocks in (%one, %one, %one)
        threads in (%one, %one, %one) : i64 args(%p : !llvm.ptr)
    %next = llvm.add %i, %c1 : i64
    llvm.br ^bb1(%next : i64)
  ^bb3:
    llvm.return
  }
}

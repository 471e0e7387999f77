// RUN: txl-opt %s --pass-pipeline='builtin.module(gpu.module(txl-extern-dynamic-shared))' | FileCheck %s
// RUN: txl-opt %s --pass-pipeline='builtin.module(gpu.module(convert-gpu-to-nvvm,txl-extern-dynamic-shared))' \
// RUN:   | FileCheck %s --check-prefix=NVVM

// The zero-length shared array convert-gpu-to-nvvm makes of
// gpu.dynamic_shared_memory becomes an extern declaration (PTX: .extern
// .shared ... []); a sized shared array (a static workgroup attribution),
// a zero-length array in another address space and a zero-length shared
// array with an initializer are left as they are.

gpu.module @txl_kernels {
  // CHECK: llvm.mlir.global external @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
  llvm.mlir.global internal @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
  // CHECK: llvm.mlir.global internal @tile() {addr_space = 3 : i32, alignment = 4 : i64} : !llvm.array<64 x f32>
  llvm.mlir.global internal @tile() {addr_space = 3 : i32, alignment = 4 : i64} : !llvm.array<64 x f32>
  // CHECK: llvm.mlir.global internal @empty_global() {addr_space = 1 : i32} : !llvm.array<0 x i8>
  llvm.mlir.global internal @empty_global() {addr_space = 1 : i32} : !llvm.array<0 x i8>
  // CHECK: llvm.mlir.global internal @initialized(dense<> : tensor<0xi8>) {addr_space = 3 : i32} : !llvm.array<0 x i8>
  llvm.mlir.global internal @initialized(dense<> : tensor<0xi8>) {addr_space = 3 : i32} : !llvm.array<0 x i8>
}

// What txl-dynamic-shared-memory leaves, through the NVVM lowering: the
// buffer's global is extern, the kernel's static tile stays internal.
gpu.module @lowered {
  // NVVM-LABEL: gpu.module @lowered
  // NVVM-DAG: llvm.mlir.global external @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
  // NVVM-DAG: llvm.mlir.global internal @__wg_k_0() {addr_space = 3 : i32} : !llvm.array<4 x f32>
  gpu.func @k(%out: memref<4xf32>)
      workgroup(%small: memref<4xf32, #gpu.address_space<workgroup>>) kernel {
    %c0 = arith.constant 0 : index
    %buf = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
    %v = memref.view %buf[%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<4xf32, #gpu.address_space<workgroup>>
    %x = memref.load %v[%c0] : memref<4xf32, #gpu.address_space<workgroup>>
    memref.store %x, %small[%c0] : memref<4xf32, #gpu.address_space<workgroup>>
    memref.store %x, %out[%c0] : memref<4xf32>
    gpu.return
  }
}

// RUN: txl-opt %s --txl-deduplicate-kernels --split-input-file \
// RUN:   --allow-unregistered-dialect | FileCheck %s --implicit-check-not=gpu.func

// Two layers' copies of the same kernel (only their names differ) and a
// third that scales by another constant: the copy is erased, its launch
// and the other symbol reference (an attribute on the host) name the
// first kernel; the third kernel stays.

// CHECK-LABEL: func.func @segment
// CHECK: gpu.launch_func @txl_kernels::@segment_loop0 blocks
// CHECK: gpu.launch_func @txl_kernels::@segment_loop0 blocks
// CHECK: gpu.launch_func @txl_kernels::@segment_loop2 blocks
// CHECK: "test.uses"() {kernel = @txl_kernels::@segment_loop0}
// CHECK: gpu.module @txl_kernels
// CHECK: gpu.func @segment_loop0(
// CHECK: gpu.func @segment_loop2(
// CHECK: arith.constant 3.000000e+00
module attributes {gpu.container_module} {
  func.func @segment(%a: memref<?xf32>, %b: memref<?xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @txl_kernels::@segment_loop0 blocks in (%c1, %c1, %c1)
        threads in (%c1, %c1, %c1) args(%a : memref<?xf32>)
    gpu.launch_func @txl_kernels::@segment_loop1 blocks in (%c1, %c1, %c1)
        threads in (%c1, %c1, %c1) args(%b : memref<?xf32>)
    gpu.launch_func @txl_kernels::@segment_loop2 blocks in (%c1, %c1, %c1)
        threads in (%c1, %c1, %c1) args(%b : memref<?xf32>)
    "test.uses"() {kernel = @txl_kernels::@segment_loop1} : () -> ()
    return
  }
  gpu.module @txl_kernels {
    gpu.func @segment_loop0(%x: memref<?xf32>) kernel {
      %c0 = arith.constant 0 : index
      %two = arith.constant 2.0 : f32
      %v = memref.load %x[%c0] : memref<?xf32>
      %w = arith.mulf %v, %two : f32
      memref.store %w, %x[%c0] : memref<?xf32>
      gpu.return
    }
    gpu.func @segment_loop1(%y: memref<?xf32>) kernel {
      %c0 = arith.constant 0 : index
      %two = arith.constant 2.0 : f32
      %v = memref.load %y[%c0] : memref<?xf32>
      %w = arith.mulf %v, %two : f32
      memref.store %w, %y[%c0] : memref<?xf32>
      gpu.return
    }
    gpu.func @segment_loop2(%x: memref<?xf32>) kernel {
      %c0 = arith.constant 0 : index
      %three = arith.constant 3.0 : f32
      %v = memref.load %x[%c0] : memref<?xf32>
      %w = arith.mulf %v, %three : f32
      memref.store %w, %x[%c0] : memref<?xf32>
      gpu.return
    }
  }
}

// -----

// Not the same kernel: another workgroup size (an attribute), another
// argument type, the same body in another gpu.module, and a function that
// is not a kernel. Nothing is erased.

// CHECK-LABEL: gpu.module @a
// CHECK: gpu.func @k0(
// CHECK: gpu.func @k1(
// CHECK: gpu.func @k2(
// CHECK: gpu.func @helper0(
// CHECK: gpu.func @helper1(
// CHECK-LABEL: gpu.module @b
// CHECK: gpu.func @k0(
module attributes {gpu.container_module} {
  gpu.module @a {
    gpu.func @k0(%x: memref<?xf32>) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {
      gpu.return
    }
    gpu.func @k1(%x: memref<?xf32>) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
      gpu.return
    }
    gpu.func @k2(%x: memref<?xi32>) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {
      gpu.return
    }
    gpu.func @helper0(%x: memref<?xf32>) {
      gpu.return
    }
    gpu.func @helper1(%x: memref<?xf32>) {
      gpu.return
    }
  }
  gpu.module @b {
    gpu.func @k0(%x: memref<?xf32>) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {
      gpu.return
    }
  }
}

// RUN: txl-opt %s --split-input-file --verify-diagnostics --txl-dynamic-shared-memory | FileCheck %s

// A kernel over CUDA's static 48 KiB (here 40 KiB + 12 B + 16 KiB): its
// tiles become views of one dynamic buffer at 16-byte aligned offsets (the
// 12-byte tile's successor starts at 40976, not 40972), it records the
// buffer's bytes, and each of its launches passes them. A kernel within
// 48 KiB, and its launch, are unchanged.

module attributes {gpu.container_module} {
  gpu.module @txl_kernels {
    // CHECK-LABEL: gpu.func @wide
    // CHECK-SAME: (%[[OUT:.+]]: memref<?xf32>) kernel
    // CHECK-SAME: txl.dynamic_shared_memory = 57360 : i32
    // CHECK-NOT: workgroup(
    // CHECK-NEXT: %[[BUF:.+]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
    // CHECK-NEXT: %[[C0:.+]] = arith.constant 0 : index
    // CHECK-NEXT: %[[A:.+]] = memref.view %[[BUF]][%[[C0]]][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<80x128xf32, #gpu.address_space<workgroup>>
    // CHECK-NEXT: %[[C40960:.+]] = arith.constant 40960 : index
    // CHECK-NEXT: %[[B:.+]] = memref.view %[[BUF]][%[[C40960]]][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<3xf32, #gpu.address_space<workgroup>>
    // CHECK-NEXT: %[[C40976:.+]] = arith.constant 40976 : index
    // CHECK-NEXT: %[[C:.+]] = memref.view %[[BUF]][%[[C40976]]][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<32x128xf32, #gpu.address_space<workgroup>>
    // CHECK: memref.load %[[A]]
    // CHECK: memref.load %[[B]]
    // CHECK: memref.store {{.+}}, %[[C]]
    gpu.func @wide(%out: memref<?xf32>)
        workgroup(%a: memref<80x128xf32, #gpu.address_space<workgroup>>,
                  %b: memref<3xf32, #gpu.address_space<workgroup>>,
                  %c: memref<32x128xf32, #gpu.address_space<workgroup>>) kernel {
      %i = arith.constant 1 : index
      %x = memref.load %a[%i, %i] : memref<80x128xf32, #gpu.address_space<workgroup>>
      %y = memref.load %b[%i] : memref<3xf32, #gpu.address_space<workgroup>>
      %s = arith.addf %x, %y : f32
      memref.store %s, %c[%i, %i] : memref<32x128xf32, #gpu.address_space<workgroup>>
      memref.store %s, %out[%i] : memref<?xf32>
      gpu.return
    }
    // CHECK-LABEL: gpu.func @narrow
    // CHECK-SAME: workgroup(%{{.+}} : memref<96x128xf32, #gpu.address_space<workgroup>>) kernel
    // CHECK-NOT: txl.dynamic_shared_memory
    // CHECK-NOT: gpu.dynamic_shared_memory
    // CHECK: gpu.return
    gpu.func @narrow(%out: memref<?xf32>)
        workgroup(%a: memref<96x128xf32, #gpu.address_space<workgroup>>) kernel {
      %i = arith.constant 1 : index
      %x = memref.load %a[%i, %i] : memref<96x128xf32, #gpu.address_space<workgroup>>
      memref.store %x, %out[%i] : memref<?xf32>
      gpu.return
    }
  }

  // CHECK-LABEL: func.func @host
  // CHECK: %[[BYTES:.+]] = arith.constant 57360 : i32
  // CHECK-NEXT: gpu.launch_func @txl_kernels::@wide {{.+}} dynamic_shared_memory_size %[[BYTES]] args
  // CHECK: %[[BYTES2:.+]] = arith.constant 57360 : i32
  // CHECK-NEXT: gpu.launch_func @txl_kernels::@wide {{.+}} dynamic_shared_memory_size %[[BYTES2]] args
  // CHECK-NOT: dynamic_shared_memory_size
  // CHECK: gpu.launch_func @txl_kernels::@narrow
  // CHECK-NOT: dynamic_shared_memory_size
  // CHECK: return
  func.func @host(%out: memref<?xf32>) {
    %one = arith.constant 1 : index
    gpu.launch_func @txl_kernels::@wide blocks in (%one, %one, %one)
        threads in (%one, %one, %one) args(%out : memref<?xf32>)
    gpu.launch_func @txl_kernels::@wide blocks in (%one, %one, %one)
        threads in (%one, %one, %one) args(%out : memref<?xf32>)
    gpu.launch_func @txl_kernels::@narrow blocks in (%one, %one, %one)
        threads in (%one, %one, %one) args(%out : memref<?xf32>)
    return
  }
}

// -----

// A launch that already passes a dynamic size is not changed behind its
// back.
module attributes {gpu.container_module} {
  gpu.module @txl_kernels {
    gpu.func @wide()
        workgroup(%a: memref<100x128xf32, #gpu.address_space<workgroup>>) kernel {
      gpu.return
    }
  }
  func.func @host() {
    %one = arith.constant 1 : index
    %bytes = arith.constant 1024 : i32
    // expected-error @+1 {{launch of @txl_kernels::@wide already has a dynamic shared memory size}}
    gpu.launch_func @txl_kernels::@wide blocks in (%one, %one, %one)
        threads in (%one, %one, %one) dynamic_shared_memory_size %bytes
    return
  }
}

// -----

// More than the 99 KiB every architecture txlc builds for can give a
// workgroup (max-bytes): an error naming the kernel's need.
module attributes {gpu.container_module} {
  gpu.module @txl_kernels {
    // expected-error @+1 {{kernel needs 102400 bytes of workgroup memory, more than the 101376 bytes of dynamic shared memory allowed}}
    gpu.func @too_wide()
        workgroup(%a: memref<100x256xf32, #gpu.address_space<workgroup>>) kernel {
      gpu.return
    }
  }
}

// -----

// One buffer holds every tile, so they must share one memory space.
module attributes {gpu.container_module} {
  gpu.module @txl_kernels {
    // expected-error @+1 {{workgroup attributions in different memory spaces}}
    gpu.func @mixed()
        workgroup(%a: memref<100x128xf32, #gpu.address_space<workgroup>>,
                  %b: memref<4xf32, 3>) kernel {
      gpu.return
    }
  }
}

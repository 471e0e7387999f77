// A kernel whose workgroup tile (280,000 bytes) passes the local memory of
// Intel's OpenCL CPU runtime (256 KiB): device-abi.test's too-much-local
// case.
module attributes {gpu.container_module} {
  gpu.module @txl_kernels {
    gpu.func @wide_tile(%out: memref<4xf32>)
        workgroup(%tile: memref<70000xf32, 3>) kernel {
      %c0 = arith.constant 0 : index
      %x = memref.load %tile[%c0] : memref<70000xf32, 3>
      memref.store %x, %out[%c0] : memref<4xf32>
      gpu.return
    }
  }
}

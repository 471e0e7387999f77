// Kernels of narrow_memory_kernel.py: bf16 and f16 buffers read and written
// through txl-emulate-mma's i16 form on OpenCL (a work-item per element, 8
// per work-item in the vector forms).
gpu.module @txl_kernels {
  gpu.func @widen_bf16(%in: memref<?xbf16>, %out: memref<?xf32>) kernel {
    %i = gpu.global_id x
    %h = memref.load %in[%i] : memref<?xbf16>
    %w = arith.extf %h : bf16 to f32
    memref.store %w, %out[%i] : memref<?xf32>
    gpu.return
  }
  gpu.func @widen_f16(%in: memref<?xf16>, %out: memref<?xf32>) kernel {
    %i = gpu.global_id x
    %h = memref.load %in[%i] : memref<?xf16>
    %w = arith.extf %h : f16 to f32
    memref.store %w, %out[%i] : memref<?xf32>
    gpu.return
  }
  gpu.func @round_bf16(%in: memref<?xf32>, %out: memref<?xbf16>) kernel {
    %i = gpu.global_id x
    %x = memref.load %in[%i] : memref<?xf32>
    %h = arith.truncf %x : f32 to bf16
    memref.store %h, %out[%i] : memref<?xbf16>
    gpu.return
  }
  gpu.func @round_f16(%in: memref<?xf32>, %out: memref<?xf16>) kernel {
    %i = gpu.global_id x
    %x = memref.load %in[%i] : memref<?xf32>
    %h = arith.truncf %x : f32 to f16
    memref.store %h, %out[%i] : memref<?xf16>
    gpu.return
  }
  // 8 elements a work-item: a vector load widened, a vector store rounded.
  gpu.func @copy8_f16(%in: memref<?xf16>, %out: memref<?xf32>) kernel {
    %g = gpu.global_id x
    %c8 = arith.constant 8 : index
    %i = arith.muli %g, %c8 : index
    %h = vector.load %in[%i] : memref<?xf16>, vector<8xf16>
    %w = arith.extf %h : vector<8xf16> to vector<8xf32>
    vector.store %w, %out[%i] : memref<?xf32>, vector<8xf32>
    gpu.return
  }
  gpu.func @round8_f16(%in: memref<?xf32>, %out: memref<?xf16>) kernel {
    %g = gpu.global_id x
    %c8 = arith.constant 8 : index
    %i = arith.muli %g, %c8 : index
    %x = vector.load %in[%i] : memref<?xf32>, vector<8xf32>
    %h = arith.truncf %x : vector<8xf32> to vector<8xf16>
    vector.store %h, %out[%i] : memref<?xf16>, vector<8xf16>
    gpu.return
  }
}

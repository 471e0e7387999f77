// Inputs of txl-parallel-loops-to-gpu.mlir's --verify-diagnostics run.

func.func @reduction(%a: memref<8xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  // expected-error @+1 {{txl-parallel-loops-to-gpu: a parallel loop with reductions has no GPU kernel}}
  %s = scf.parallel (%i) = (%c0) to (%c8) step (%c1) init (%zero) -> f32 {
    %x = memref.load %a[%i] : memref<8xf32>
    scf.reduce(%x : f32) {
    ^bb0(%l: f32, %r: f32):
      %t = arith.addf %l, %r : f32
      scf.reduce.return %t : f32
    }
  }
  return %s : f32
}

// -----

func.func @host_access(%a: memref<8xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{txl-parallel-loops-to-gpu: host code accesses device memory outside a loop}}
  %x = memref.load %a[%c0] : memref<8xf32>
  return %x : f32
}

// -----

func.func @half_result(%a: memref<8xf16>) -> f16 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f16
  // expected-error @+1 {{txl-parallel-loops-to-gpu: a sequential loop over device memory with a 'f16' result has no GPU kernel}}
  %s = scf.for %i = %c0 to %c8 step %c1 iter_args(%acc = %zero) -> f16 {
    %x = memref.load %a[%i] : memref<8xf16>
    %t = arith.addf %acc, %x : f16
    scf.yield %t : f16
  }
  return %s : f16
}

// -----

func.func @f64_value(%a: memref<8xf64>, %s: f64) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  // expected-error @+1 {{txl-parallel-loops-to-gpu: cannot pass a 'f64' to a kernel}}
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    memref.store %s, %a[%i] : memref<8xf64>
    scf.reduce
  }
  return
}

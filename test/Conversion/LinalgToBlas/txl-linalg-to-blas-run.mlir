// RUN: txl-opt %s --txl-linalg-to-blas \
// RUN:   | mlir-opt --convert-linalg-to-loops --lower-affine --convert-scf-to-cf \
// RUN:       --expand-strided-metadata --finalize-memref-to-llvm --convert-math-to-llvm \
// RUN:       --convert-arith-to-llvm --convert-index-to-llvm --convert-func-to-llvm \
// RUN:       --convert-cf-to-llvm --reconcile-unrealized-casts \
// RUN:   | mlir-runner -e main -entry-point-result=void \
// RUN:       -shared-libs=%blas_lib,%mlir_c_runner_utils \
// RUN:   | FileCheck %s

// lowerContractToBlas runs: each linalg.contract (its cblas_sgemm loop nest)
// against the same contraction as a linalg.generic (plain loops), on the
// attention's layouts with batch 2, 3 heads, d_head 4, qlen 5, klen 7. The
// inputs are small multiples of 1/4, so both sum exactly and must agree bit
// for bit (max |diff| 0); the sum of |result| tells a product from a wrong
// one that both sides might share. Dropping the output's batch offsets,
// for one, gives max |diff| 5.375 on the first product.
// q·kᵀ into heads-major scores [b, h, i, j]:
// CHECK: 0
// CHECK-NEXT: 342.25
// q·rᵀ, r [klen, h, d] shared by the batch columns:
// CHECK-NEXT: 0
// CHECK-NEXT: 341.438
// scores·v back into [qlen, b, h, d]:
// CHECK-NEXT: 0
// CHECK-NEXT: 755.688

#q = affine_map<(b, h, i, j, d) -> (i, b, h, d)>
#k = affine_map<(b, h, i, j, d) -> (j, b, h, d)>
#r = affine_map<(b, h, i, j, d) -> (j, h, d)>
#s = affine_map<(b, h, i, j, d) -> (b, h, i, j)>
#p2 = affine_map<(b, h, i, d, j) -> (b, h, i, j)>
#v2 = affine_map<(b, h, i, d, j) -> (j, b, h, d)>
#o2 = affine_map<(b, h, i, d, j) -> (i, b, h, d)>

func.func private @printF32(f32)
func.func private @printNewline()

// x[idx] = ((Σ idx_n·c_n) mod 13 - 6) / 4: small multiples of 1/4, so every
// product and sum below is exact in f32 and BLAS must match the loops
// bit for bit.
func.func @fill4(%x: memref<?x?x?x?xf32>, %seed: index) {
  linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      outs(%x : memref<?x?x?x?xf32>) {
  ^bb0(%out: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %i2 = linalg.index 2 : index
    %i3 = linalg.index 3 : index
    %c3 = arith.constant 3 : index
    %c5 = arith.constant 5 : index
    %c7 = arith.constant 7 : index
    %c11 = arith.constant 11 : index
    %c13 = arith.constant 13 : index
    %a0 = arith.muli %i0, %c3 : index
    %a1 = arith.muli %i1, %c5 : index
    %a2 = arith.muli %i2, %c7 : index
    %a3 = arith.muli %i3, %c11 : index
    %t0 = arith.addi %a0, %a1 : index
    %t1 = arith.addi %t0, %a2 : index
    %t2 = arith.addi %t1, %a3 : index
    %t3 = arith.addi %t2, %seed : index
    %m = arith.remui %t3, %c13 : index
    %mi = arith.index_cast %m : index to i32
    %f = arith.sitofp %mi : i32 to f32
    %six = arith.constant 6.0 : f32
    %quarter = arith.constant 0.25 : f32
    %g = arith.subf %f, %six : f32
    %h = arith.mulf %g, %quarter : f32
    linalg.yield %h : f32
  }
  return
}

// Prints max |a - b| and Σ |a| (which tells a wrong product from a right
// one: the loops' values are exact).
func.func @compare(%a: memref<?x?x?x?xf32>, %b: memref<?x?x?x?xf32>) {
  %acc = memref.alloc() : memref<2xf32>
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%acc : memref<2xf32>)
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>,
                                   affine_map<(a, b, c, d) -> (a, b, c, d)>],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%a, %b : memref<?x?x?x?xf32>, memref<?x?x?x?xf32>) {
  ^bb0(%x: f32, %y: f32):
    %d = arith.subf %x, %y : f32
    %ad = math.absf %d : f32
    %ax = math.absf %x : f32
    %m0 = memref.load %acc[%c0] : memref<2xf32>
    %m1 = arith.maximumf %m0, %ad : f32
    memref.store %m1, %acc[%c0] : memref<2xf32>
    %s0 = memref.load %acc[%c1] : memref<2xf32>
    %s1 = arith.addf %s0, %ax : f32
    memref.store %s1, %acc[%c1] : memref<2xf32>
    linalg.yield
  }
  %max = memref.load %acc[%c0] : memref<2xf32>
  %sum = memref.load %acc[%c1] : memref<2xf32>
  func.call @printF32(%max) : (f32) -> ()
  func.call @printNewline() : () -> ()
  func.call @printF32(%sum) : (f32) -> ()
  func.call @printNewline() : () -> ()
  memref.dealloc %acc : memref<2xf32>
  return
}

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %zero = arith.constant 0.0 : f32
  // [len, batch 2, n_head 3, d_head 4], qlen 5, klen 7: q, k, v, r.
  %q0 = memref.alloc() : memref<5x2x3x4xf32>
  %k0 = memref.alloc() : memref<7x2x3x4xf32>
  %r0 = memref.alloc() : memref<7x1x3x4xf32>
  %q = memref.cast %q0 : memref<5x2x3x4xf32> to memref<?x?x?x?xf32>
  %k = memref.cast %k0 : memref<7x2x3x4xf32> to memref<?x?x?x?xf32>
  %r4 = memref.cast %r0 : memref<7x1x3x4xf32> to memref<?x?x?x?xf32>
  func.call @fill4(%q, %c0) : (memref<?x?x?x?xf32>, index) -> ()
  func.call @fill4(%k, %c1) : (memref<?x?x?x?xf32>, index) -> ()
  func.call @fill4(%r4, %c2) : (memref<?x?x?x?xf32>, index) -> ()
  %r = memref.collapse_shape %r0 [[0, 1], [2], [3]] : memref<7x1x3x4xf32> into memref<7x3x4xf32>

  // q·kᵀ, heads-major scores [b, h, i, j].
  %s0 = memref.alloc() : memref<2x3x5x7xf32>
  %s1 = memref.alloc() : memref<2x3x5x7xf32>
  linalg.fill ins(%zero : f32) outs(%s0 : memref<2x3x5x7xf32>)
  linalg.fill ins(%zero : f32) outs(%s1 : memref<2x3x5x7xf32>)
  linalg.contract indexing_maps = [#q, #k, #s]
    ins(%q0, %k0 : memref<5x2x3x4xf32>, memref<7x2x3x4xf32>) outs(%s0 : memref<2x3x5x7xf32>)
  linalg.generic {indexing_maps = [#q, #k, #s],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q0, %k0 : memref<5x2x3x4xf32>, memref<7x2x3x4xf32>) outs(%s1 : memref<2x3x5x7xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %p = arith.mulf %x, %y : f32
    %t = arith.addf %o, %p : f32
    linalg.yield %t : f32
  }
  %s0d = memref.cast %s0 : memref<2x3x5x7xf32> to memref<?x?x?x?xf32>
  %s1d = memref.cast %s1 : memref<2x3x5x7xf32> to memref<?x?x?x?xf32>
  func.call @compare(%s0d, %s1d) : (memref<?x?x?x?xf32>, memref<?x?x?x?xf32>) -> ()

  // q·rᵀ with r [klen, h, d] shared by the batch columns.
  linalg.fill ins(%zero : f32) outs(%s0 : memref<2x3x5x7xf32>)
  linalg.fill ins(%zero : f32) outs(%s1 : memref<2x3x5x7xf32>)
  linalg.contract indexing_maps = [#q, #r, #s]
    ins(%q0, %r : memref<5x2x3x4xf32>, memref<7x3x4xf32>) outs(%s0 : memref<2x3x5x7xf32>)
  linalg.generic {indexing_maps = [#q, #r, #s],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q0, %r : memref<5x2x3x4xf32>, memref<7x3x4xf32>) outs(%s1 : memref<2x3x5x7xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %p = arith.mulf %x, %y : f32
    %t = arith.addf %o, %p : f32
    linalg.yield %t : f32
  }
  func.call @compare(%s0d, %s1d) : (memref<?x?x?x?xf32>, memref<?x?x?x?xf32>) -> ()

  // scores·v back into [qlen, b, h, d] (v = k's values).
  %o0 = memref.alloc() : memref<5x2x3x4xf32>
  %o1 = memref.alloc() : memref<5x2x3x4xf32>
  linalg.fill ins(%zero : f32) outs(%o0 : memref<5x2x3x4xf32>)
  linalg.fill ins(%zero : f32) outs(%o1 : memref<5x2x3x4xf32>)
  linalg.contract indexing_maps = [#p2, #v2, #o2]
    ins(%s1, %k0 : memref<2x3x5x7xf32>, memref<7x2x3x4xf32>) outs(%o0 : memref<5x2x3x4xf32>)
  linalg.generic {indexing_maps = [#p2, #v2, #o2],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%s1, %k0 : memref<2x3x5x7xf32>, memref<7x2x3x4xf32>) outs(%o1 : memref<5x2x3x4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %p = arith.mulf %x, %y : f32
    %t = arith.addf %o, %p : f32
    linalg.yield %t : f32
  }
  %o0d = memref.cast %o0 : memref<5x2x3x4xf32> to memref<?x?x?x?xf32>
  %o1d = memref.cast %o1 : memref<5x2x3x4xf32> to memref<?x?x?x?xf32>
  func.call @compare(%o0d, %o1d) : (memref<?x?x?x?xf32>, memref<?x?x?x?xf32>) -> ()
  return
}

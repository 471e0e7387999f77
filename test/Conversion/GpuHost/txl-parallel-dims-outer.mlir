// RUN: txl-opt %s --pass-pipeline='builtin.module(func.func(txl-parallel-dims-outer))' | FileCheck %s

// A sum over the leading dimensions (reductions first): interchanged so
// that the parallel loops come first, the reductions keeping their order;
// convert-linalg-to-parallel-loops then makes one scf.parallel (one kernel)
// around them instead of host loops around a kernel.

// CHECK-DAG: #[[$IN:.+]] = affine_map<(d0, d1, d2) -> (d1, d2, d0)>
// CHECK-DAG: #[[$OUT:.+]] = affine_map<(d0, d1, d2) -> (d0)>
// CHECK-DAG: #[[$SECOND:.+]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[$FIRST:.+]] = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @sum_leading
// CHECK: linalg.generic {indexing_maps = [#[[$IN]], #[[$OUT]]], iterator_types = ["parallel", "reduction", "reduction"]}
func.func @sum_leading(%x: memref<?x?x8xf32>, %y: memref<8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(r0, r1, p) -> (r0, r1, p)>,
                                   affine_map<(r0, r1, p) -> (p)>],
                  iterator_types = ["reduction", "reduction", "parallel"]}
      ins(%x : memref<?x?x8xf32>) outs(%y : memref<8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  }
  return
}

// Parallel loops already first (a row sum), and a pointwise generic: left
// unchanged.
// CHECK-LABEL: func.func @row_sum
// CHECK: iterator_types = ["parallel", "reduction"]
// CHECK-LABEL: func.func @pointwise
// CHECK: iterator_types = ["parallel", "parallel"]
func.func @row_sum(%x: memref<?x8xf32>, %y: memref<?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(p, r) -> (p, r)>,
                                   affine_map<(p, r) -> (p)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x8xf32>) outs(%y : memref<?xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  }
  return
}

func.func @pointwise(%x: memref<?x8xf32>, %y: memref<?x8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(p, q) -> (p, q)>,
                                   affine_map<(p, q) -> (p, q)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<?x8xf32>) outs(%y : memref<?x8xf32>) {
  ^bb0(%a: f32, %b: f32):
    linalg.yield %a : f32
  }
  return
}

// An index-dependent body: linalg.index follows the interchange.
// CHECK-LABEL: func.func @indexed
// CHECK: iterator_types = ["parallel", "reduction"]
// CHECK: %[[R:[0-9]+]] = affine.apply #[[$SECOND]]
// CHECK: %[[P:[0-9]+]] = affine.apply #[[$FIRST]]
// CHECK: arith.addi %[[R]], %[[P]]
func.func @indexed(%x: memref<?x8xf32>, %y: memref<8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(r, p) -> (r, p)>,
                                   affine_map<(r, p) -> (p)>],
                  iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<?x8xf32>) outs(%y : memref<8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = linalg.index 0 : index
    %p = linalg.index 1 : index
    %i = arith.addi %r, %p : index
    %c = arith.index_cast %i : index to i32
    %f = arith.sitofp %c : i32 to f32
    %t = arith.mulf %a, %f : f32
    %s = arith.addf %acc, %t : f32
    linalg.yield %s : f32
  }
  return
}

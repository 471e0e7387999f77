// RUN: txl-opt %s --split-input-file --txl-fuse-elementwise | FileCheck %s
// Why not upstream's elementwise fusion (the pass, or its pattern set with a
// control function): on the cases below it recomputes a broadcast producer
// and gives an in-place generic a fresh destination.
// RUN: txl-opt %s --split-input-file --linalg-fuse-elementwise-ops | FileCheck %s --check-prefix=UPSTREAM

// A single-use elementwise producer is computed inside its consumer (here a
// row reduction): one generic, reading the producer's inputs.
// CHECK-LABEL: func.func @into_reduction
// CHECK-SAME: (%[[A:[^:]+]]: tensor<?x8xf32>, %[[B:[^:]+]]: tensor<?x8xf32>, %[[ACC:[^:]+]]: tensor<?xf32>)
// CHECK: %[[R:.+]] = linalg.generic {{.+}} iterator_types = ["parallel", "reduction"]} ins(%[[A]], %[[B]] : tensor<?x8xf32>, tensor<?x8xf32>) outs(%[[ACC]] : tensor<?xf32>)
// CHECK: %[[S:.+]] = arith.mulf
// CHECK: arith.addf %[[S]]
// CHECK-NOT: linalg.generic
// CHECK: return %[[R]]
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @into_reduction(%a: tensor<?x8xf32>, %b: tensor<?x8xf32>, %acc: tensor<?xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %a, %c0 : tensor<?x8xf32>
  %e = tensor.empty(%n) : tensor<?x8xf32>
  %p = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : tensor<?x8xf32>, tensor<?x8xf32>) outs(%e : tensor<?x8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    linalg.yield %m : f32
  } -> tensor<?x8xf32>
  %r = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%p : tensor<?x8xf32>) outs(%acc : tensor<?xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %x, %o : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// -----

// Chains fuse transitively; a broadcast input of the producer keeps its map.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: (%[[A:[^:]+]]: tensor<?x8xf32>, %[[G:[^:]+]]: tensor<8xf32>, %[[D:[^:]+]]: tensor<?x8xf32>)
// CHECK: %[[R:.+]] = linalg.generic {{.+}} ins(%[[A]], %[[G]] : tensor<?x8xf32>, tensor<8xf32>) outs(%[[D]] : tensor<?x8xf32>)
// CHECK: arith.mulf
// CHECK: math.exp
// CHECK: arith.addf
// CHECK-NOT: linalg.generic
// CHECK: return %[[R]]
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @chain(%a: tensor<?x8xf32>, %g: tensor<8xf32>, %d: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %a, %c0 : tensor<?x8xf32>
  %e = tensor.empty(%n) : tensor<?x8xf32>
  %p = linalg.generic {indexing_maps = [#id2, #col, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%a, %g : tensor<?x8xf32>, tensor<8xf32>) outs(%e : tensor<?x8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    linalg.yield %m : f32
  } -> tensor<?x8xf32>
  %e2 = tensor.empty(%n) : tensor<?x8xf32>
  %q = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%p : tensor<?x8xf32>) outs(%e2 : tensor<?x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %t = math.exp %x : f32
    linalg.yield %t : f32
  } -> tensor<?x8xf32>
  %r = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%q : tensor<?x8xf32>) outs(%d : tensor<?x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %x, %o : f32
    linalg.yield %s : f32
  } -> tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}

// -----

// Not fused: a producer with a second use (it would be recomputed), a
// producer that reduces, a producer read by broadcast (its row factor would
// be recomputed for every column), a producer feeding the consumer's init
// (the destination of an in-place update), and producers of a named op (the
// product must stay a linalg.matmul for BLAS).
// CHECK-LABEL: func.func @not_fused
// CHECK: %[[TWICE:.+]] = linalg.generic
// CHECK: linalg.generic {{.+}} ins(%[[TWICE]] :
// CHECK: %[[RS:.+]] = linalg.generic {{.+}} iterator_types = ["parallel", "reduction"]
// CHECK: %[[CEN:.+]] = linalg.generic {{.+}} ins(%{{.+}}, %[[RS]] :
// CHECK: %[[ROW:.+]] = linalg.generic {{.+}} iterator_types = ["parallel"]
// CHECK: linalg.generic {{.+}} ins(%[[CEN]], %[[ROW]] :
// CHECK: %[[NEG:.+]] = linalg.generic
// CHECK: linalg.generic {{.+}} outs(%[[NEG]] :
// CHECK: %[[LHS:.+]] = linalg.generic
// CHECK: %[[INIT:.+]] = linalg.generic
// CHECK: linalg.matmul ins(%[[LHS]], %{{.+}} : tensor<8x8xf32>, tensor<8x8xf32>) outs(%[[INIT]] : tensor<8x8xf32>)
// CHECK: return %[[TWICE]]
#m = affine_map<(d0, d1) -> (d0, d1)>
#r = affine_map<(d0, d1) -> (d0)>
#v = affine_map<(d0) -> (d0)>
func.func @not_fused(%a: tensor<8x8xf32>, %w: tensor<8x8xf32>, %acc: tensor<8xf32>)
    -> (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) {
  %e = tensor.empty() : tensor<8x8xf32>
  %twice = linalg.generic {indexing_maps = [#m, #m], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %t = arith.addf %x, %x : f32
    linalg.yield %t : f32
  } -> tensor<8x8xf32>
  %use1 = linalg.generic {indexing_maps = [#m, #m], iterator_types = ["parallel", "parallel"]}
      ins(%twice : tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %t = arith.mulf %x, %x : f32
    linalg.yield %t : f32
  } -> tensor<8x8xf32>
  %rs = linalg.generic {indexing_maps = [#m, #r], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<8x8xf32>) outs(%acc : tensor<8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %t = arith.addf %x, %o : f32
    linalg.yield %t : f32
  } -> tensor<8xf32>
  %centered = linalg.generic {indexing_maps = [#m, #r, #m], iterator_types = ["parallel", "parallel"]}
      ins(%a, %rs : tensor<8x8xf32>, tensor<8xf32>) outs(%e : tensor<8x8xf32>) {
  ^bb0(%x: f32, %s: f32, %o: f32):
    %t = arith.subf %x, %s : f32
    linalg.yield %t : f32
  } -> tensor<8x8xf32>
  %e1 = tensor.empty() : tensor<8xf32>
  %row = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]}
      ins(%acc : tensor<8xf32>) outs(%e1 : tensor<8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %t = math.exp %x : f32
    linalg.yield %t : f32
  } -> tensor<8xf32>
  %scaled = linalg.generic {indexing_maps = [#m, #r, #m], iterator_types = ["parallel", "parallel"]}
      ins(%centered, %row : tensor<8x8xf32>, tensor<8xf32>) outs(%e : tensor<8x8xf32>) {
  ^bb0(%x: f32, %s: f32, %o: f32):
    %t = arith.mulf %x, %s : f32
    linalg.yield %t : f32
  } -> tensor<8x8xf32>
  %neg = linalg.generic {indexing_maps = [#m, #m], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %t = arith.negf %x : f32
    linalg.yield %t : f32
  } -> tensor<8x8xf32>
  %upd = linalg.generic {indexing_maps = [#m, #m], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<8x8xf32>) outs(%neg : tensor<8x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %t = arith.addf %x, %o : f32
    linalg.yield %t : f32
  } -> tensor<8x8xf32>
  %lhs = linalg.generic {indexing_maps = [#m, #m], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %t = math.exp %x : f32
    linalg.yield %t : f32
  } -> tensor<8x8xf32>
  %init = linalg.generic {indexing_maps = [#m, #m], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %t = arith.mulf %x, %x : f32
    linalg.yield %t : f32
  } -> tensor<8x8xf32>
  %mm = linalg.matmul ins(%lhs, %w : tensor<8x8xf32>, tensor<8x8xf32>) outs(%init : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %twice, %use1, %centered, %scaled, %upd, %mm : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>
}

// -----

// An in-place generic (txl.dropout writes its result into its input's
// buffer, outs(%x)) keeps its destination, and a producer read through a
// broadcast stays apart. Upstream's pattern set rewrites an `outs` the
// payload does not read to a tensor.empty (its RemoveOutsDependency), which
// would allocate a second buffer; and it fuses the broadcast producer,
// computing exp(acc[i]) once per column instead of once per row.
// CHECK-LABEL: func.func @upstream_differs
// CHECK-SAME: (%[[X:[^:]+]]: tensor<8x8xf32>, %[[ACC:[^:]+]]: tensor<8xf32>, %[[Y:[^:]+]]: tensor<8x8xf32>)
// CHECK: %[[INPLACE:.+]] = linalg.generic {{.+}} ins(%[[X]] : tensor<8x8xf32>) outs(%[[X]] : tensor<8x8xf32>)
// CHECK: %[[ROW:.+]] = linalg.generic {{.+}} ins(%[[ACC]] : tensor<8xf32>)
// CHECK: math.exp
// CHECK: %[[SC:.+]] = linalg.generic {{.+}} ins(%[[Y]], %[[ROW]] : tensor<8x8xf32>, tensor<8xf32>)
// CHECK-NOT: math.exp
// CHECK: return %[[INPLACE]], %[[SC]]
// UPSTREAM-LABEL: func.func @upstream_differs
// UPSTREAM-SAME: (%[[X:[^:]+]]: tensor<8x8xf32>, %[[ACC:[^:]+]]: tensor<8xf32>, %[[Y:[^:]+]]: tensor<8x8xf32>)
// UPSTREAM: %[[E:.+]] = tensor.empty() : tensor<8x8xf32>
// UPSTREAM: linalg.generic {{.+}} ins(%[[X]] : tensor<8x8xf32>) outs(%[[E]] : tensor<8x8xf32>)
// UPSTREAM: linalg.generic {{.+}} ins(%[[Y]], %[[ACC]] : tensor<8x8xf32>, tensor<8xf32>)
// UPSTREAM: math.exp
// UPSTREAM: return
#im = affine_map<(d0, d1) -> (d0, d1)>
#ir = affine_map<(d0, d1) -> (d0)>
#iv = affine_map<(d0) -> (d0)>
func.func @upstream_differs(%x: tensor<8x8xf32>, %acc: tensor<8xf32>, %y: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %inplace = linalg.generic {indexing_maps = [#im, #im], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x8xf32>) outs(%x : tensor<8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.mulf %a, %a : f32
    linalg.yield %t : f32
  } -> tensor<8x8xf32>
  %e1 = tensor.empty() : tensor<8xf32>
  %row = linalg.generic {indexing_maps = [#iv, #iv], iterator_types = ["parallel"]}
      ins(%acc : tensor<8xf32>) outs(%e1 : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.exp %a : f32
    linalg.yield %t : f32
  } -> tensor<8xf32>
  %e = tensor.empty() : tensor<8x8xf32>
  %scaled = linalg.generic {indexing_maps = [#im, #ir, #im], iterator_types = ["parallel", "parallel"]}
      ins(%y, %row : tensor<8x8xf32>, tensor<8xf32>) outs(%e : tensor<8x8xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %t = arith.mulf %a, %s : f32
    linalg.yield %t : f32
  } -> tensor<8x8xf32>
  return %inplace, %scaled : tensor<8x8xf32>, tensor<8x8xf32>
}

// RUN: txl-opt %s --split-input-file --txl-polynomial-exp | FileCheck %s

// An f32 exp becomes arithmetic the loop vectorizer can widen: range
// reduction by round(x / ln 2) (floor of x·log2(e) + 1/2), fused
// multiply-adds for the polynomial, 2^n from the exponent bits. No call is
// left.
// CHECK-LABEL: func.func @exp_f32
// CHECK-SAME: (%[[X:[^:]+]]: f32)
// CHECK-NOT: math.exp
// CHECK: math.floor
// CHECK: math.fma
// CHECK: arith.fptosi %{{.+}} : f32 to i32
// CHECK: arith.bitcast %{{.+}} : i32 to f32
// CHECK-NOT: math.exp
// CHECK: return
func.func @exp_f32(%x: f32) -> f32 {
  %e = math.exp %x : f32
  return %e : f32
}

// -----

// Inside a linalg body (where the lowering puts every exp) it is rewritten
// the same way.
// CHECK-LABEL: func.func @exp_in_generic
// CHECK: linalg.generic
// CHECK-NOT: math.exp
// CHECK: math.fma
// CHECK: linalg.yield
func.func @exp_in_generic(%x: tensor<?xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?xf32>
  %init = tensor.empty(%n) : tensor<?xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]} ins(%x : tensor<?xf32>) outs(%init : tensor<?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  } -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// -----

// f64 exp (the gradient checks' precision) keeps libm; other math ops are
// not approximated.
// CHECK-LABEL: func.func @exp_f64_and_log_kept
// CHECK-NOT: math.fma
// CHECK: math.exp %{{.+}} : f64
// CHECK-NOT: math.fma
// CHECK: math.log %{{.+}} : f32
// CHECK-NOT: math.fma
// CHECK: return
func.func @exp_f64_and_log_kept(%x: f64, %y: f32) -> (f64, f32) {
  %e = math.exp %x : f64
  %l = math.log %y : f32
  return %e, %l : f64, f32
}

// RUN: txl-opt %s --txl-save-attention-stats | FileCheck %s
// RUN: txl-opt %s --txl-save-attention-stats --canonicalize \
// RUN:   | FileCheck %s --check-prefix=CANON

// Every txl.rel_attention gains its lse result, [batch, n_head, qlen] of
// the query's element type, with its operands and attributes (the dropatt
// group) unchanged; an op that has one already is left as it is. Without
// a reader, the canonicalizer drops it again.
// CHECK-LABEL: func.func @ops
// CHECK: %[[O1:.+]], %{{.+}} = txl.rel_attention %arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6, %arg7 {scale = 2.500000e-01 : f32}
// CHECK-SAME: -> tensor<?x3x2x16xf32>, tensor<3x2x?xf32>
// CHECK: %[[O2:.+]], %{{.+}} = txl.rel_attention %arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6, %arg7 dropatt(%arg8, %arg9, %arg7, %arg9, %{{.+}}) {dropatt = 1.000000e-01 : f64, dropatt_stream = 3 : i64, scale = 2.500000e-01 : f32}
// CHECK-SAME: -> tensor<?x3x2x16xf32>, tensor<3x2x?xf32>
// CHECK: %[[O3:.+]], %[[L3:.+]] = txl.rel_attention
// CHECK-NEXT: return %[[O1]], %[[O2]], %[[L3]]
// CANON-LABEL: func.func @ops
// CANON: txl.rel_attention {{.*}} -> tensor<?x3x2x16xf32>{{$}}
// CANON: txl.rel_attention {{.*}} -> tensor<?x3x2x16xf32>{{$}}
// CANON: txl.rel_attention {{.*}} -> tensor<?x3x2x16xf32>, tensor<3x2x?xf32>{{$}}
func.func @ops(%q: tensor<?x3x2x16xf32>, %k: tensor<?x3x2x16xf32>, %v: tensor<?x3x2x16xf32>,
               %r: tensor<?x2x16xf32>, %u: tensor<2x16xf32>, %vb: tensor<2x16xf32>,
               %ml: index, %sl: i1, %seed: i64, %off: i64)
    -> (tensor<?x3x2x16xf32>, tensor<?x3x2x16xf32>, tensor<3x2x?xf32>) {
  %o1 = txl.rel_attention %q, %k, %v, %r, %u, %vb, %ml, %sl {scale = 0.25 : f32}
      : tensor<?x3x2x16xf32>, tensor<?x3x2x16xf32>, tensor<?x3x2x16xf32>, tensor<?x2x16xf32>,
        tensor<2x16xf32>, tensor<2x16xf32> -> tensor<?x3x2x16xf32>
  %o2 = txl.rel_attention %q, %k, %v, %r, %u, %vb, %ml, %sl dropatt(%seed, %off, %sl, %off, %off)
      {dropatt = 0.1 : f64, dropatt_stream = 3 : i64, scale = 0.25 : f32}
      : tensor<?x3x2x16xf32>, tensor<?x3x2x16xf32>, tensor<?x3x2x16xf32>, tensor<?x2x16xf32>,
        tensor<2x16xf32>, tensor<2x16xf32> -> tensor<?x3x2x16xf32>
  %o3, %l3 = txl.rel_attention %q, %k, %v, %r, %u, %vb, %ml, %sl {scale = 0.5 : f32}
      : tensor<?x3x2x16xf32>, tensor<?x3x2x16xf32>, tensor<?x3x2x16xf32>, tensor<?x2x16xf32>,
        tensor<2x16xf32>, tensor<2x16xf32> -> tensor<?x3x2x16xf32>, tensor<3x2x?xf32>
  return %o1, %o2, %l3 : tensor<?x3x2x16xf32>, tensor<?x3x2x16xf32>, tensor<3x2x?xf32>
}

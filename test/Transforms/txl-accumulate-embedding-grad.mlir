// RUN: txl-opt %s --txl-accumulate-embedding-grad --split-input-file | FileCheck %s
// RUN: txl-opt %s --canonicalize --split-input-file | FileCheck %s --check-prefix=CANON

// A tied table's gradient: the sum of the output layer's gradient and a
// fresh embedding_grad becomes one scatter-add onto the former, whichever
// side of the add the scatter is on.

// CHECK-LABEL: func.func @fold_rhs
// CHECK-SAME: (%[[DY:.+]]: tensor<?x?x4xf32>, %[[T:.+]]: tensor<?x?xi64>, %[[G:.+]]: tensor<50x4xf32>)
// CHECK-NEXT: %[[R:.+]] = txl.embedding_grad %[[DY]], %[[T]] into %[[G]] : tensor<?x?x4xf32>, tensor<?x?xi64> -> tensor<50x4xf32>
// CHECK-NEXT: return %[[R]]
func.func @fold_rhs(%dy: tensor<?x?x4xf32>, %t: tensor<?x?xi64>, %g: tensor<50x4xf32>) -> tensor<50x4xf32> {
  %e = txl.embedding_grad %dy, %t : tensor<?x?x4xf32>, tensor<?x?xi64> -> tensor<50x4xf32>
  %s = txl.add %g, %e : tensor<50x4xf32>
  return %s : tensor<50x4xf32>
}

// CHECK-LABEL: func.func @fold_lhs
// CHECK-SAME: (%[[DY:.+]]: tensor<?x?x4xf32>, %[[T:.+]]: tensor<?x?xi64>, %[[G:.+]]: tensor<50x4xf32>)
// CHECK-NEXT: %[[R:.+]] = txl.embedding_grad %[[DY]], %[[T]] into %[[G]]
// CHECK-NEXT: return %[[R]]
func.func @fold_lhs(%dy: tensor<?x?x4xf32>, %t: tensor<?x?xi64>, %g: tensor<50x4xf32>) -> tensor<50x4xf32> {
  %e = txl.embedding_grad %dy, %t : tensor<?x?x4xf32>, tensor<?x?xi64> -> tensor<50x4xf32>
  %s = txl.add %e, %g : tensor<50x4xf32>
  return %s : tensor<50x4xf32>
}

// -----

// Not folded: the scatter is read elsewhere too (folding would change that
// reader's value), or it already accumulates onto another tensor.

// CHECK-LABEL: func.func @second_use
// CHECK: %[[E:.+]] = txl.embedding_grad %{{.+}}, %{{.+}} : tensor
// CHECK: %[[S:.+]] = txl.add %{{.+}}, %[[E]]
// CHECK: return %[[S]], %[[E]]
func.func @second_use(%dy: tensor<?x?x4xf32>, %t: tensor<?x?xi64>, %g: tensor<50x4xf32>) -> (tensor<50x4xf32>, tensor<50x4xf32>) {
  %e = txl.embedding_grad %dy, %t : tensor<?x?x4xf32>, tensor<?x?xi64> -> tensor<50x4xf32>
  %s = txl.add %g, %e : tensor<50x4xf32>
  return %s, %e : tensor<50x4xf32>, tensor<50x4xf32>
}

// CHECK-LABEL: func.func @already_into
// CHECK: %[[E:.+]] = txl.embedding_grad %{{.+}}, %{{.+}} into %{{.+}} : tensor
// CHECK: %[[S:.+]] = txl.add %{{.+}}, %[[E]]
// CHECK: return %[[S]]
func.func @already_into(%dy: tensor<?x?x4xf32>, %t: tensor<?x?xi64>, %g: tensor<50x4xf32>, %h: tensor<50x4xf32>) -> tensor<50x4xf32> {
  %e = txl.embedding_grad %dy, %t into %h : tensor<?x?x4xf32>, tensor<?x?xi64> -> tensor<50x4xf32>
  %s = txl.add %g, %e : tensor<50x4xf32>
  return %s : tensor<50x4xf32>
}

// CHECK-LABEL: func.func @plain_add
// CHECK: txl.add
// CHECK: return
func.func @plain_add(%a: tensor<50x4xf32>, %b: tensor<50x4xf32>) -> tensor<50x4xf32> {
  %s = txl.add %a, %b : tensor<50x4xf32>
  return %s : tensor<50x4xf32>
}

// -----

// The canonicalizer leaves the sum alone: the rewrite changes the order of
// float additions, so it is this named pass's, never a canonicalization's.

// CANON-LABEL: func.func @not_a_canonicalization
// CANON: %[[E:.+]] = txl.embedding_grad %{{.+}}, %{{.+}} : tensor
// CANON-NEXT: %[[S:.+]] = txl.add %{{.+}}, %[[E]]
// CANON-NEXT: return %[[S]]
func.func @not_a_canonicalization(%dy: tensor<?x?x4xf32>, %t: tensor<?x?xi64>, %g: tensor<50x4xf32>) -> tensor<50x4xf32> {
  %e = txl.embedding_grad %dy, %t : tensor<?x?x4xf32>, tensor<?x?xi64> -> tensor<50x4xf32>
  %s = txl.add %g, %e : tensor<50x4xf32>
  return %s : tensor<50x4xf32>
}

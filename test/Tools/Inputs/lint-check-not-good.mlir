// Input of Tools/lint-check-not.test, not a test itself (lit.cfg.py excludes
// Inputs/): every negative check here sits between two positive ones, or is
// no directive of a FileCheck run on this file.
// RUN: txl-opt %s --split-input-file --txl-lower-rel-shift | FileCheck %s --implicit-check-not=tensor.pad
// RUN: txl-opt %s --split-input-file --txl-lower-rel-shift | FileCheck --check-prefixes=SHIFT,GEN %s
// RUN: txl-opt %s --split-input-file --txl-lower-rel-shift | FileCheck %S/lint-check-not-bad.mlir --check-prefix=ELSEWHERE

// Between the label and a positive check, and before the next label.
// CHECK-LABEL: func.func @bracketed
// CHECK-NOT: txl.rel_shift
// CHECK: tensor.generate
// CHECK-NOT: txl.rel_shift
// CHECK: return
func.func @bracketed(%x: tensor<?x?x?x2xf32>) -> tensor<?x?x?x2xf32> {
  %s = txl.rel_shift %x : tensor<?x?x?x2xf32>
  return %s : tensor<?x?x?x2xf32>
}

// -----

// A NOT before the next function's label closes the previous block; one
// prefix's NOT followed by another prefix of the same run is bracketed.
// CHECK-LABEL: func.func @tail_of_block
// CHECK: tensor.generate
// CHECK-NOT: txl.rel_shift
// GEN-NOT: tensor.pad
// SHIFT: tensor.generate
// CHECK-LABEL: func.func @next
// COM: CHECK-NOT: comment lines are no directives
// MYCHECK-NOT: nor is a longer word that ends in a prefix
// ELSEWHERE-NOT: nor a prefix of a run that checks another file
func.func @tail_of_block(%x: tensor<?x?x?x2xf32>) -> tensor<?x?x?x2xf32> {
  %s = txl.rel_shift %x : tensor<?x?x?x2xf32>
  return %s : tensor<?x?x?x2xf32>
}
func.func @next() {
  return
}

// Input of Tools/lint-check-not.test, not a test itself (lit.cfg.py excludes
// Inputs/): every negative check after a "reported" comment is an offender.
// RUN: txl-opt %s --split-input-file --txl-lower-rel-shift | FileCheck %s
// RUN: txl-opt %s --split-input-file --txl-lower-rel-shift | FileCheck %s -check-prefix LOWERED
// RUN: txl-opt %s --split-input-file --txl-lower-rel-shift | FileCheck --check-prefixes=SHIFT,GEN %s
// RUN: txl-opt %s --split-input-file --txl-lower-rel-shift | FileCheck %s --check-prefix=GEN

// Reported: only the closing brace follows the return.
// CHECK-LABEL: func.func @after_return
// CHECK-NOT: txl.rel_shift
// CHECK: tensor.generate
// CHECK: return
// CHECK-NOT: txl.rel_shift
// LOWERED-LABEL: func.func @after_return
// LOWERED: tensor.generate
// Reported: LOWERED has no positive check after it.
// LOWERED-NOT: txl.rel_shift
func.func @after_return(%x: tensor<?x?x?x2xf32>) -> tensor<?x?x?x2xf32> {
  %s = txl.rel_shift %x : tensor<?x?x?x2xf32>
  return %s : tensor<?x?x?x2xf32>
}

// -----

// Fine for the SHIFT,GEN run (a SHIFT check follows), reported for the GEN
// run.
// CHECK-LABEL: func.func @shared_stream
// GEN-NOT: tensor.pad
// SHIFT: tensor.generate
// CHECK: return
// Reported: the last directive of the file.
// CHECK-NOT: tensor.pad
func.func @shared_stream(%x: tensor<?x?x?x2xf32>) -> tensor<?x?x?x2xf32> {
  %s = txl.rel_shift %x : tensor<?x?x?x2xf32>
  return %s : tensor<?x?x?x2xf32>
}

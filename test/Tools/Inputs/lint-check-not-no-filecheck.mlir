// Input of Tools/lint-check-not.test, not a test itself (lit.cfg.py excludes
// Inputs/): a diagnostics test without FileCheck is not read for directives.
// RUN: txl-opt %s --txl-lower-rel-shift --verify-diagnostics
func.func @no_filecheck(%x: tensor<?x?x?x2xf32>) -> tensor<?x?x?x2xf32> {
  // expected-error @+1 {{some diagnostic}}
  %s = txl.rel_shift %x : tensor<?x?x?x2xf32>
  return %s : tensor<?x?x?x2xf32>
}
// CHECK-NOT: ignored

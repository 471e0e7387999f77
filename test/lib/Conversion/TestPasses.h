//===- TestPasses.h - Test-only passes of txl-opt ----------------*- C++
//-*-===//
//
// Passes that exist for the tests alone (as MLIR's test/lib): registered in
// txl-opt, never in txlc or the pipelines.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_TEST_LIB_CONVERSION_TESTPASSES_H
#define TXL_TEST_LIB_CONVERSION_TESTPASSES_H

namespace mlir::txl::test {

/// txl-test-drop-barrier, txl-test-rel-shift-offset,
/// txl-test-whole-key-range and txl-test-interior-tile
/// (TestAttentionFaults.cpp).
void registerTestAttentionFaultPasses();

} // namespace mlir::txl::test

#endif // TXL_TEST_LIB_CONVERSION_TESTPASSES_H

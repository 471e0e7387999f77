//===- EntryParts.h - Long entries cut into functions -----------*- C++ -*-===//
//
// An entry of a deep model is a long line of layer calls: the segment
// entries call each layer's function once, forward and backward, and every
// value the backward keeps lives from its layer's forward call to its
// layer's backward call. LLVM's code generation of one such function grows
// faster than the function (instruction selection of one huge block,
// register allocation and stack slot coloring over thousands of
// overlapping live ranges: llc on the 400-layer @txl_segment_grad 17 s,
// 6 s at 200; issue #48). Cutting the entry into functions of a bounded
// size, with the values that cross a cut kept in one stack buffer, makes
// its code generation linear in the layers.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_TARGET_ENTRYPARTS_H
#define TXL_TARGET_ENTRYPARTS_H

#include "llvm/IR/Function.h"

namespace mlir {
namespace txl {

/// Cuts `fn` into consecutive single-entry, single-exit regions of at least
/// `partSize` instructions each and moves all but the last into private,
/// `noinline` functions `<fn>.part<i>` that `fn` calls in order (LLVM's
/// CodeExtractor). A region ends only where every path from its start
/// arrives, outside any loop; a region holding the function's `ret` is the
/// last. A value defined in one region and used in another is stored once,
/// after its definition, into a slot of one stack buffer (`<fn>.tape`,
/// slots reused once no later region reads them) and loaded once at the
/// start of each region that uses it: no value is live across a part's
/// call, and each part receives the function's arguments and the buffer's
/// address only.
///
/// Leaves `fn` as it is (returns 0) when it is a declaration, has fewer
/// than 2 * `partSize` instructions, `partSize` is 0, or it has an alloca
/// outside its entry block, an alloca of non-constant size, a token-typed
/// value, a stack save or restore, or an exception-handling or `musttail`
/// instruction. When no region can end (every candidate cut leaves a
/// region with two entries or exits), `fn` computes as before but its
/// `extractvalue`s of aggregate results have moved next to the aggregate.
/// Returns the number of parts made.
unsigned cutIntoParts(llvm::Function &fn, unsigned partSize);

} // namespace txl
} // namespace mlir

#endif // TXL_TARGET_ENTRYPARTS_H

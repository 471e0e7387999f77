//===- OutlineStridedCopies.cpp - One function per strided copy type -*- C++
//-*-===//
//
// A strided memref.copy (the new memory of each layer, slices of the
// concatenation) becomes a loop nest in txl-expand-strided-copies. In an
// entry that copies once per layer, those loops made the entry a function
// of thousands of basic blocks through which every value the backward
// keeps stayed alive: LLVM's live-variable analysis, live intervals and
// register allocation then grew with the square of the layers (issue #48).
// This pass moves each such copy into a private `noinline` function, one
// per pair of buffer types, so that the entry calls it and stays a line
// of calls; the loops are compiled once.
//
//===----------------------------------------------------------------------===//

#include "txl/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir {
namespace txl {
#define GEN_PASS_DEF_OUTLINESTRIDEDCOPIESPASS
#include "txl/Conversion/Passes.h.inc"
} // namespace txl
} // namespace mlir

using namespace mlir;
using namespace mlir::txl;

namespace {

/// Whether `fn` is what this pass creates: one copy of its first argument
/// into its second (so that running the pass again changes nothing).
bool isOutlinedCopy(func::FuncOp fn) {
  Block &body = fn.front();
  auto copy = dyn_cast<memref::CopyOp>(body.front());
  return fn.getNumArguments() == 2 && body.getOperations().size() == 2 &&
         copy && copy.getSource() == body.getArgument(0) &&
         copy.getTarget() == body.getArgument(1);
}

/// Whether `type` is one static run of memory: `--finalize-memref-to-llvm`
/// lowers a copy between two such buffers to one `llvm.memcpy`.
bool isStaticContiguous(MemRefType type) {
  return type.getLayout().isIdentity() ||
         (type.hasStaticShape() &&
          memref::isStaticShapeAndContiguousRowMajor(type));
}

struct OutlineStridedCopiesPass
    : public txl::impl::OutlineStridedCopiesPassBase<OutlineStridedCopiesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    OpBuilder b(module.getContext());
    DenseMap<FunctionType, func::FuncOp> outlined;
    SmallVector<memref::CopyOp> copies;
    for (auto fn : module.getOps<func::FuncOp>()) {
      if (fn.isDeclaration() || isOutlinedCopy(fn))
        continue;
      fn.walk([&](memref::CopyOp copy) {
        auto src = cast<MemRefType>(copy.getSource().getType());
        auto dst = cast<MemRefType>(copy.getTarget().getType());
        // A copy onto itself stays for txl-expand-strided-copies to erase.
        if ((!isStaticContiguous(src) || !isStaticContiguous(dst)) &&
            !isSameView(copy.getSource(), copy.getTarget()))
          copies.push_back(copy);
      });
    }
    for (memref::CopyOp copy : copies) {
      Location loc = copy.getLoc();
      auto type = b.getFunctionType(
          {copy.getSource().getType(), copy.getTarget().getType()}, {});
      func::FuncOp &callee = outlined[type];
      if (!callee) {
        b.setInsertionPointToEnd(module.getBody());
        callee = func::FuncOp::create(b, loc, "txl_strided_copy", type);
        callee.setPrivate();
        callee->setAttr("passthrough",
                        b.getArrayAttr({b.getStringAttr("noinline")}));
        symbols.insert(callee); // Renamed to a unique name if taken.
        Block *body = callee.addEntryBlock();
        b.setInsertionPointToStart(body);
        memref::CopyOp::create(b, loc, body->getArgument(0),
                               body->getArgument(1));
        func::ReturnOp::create(b, loc);
      }
      b.setInsertionPoint(copy);
      func::CallOp::create(b, loc, callee,
                           ValueRange{copy.getSource(), copy.getTarget()});
      copy.erase();
    }
  }
};

} // namespace

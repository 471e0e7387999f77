//===- Adjoints.h - AdjointOpInterface models ---------------------*- C++ -*-===//
//
// The adjoints of the txl forward ops and of the tensor reshaping ops the
// frontend emits, attached as external models so that the dialect itself
// does not depend on the autodiff library.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_AUTODIFF_ADJOINTS_H
#define TXL_AUTODIFF_ADJOINTS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectRegistry.h"

namespace mlir {
namespace txl {

/// Attaches AdjointOpInterface to every differentiable txl op and to
/// tensor.extract_slice, tensor.expand_shape and tensor.collapse_shape.
void registerAdjointInterfaceExternalModels(DialectRegistry &registry);

/// A tensor of `like`'s type (dynamic sizes read from `like`) filled with
/// `value` (`linalg.fill` of a `tensor.empty`).
Value createFilledLike(OpBuilder &b, Location loc, Value like, Value value);

/// `createFilledLike` with the constant 0.
Value createZerosLike(OpBuilder &b, Location loc, Value like);

} // namespace txl
} // namespace mlir

#endif // TXL_AUTODIFF_ADJOINTS_H

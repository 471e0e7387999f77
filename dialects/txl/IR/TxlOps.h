//===- TxlOps.h - txl dialect operations -------------------------*- C++ -*-===//
#ifndef TXL_IR_TXLOPS_H
#define TXL_IR_TXLOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "txl/IR/TxlDialect.h"

namespace mlir {
namespace txl {

/// Fails with an op error when two float tensor operands or results of `op`
/// have different element types (an f32 and an f64 tensor). Integer tensors
/// (token ids) and scalars are not compared.
LogicalResult verifySameFloatElementType(Operation *op);

/// Every txl op computes in one float type: f32 for the model, f64 for
/// finite-difference gradient checks.
template <typename ConcreteType>
class SameFloatElementType
    : public OpTrait::TraitBase<ConcreteType, SameFloatElementType> {
public:
  static LogicalResult verifyTrait(Operation *op) {
    return verifySameFloatElementType(op);
  }
};

} // namespace txl
} // namespace mlir

#include "txl/IR/TxlInterfaces.h.inc"

#define GET_OP_CLASSES
#include "txl/IR/TxlOps.h.inc"

#endif // TXL_IR_TXLOPS_H

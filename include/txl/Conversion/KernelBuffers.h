//===- KernelBuffers.h - Tensors as kernel arguments -------------*- C++
//-*-===//
//
// The tensor-to-memref boundary of the ops that become calls or launches of
// generated kernels (txl-rel-attention-to-cpu, txl-rel-attention-to-gpu and
// the other GPU kernel passes).
//
//===----------------------------------------------------------------------===//

#ifndef TXL_CONVERSION_KERNELBUFFERS_H
#define TXL_CONVERSION_KERNELBUFFERS_H

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::txl {

/// The kernel argument of type `view` (a memref with `tensor`'s element
/// type and rank, dynamic or not, and a strided layout) for `tensor`: a
/// read-only bufferization.to_buffer in `view`'s layout (bufferization
/// copies when the tensor's buffer has another), cast to `view`.
inline Value toKernelBuffer(ImplicitLocOpBuilder &b, Value tensor,
                            MemRefType view) {
  auto type = cast<RankedTensorType>(tensor.getType());
  Value buffer = bufferization::ToBufferOp::create(
      b,
      MemRefType::get(type.getShape(), type.getElementType(), view.getLayout()),
      tensor, /*read_only=*/b.getUnitAttr());
  return memref::CastOp::create(b, view, buffer);
}

} // namespace mlir::txl

#endif // TXL_CONVERSION_KERNELBUFFERS_H

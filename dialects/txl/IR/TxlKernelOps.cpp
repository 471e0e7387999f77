//===- TxlKernelOps.cpp - Verifiers of the GPU kernels' ops ------*- C++
//-*-===//
//
// TxlKernelOps.td: the shapes and the memory space the ops' lowerings
// (lib/Conversion/KernelsToNvvm/MmaToNvvm.cpp,
// lib/Conversion/KernelsToSpirv/EmulateMma.cpp) rely on.
//
//===----------------------------------------------------------------------===//

#include "txl/IR/TxlOps.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace mlir::txl;

LogicalResult WarpgroupMmaOp::verify() {
  VectorType a = getA().getType(), acc = getAcc().getType();
  MemRefType tile = getB().getType();
  int64_t kSteps = a.getDimSize(0), nBlocks = acc.getDimSize(0);
  if (a.getShape().drop_front() != ArrayRef<int64_t>{4, 2} || kSteps < 1)
    return emitOpError("a must be vector<k_steps x 4 x 2 x T> (the m16n8k16 "
                       "A fragment of each 16-deep step), got ")
           << a;
  if (acc.getShape().drop_front() != ArrayRef<int64_t>{2, 2} || nBlocks < 1 ||
      nBlocks > 32)
    return emitOpError("acc must be vector<n_blocks x 2 x 2 x f32> with 1 <= "
                       "n_blocks <= 32 (wgmma's N = 8 n_blocks <= 256), got ")
           << acc;
  if (tile.getElementType() != a.getElementType())
    return emitOpError("b's element type must be a's, got ")
           << tile.getElementType() << " and " << a.getElementType();
  if (tile.getRank() != 4 || tile.getDimSize(0) < nBlocks ||
      tile.getDimSize(1) < 2 * kSteps || tile.getDimSize(1) % 2 != 0 ||
      tile.getShape().drop_front(2) != ArrayRef<int64_t>{8, 8})
    return emitOpError("b must be at least n_blocks (")
           << nBlocks << ") x k_blocks x 8 x 8 with k_blocks even and at "
           << "least 2 k_steps (" << 2 * kSteps
           << ") (core matrices of 8 x 8), got " << tile;
  if (!tile.getLayout().isIdentity())
    return emitOpError("b must have the identity layout (its matrix "
                       "descriptors assume packed core matrices)");
  auto space = dyn_cast_or_null<IntegerAttr>(tile.getMemorySpace());
  if (!space || space.getInt() != 3)
    return emitOpError("b must be in workgroup memory (address space 3)");
  if (getAsync() && (!getResult().hasOneUse() ||
                     !isa<WarpgroupMmaWaitOp>(*getResult().user_begin())))
    return emitOpError("async: its result must have one use, a "
                       "txl.warpgroup_mma_wait (the product is in flight "
                       "until then)");
  return success();
}

LogicalResult WarpgroupMmaWaitOp::verify() {
  auto product = getProduct().getDefiningOp<WarpgroupMmaOp>();
  if (!product || !product.getAsync())
    return emitOpError("must wait for the result of an async "
                       "txl.warpgroup_mma");
  if (product->getBlock() != (*this)->getBlock())
    return emitOpError("must be in the block of the product it waits for");
  // The async products issued after this one, before the wait: those the
  // wait may leave in flight.
  int64_t later = 0;
  for (Operation *op = product->getNextNode(); op != getOperation();
       op = op->getNextNode()) {
    auto mma = dyn_cast<WarpgroupMmaOp>(op);
    later += mma && mma.getAsync();
  }
  if (later < static_cast<int64_t>(getPending()))
    return emitOpError("leaves ")
           << getPending() << " products in flight, but only " << later
           << " were issued after the one it waits for (products complete "
              "in order)";
  return success();
}

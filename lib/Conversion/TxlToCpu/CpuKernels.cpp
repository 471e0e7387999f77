//===- CpuKernels.cpp - Generated CPU kernels in two widths ---------------===//
//
// txl/Conversion/CpuKernels.h.
//
//===----------------------------------------------------------------------===//

#include "txl/Conversion/CpuKernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::txl;

MemRefType mlir::txl::cpuKernelOperandType(MLIRContext *ctx, int64_t rank,
                                           Type et, bool unitInner) {
  SmallVector<int64_t> shape(rank, ShapedType::kDynamic);
  SmallVector<int64_t> strides = shape;
  if (unitInner)
    strides.back() = 1;
  return MemRefType::get(
      shape, et, StridedLayoutAttr::get(ctx, ShapedType::kDynamic, strides));
}

Value mlir::txl::cpuHasX86_64V4(ImplicitLocOpBuilder &b, ModuleOp module) {
  auto i8 = b.getI8Type();
  if (!module.lookupSymbol<LLVM::GlobalOp>(kCpuX86_64V4Flag)) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    LLVM::GlobalOp::create(b, i8, /*isConstant=*/false, LLVM::Linkage::External,
                           kCpuX86_64V4Flag,
                           /*value=*/Attribute());
  }
  Value address = LLVM::AddressOfOp::create(
      b, LLVM::LLVMPointerType::get(b.getContext()), kCpuX86_64V4Flag);
  Value flag = LLVM::LoadOp::create(b, i8, address);
  return arith::CmpIOp::create(b, arith::CmpIPredicate::ne, flag,
                               arith::ConstantIntOp::create(b, 0, 8));
}

void mlir::txl::setX86_64V4(func::FuncOp kernel) {
  kernel->setAttr("target_cpu",
                  StringAttr::get(kernel.getContext(), "x86-64-v4"));
}

CpuKernels mlir::txl::getOrCreateCpuKernels(
    int64_t lanes, llvm::function_ref<func::FuncOp(int64_t)> create) {
  if (lanes)
    return {create(lanes), nullptr};
  func::FuncOp wide = create(16);
  setX86_64V4(wide);
  return {create(8), wide};
}

void mlir::txl::callCpuKernels(ImplicitLocOpBuilder &b, ModuleOp module,
                               const CpuKernels &kernels,
                               ArrayRef<Value> args) {
  if (!kernels.wide) {
    func::CallOp::create(b, kernels.narrow, args);
    return;
  }
  auto ifWide = scf::IfOp::create(b, cpuHasX86_64V4(b, module),
                                  /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifWide.thenBlock());
  func::CallOp::create(b, kernels.wide, args);
  b.setInsertionPointToStart(ifWide.elseBlock());
  func::CallOp::create(b, kernels.narrow, args);
}

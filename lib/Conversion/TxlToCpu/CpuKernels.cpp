//===- CpuKernels.cpp - Generated CPU kernels in two widths ---------------===//
//
// txl/Conversion/CpuKernels.h.
//
//===----------------------------------------------------------------------===//

#include "txl/Conversion/CpuKernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
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

Value mlir::txl::expF32UpTo88(ImplicitLocOpBuilder &b, Value x) {
  auto vt = cast<VectorType>(x.getType());
  auto splat = [&](double v) -> Value {
    return arith::ConstantOp::create(
        b, DenseElementsAttr::get(vt, b.getF32FloatAttr(float(v))));
  };
  Value low = splat(-87.0);
  x = arith::SelectOp::create(
      b, arith::CmpFOp::create(b, arith::CmpFPredicate::OLT, x, low), low, x);
  Value n = math::RoundEvenOp::create(
      b, arith::MulFOp::create(b, x, splat(1.4426950408889634)));
  // ln 2 = 0.693145751953125 + 1.428606765330187e-06 (the first part has
  // 12 significant bits, so n · part is exact for |n| < 2^12).
  Value f = math::FmaOp::create(b, n, splat(-0.693145751953125), x);
  f = math::FmaOp::create(b, n, splat(-1.428606765330187e-06), f);
  Value p = splat(1.0 / 720.0);
  for (double c : {1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0})
    p = math::FmaOp::create(b, p, f, splat(c));
  auto vi = VectorType::get(vt.getShape(), b.getI32Type());
  Value scale = arith::ShLIOp::create(
      b, arith::FPToSIOp::create(b, vi, n),
      arith::ConstantOp::create(
          b, DenseElementsAttr::get(vi, b.getI32IntegerAttr(23))));
  Value bits =
      arith::AddIOp::create(b, arith::BitcastOp::create(b, vi, p), scale);
  return arith::BitcastOp::create(b, vt, bits);
}

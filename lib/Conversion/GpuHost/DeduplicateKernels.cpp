//===- DeduplicateKernels.cpp - One kernel per distinct body -------------===//
//
// The generic kernels are outlined per host loop nest, so each layer of a
// model gets the same kernels again under new names. In each gpu.module,
// kernels that are the same but for their names become the first of them:
// every symbol reference to the others names it, and the others are
// erased. Kernels are grouped by a structural hash and compared with
// OperationEquivalence.
//
//===----------------------------------------------------------------------===//

#include "txl/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/AttrTypeSubElements.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OperationSupport.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir::txl {
#define GEN_PASS_DEF_DEDUPLICATEKERNELSPASS
#include "txl/Conversion/Passes.h.inc"
} // namespace mlir::txl

using namespace mlir;

namespace {

/// `kernel`'s attributes but its symbol name, in the dictionary's order.
SmallVector<NamedAttribute> attributesButName(gpu::GPUFuncOp kernel) {
  SmallVector<NamedAttribute> attrs;
  StringRef name = SymbolTable::getSymbolAttrName();
  for (NamedAttribute attr : kernel->getAttrDictionary())
    if (attr.getName() != name)
      attrs.push_back(attr);
  return attrs;
}

/// A hash of everything but `kernel`'s name and its values' identities:
/// equal kernels (sameKernel) have equal hashes.
llvm::hash_code kernelHash(gpu::GPUFuncOp kernel) {
  llvm::hash_code hash = llvm::hash_value(kernel.getBody().getBlocks().size());
  for (NamedAttribute attr : attributesButName(kernel))
    hash = llvm::hash_combine(hash, attr.getName(), attr.getValue());
  kernel.getBody().walk([&](Operation *op) {
    hash =
        llvm::hash_combine(hash, OperationEquivalence::computeHash(
                                     op, OperationEquivalence::ignoreHashValue,
                                     OperationEquivalence::ignoreHashValue,
                                     OperationEquivalence::IgnoreLocations));
  });
  return hash;
}

/// Whether `a` and `b` are the same kernel but for their names.
bool sameKernel(gpu::GPUFuncOp a, gpu::GPUFuncOp b) {
  return attributesButName(a) == attributesButName(b) &&
         OperationEquivalence::isRegionEquivalentTo(
             &a.getBody(), &b.getBody(), OperationEquivalence::IgnoreLocations);
}

struct DeduplicateKernelsPass
    : public txl::impl::DeduplicateKernelsPassBase<DeduplicateKernelsPass> {
  void runOnOperation() override {
    // (gpu.module, erased kernel) -> the kept kernel's name.
    DenseMap<std::pair<StringAttr, StringAttr>, StringAttr> keptFor;
    SmallVector<Operation *> erased;
    for (auto module : getOperation().getOps<gpu::GPUModuleOp>()) {
      DenseMap<llvm::hash_code, SmallVector<gpu::GPUFuncOp, 1>> kept;
      for (auto kernel : module.getOps<gpu::GPUFuncOp>()) {
        if (!kernel.isKernel())
          continue;
        SmallVector<gpu::GPUFuncOp, 1> &bucket = kept[kernelHash(kernel)];
        auto same = llvm::find_if(
            bucket, [&](gpu::GPUFuncOp k) { return sameKernel(k, kernel); });
        if (same == bucket.end()) {
          bucket.push_back(kernel);
          continue;
        }
        keptFor[{module.getSymNameAttr(), kernel.getNameAttr()}] =
            same->getNameAttr();
        erased.push_back(kernel);
      }
    }
    if (erased.empty())
      return;
    // Every reference @module::@erased (a launch's kernel, or any other
    // attribute) becomes @module::@kept, in one walk of the module.
    AttrTypeReplacer replacer;
    replacer.addReplacement([&](SymbolRefAttr ref) -> std::optional<Attribute> {
      if (ref.getNestedReferences().size() != 1)
        return std::nullopt;
      auto found =
          keptFor.find({ref.getRootReference(), ref.getLeafReference()});
      if (found == keptFor.end())
        return std::nullopt;
      return SymbolRefAttr::get(ref.getRootReference(),
                                {FlatSymbolRefAttr::get(found->second)});
    });
    replacer.recursivelyReplaceElementsIn(getOperation(), /*replaceAttrs=*/true,
                                          /*replaceLocs=*/false,
                                          /*replaceTypes=*/false);
    for (Operation *kernel : erased)
      kernel->erase();
  }
};

} // namespace

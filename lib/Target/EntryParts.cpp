//===- EntryParts.cpp - Long entries cut into functions ---------*- C++ -*-===//

#include "txl/Target/EntryParts.h"

#include "llvm/ADT/PostOrderIterator.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/IR/CFG.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Module.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"
#include "llvm/Transforms/Utils/CodeExtractor.h"

#include <map>
#include <optional>

using namespace llvm;

/// Whether cutIntoParts may move `fn`'s code into other functions: every
/// alloca static (constant size, in the entry block), no exception
/// handling, no `musttail` call, no token-typed value (a token cannot be
/// stored), no stack save or restore.
static bool isCuttable(Function &fn) {
  if (fn.isVarArg())
    return false;
  for (BasicBlock &block : fn) {
    for (Instruction &inst : block) {
      if (auto *alloca = dyn_cast<AllocaInst>(&inst)) {
        if (!alloca->isStaticAlloca())
          return false;
        continue;
      }
      if (inst.isEHPad() || isa<InvokeInst, CallBrInst, ResumeInst>(inst) ||
          inst.getType()->isTokenTy())
        return false;
      if (auto *call = dyn_cast<CallInst>(&inst);
          call && call->isMustTailCall())
        return false;
      if (auto *intrinsic = dyn_cast<IntrinsicInst>(&inst))
        switch (intrinsic->getIntrinsicID()) {
        case Intrinsic::stacksave:
        case Intrinsic::stackrestore:
        case Intrinsic::vastart:
        case Intrinsic::localescape:
          return false;
        default:
          break;
        }
    }
  }
  return true;
}

/// The blocks of the region from the start of `start` to `cut` (an
/// instruction of `cutBlock`, which is outside every loop), `start` first,
/// when that region has one entry (`start`; every other block's
/// predecessors are in the region) and one exit (the cut: no block but
/// `cutBlock` leaves it, and none returns); at most `limit` blocks.
static std::optional<SmallVector<BasicBlock *>>
regionBefore(BasicBlock *start, BasicBlock *cutBlock, size_t limit) {
  SmallVector<BasicBlock *> blocks = {start};
  SmallPtrSet<BasicBlock *, 32> inRegion = {start};
  for (size_t i = 0; i < blocks.size(); ++i) {
    BasicBlock *block = blocks[i];
    if (block == cutBlock)
      continue;
    if (isa<ReturnInst>(block->getTerminator()))
      return std::nullopt;
    for (BasicBlock *successor : successors(block)) {
      if (!inRegion.insert(successor).second)
        continue;
      if (blocks.size() >= limit)
        return std::nullopt;
      blocks.push_back(successor);
    }
  }
  if (!inRegion.contains(cutBlock))
    return std::nullopt;
  for (BasicBlock *block : blocks)
    if (block != start)
      for (BasicBlock *predecessor : predecessors(block))
        if (!inRegion.contains(predecessor))
          return std::nullopt;
  return blocks;
}

namespace {
/// A value defined in one region and used in later ones: its slot in the
/// tape and the regions that load it.
struct Crossing {
  Instruction *def;
  uint64_t offset;
  Align align;
  SmallVector<unsigned> users;
};
} // namespace

unsigned mlir::txl::cutIntoParts(Function &fn, unsigned partSize) {
  if (partSize == 0 || fn.isDeclaration() ||
      fn.getInstructionCount() < 2 * size_t(partSize) || !isCuttable(fn))
    return 0;

  // The allocas stay in the entry block (the parts receive their
  // addresses); the regions start after them.
  BasicBlock *entry = &fn.getEntryBlock();
  SmallVector<AllocaInst *> allocas;
  for (Instruction &inst : *entry)
    if (auto *alloca = dyn_cast<AllocaInst>(&inst))
      allocas.push_back(alloca);
  auto firstOther = llvm::find_if(
      *entry, [](Instruction &inst) { return !isa<AllocaInst>(inst); });
  for (AllocaInst *alloca : allocas)
    alloca->moveBefore(firstOther);
  BasicBlock *start = entry->splitBasicBlock(firstOther, "part.start");

  // A call's aggregate result (a layer's descriptors) is taken apart where
  // it is made: the fields cross into later regions, never the aggregate
  // (a store of it is one store per field, most of them unused).
  for (BasicBlock &block : fn) {
    for (Instruction &inst : block) {
      if (!inst.getType()->isAggregateType())
        continue;
      Instruction *after = &inst;
      if (isa<PHINode>(inst))
        after = &*std::prev(block.getFirstInsertionPt());
      for (User *user : llvm::make_early_inc_range(inst.users()))
        if (auto *extract = dyn_cast<ExtractValueInst>(user);
            extract && extract->getAggregateOperand() == &inst) {
          extract->moveAfter(after);
          after = extract;
        }
    }
  }

  // Walk the blocks in reverse post-order, cutting where a region has
  // reached partSize instructions and the cut leaves it single-entry,
  // single-exit; after a failed try, the next try is at the next block.
  DominatorTree dominators(fn);
  LoopInfo loops(dominators);
  ReversePostOrderTraversal<Function *> rpo(&fn);
  SmallVector<BasicBlock *> order(rpo.begin(), rpo.end());
  SmallVector<SmallVector<BasicBlock *>> regions;
  BasicBlock *regionStart = start;
  size_t count = 0;
  for (BasicBlock *block : order) {
    if (block == entry)
      continue;
    bool inLoop = loops.getLoopFor(block) != nullptr;
    for (Instruction *inst = &block->front(); inst;
         inst = inst->getNextNode()) {
      if (++count < partSize || inLoop || isa<PHINode>(inst))
        continue;
      BasicBlock *cutBlock = inst->getParent();
      std::optional<SmallVector<BasicBlock *>> region =
          regionBefore(regionStart, cutBlock, std::max<size_t>(partSize, 64));
      if (!region)
        break;
      if (&cutBlock->front() == inst && cutBlock != regionStart) {
        // The region ends at the block's start: the block is the next one.
        region->erase(llvm::find(*region, cutBlock));
        regions.push_back(std::move(*region));
        regionStart = cutBlock;
      } else {
        regions.push_back(std::move(*region));
        regionStart = cutBlock->splitBasicBlock(inst, "part");
      }
      count = 1;
    }
  }
  if (regions.empty()) {
    MergeBlockIntoPredecessor(start);
    return 0;
  }

  // The region of each block; the last region (regionStart onwards) stays.
  unsigned last = regions.size();
  DenseMap<BasicBlock *, unsigned> regionOf;
  for (auto [index, blocks] : llvm::enumerate(regions))
    for (BasicBlock *block : blocks)
      regionOf[block] = index;
  auto regionOfBlock = [&](BasicBlock *block) {
    auto it = regionOf.find(block);
    return it == regionOf.end() ? last : it->second;
  };
  SmallVector<BasicBlock *> regionStarts;
  for (auto &blocks : regions)
    regionStarts.push_back(blocks.front());
  regionStarts.push_back(regionStart);

  // Tape slots, by interval: a slot whose value's last reader is region r
  // is free for values defined in r (its loads run at r's start).
  const llvm::DataLayout &layout = fn.getParent()->getDataLayout();
  std::map<std::pair<uint64_t, uint64_t>, SmallVector<uint64_t>> freeSlots;
  SmallVector<SmallVector<std::pair<std::pair<uint64_t, uint64_t>, uint64_t>>>
      freedAt(last + 1);
  uint64_t tapeSize = 0;
  Align tapeAlign(16);
  SmallVector<Crossing> crossings;
  for (unsigned index = 0; index < last; ++index) {
    for (auto &[key, offset] : freedAt[index])
      freeSlots[key].push_back(offset);
    for (BasicBlock *block : regions[index]) {
      for (Instruction &inst : *block) {
        if (inst.getType()->isVoidTy())
          continue;
        SmallVector<unsigned> users;
        for (User *user : inst.users()) {
          unsigned region = regionOfBlock(cast<Instruction>(user)->getParent());
          if (region != index && !llvm::is_contained(users, region))
            users.push_back(region);
        }
        if (users.empty())
          continue;
        uint64_t size = layout.getTypeAllocSize(inst.getType());
        Align align = layout.getABITypeAlign(inst.getType());
        tapeAlign = std::max(tapeAlign, align);
        std::pair<uint64_t, uint64_t> key = {size, align.value()};
        uint64_t offset;
        SmallVector<uint64_t> &free = freeSlots[key];
        if (!free.empty()) {
          offset = free.pop_back_val();
        } else {
          offset = alignTo(tapeSize, align);
          tapeSize = offset + size;
        }
        freedAt[*llvm::max_element(users)].push_back({key, offset});
        crossings.push_back({&inst, offset, align, std::move(users)});
      }
    }
  }

  // Each crossing value is stored after its definition and loaded at the
  // start of each region that uses it.
  IRBuilder<> builder(fn.getContext());
  builder.SetInsertPoint(entry, entry->begin());
  llvm::Value *tape = builder.CreateAlloca(
      ArrayType::get(builder.getInt8Ty(), std::max<uint64_t>(tapeSize, 1)),
      nullptr, fn.getName() + ".tape");
  cast<AllocaInst>(tape)->setAlignment(tapeAlign);
  for (Crossing &crossing : crossings) {
    Instruction *def = crossing.def;
    if (isa<PHINode>(def))
      builder.SetInsertPoint(def->getParent(),
                             def->getParent()->getFirstInsertionPt());
    else
      builder.SetInsertPoint(def->getNextNode());
    builder.CreateAlignedStore(def,
                               builder.CreateConstInBoundsGEP1_64(
                                   builder.getInt8Ty(), tape, crossing.offset),
                               crossing.align);
    for (unsigned region : crossing.users) {
      BasicBlock *at = regionStarts[region];
      builder.SetInsertPoint(at, at->getFirstInsertionPt());
      llvm::Value *reload = builder.CreateAlignedLoad(
          def->getType(),
          builder.CreateConstInBoundsGEP1_64(builder.getInt8Ty(), tape,
                                             crossing.offset),
          crossing.align, def->getName() + ".reload");
      def->replaceUsesWithIf(reload, [&](Use &use) {
        return regionOfBlock(cast<Instruction>(use.getUser())->getParent()) ==
               region;
      });
    }
  }

  // Each region but the last becomes a function of the function's
  // arguments and the entry block's allocas.
  CodeExtractorAnalysisCache cache(fn);
  unsigned parts = 0;
  for (auto [index, blocks] : llvm::enumerate(regions)) {
    CodeExtractor extractor(blocks, /*DT=*/nullptr, /*AggregateArgs=*/false,
                            /*BFI=*/nullptr, /*BPI=*/nullptr, /*AC=*/nullptr,
                            /*AllowVarArgs=*/false, /*AllowAlloca=*/false,
                            /*AllocationBlock=*/nullptr,
                            ("part" + Twine(index)).str());
    if (!extractor.isEligible())
      continue;
    Function *part = extractor.extractCodeRegion(cache);
    if (!part)
      continue;
    part->addFnAttr(llvm::Attribute::NoInline);
    ++parts;
  }
  return parts;
}

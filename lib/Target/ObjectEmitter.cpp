//===- ObjectEmitter.cpp - LLVM dialect -> LLVM IR -> object file -*- C++ -*-===//

#include "txl/Target/ObjectEmitter.h"

#include "txl/Target/EntryParts.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/PassInstrumentation.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/Transforms/IPO/AlwaysInliner.h"
#include "llvm/Transforms/Utils/Cloning.h"

#include <mutex>

#ifdef __GLIBC__
#include <malloc.h>
#endif

using namespace mlir;
using namespace mlir::txl;

/// Registers the host target once per process (the parts' threads create
/// target machines too).
static void initializeNativeTarget() {
  static std::once_flag initialized;
  std::call_once(initialized, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

/// The registered target of the host triple `triple`.
static llvm::Expected<const llvm::Target *>
lookupHostTarget(const llvm::Triple &triple) {
  initializeNativeTarget();
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return llvm::createStringError(error);
  return target;
}

llvm::Error mlir::txl::checkCpuName(llvm::StringRef cpu) {
  if (cpu == "native")
    return llvm::Error::success();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  llvm::Expected<const llvm::Target *> target = lookupHostTarget(triple);
  if (!target)
    return target.takeError();
  std::unique_ptr<llvm::MCSubtargetInfo> info(
      (*target)->createMCSubtargetInfo(triple, "", ""));
  if (info && info->isCPUStringValid(cpu))
    return llvm::Error::success();
  return llvm::createStringError(
      "--mcpu: '" + cpu + "' is not a CPU of " + triple.getArchName() +
      " (for example x86-64, x86-64-v2, x86-64-v3, x86-64-v4, skylake-avx512, "
      "znver4, or native; `llc -mcpu=help` lists them all)");
}

bool mlir::txl::cpuHasAvx512(llvm::StringRef cpu) {
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  llvm::Expected<const llvm::Target *> target = lookupHostTarget(triple);
  if (!target) {
    llvm::consumeError(target.takeError());
    return false;
  }
  std::string name =
      cpu == "native" ? llvm::sys::getHostCPUName().str() : cpu.str();
  std::unique_ptr<llvm::MCSubtargetInfo> info(
      (*target)->createMCSubtargetInfo(triple, name, ""));
  return info && info->checkFeatures("+avx512f,+avx512bw,+avx512dq,+avx512vl");
}

static llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
createTargetMachine(const CodegenOptions &options) {
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  llvm::Expected<const llvm::Target *> target = lookupHostTarget(triple);
  if (!target)
    return target.takeError();
  std::string cpu = options.cpu == "native"
                        ? llvm::sys::getHostCPUName().str()
                        : options.cpu;
  llvm::TargetOptions targetOptions;
  auto level = static_cast<llvm::CodeGenOptLevel>(std::min(options.optLevel, 3u));
  std::unique_ptr<llvm::TargetMachine> tm((*target)->createTargetMachine(
      triple, cpu, "", targetOptions, llvm::Reloc::PIC_, std::nullopt, level));
  if (!tm)
    return llvm::createStringError("cannot create a target machine for CPU '" +
                                   cpu + "'");
  return tm;
}

/// Runs the module pipeline `build` makes, with every analysis registered,
/// on `llvmModule` for the target of `tm`, skipping the optional passes
/// `skip` names (PassInstrumentation's should-run callback: the pipeline is
/// otherwise LLVM's own).
static void runModulePipeline(
    llvm::Module &llvmModule, llvm::TargetMachine &tm,
    llvm::PipelineTuningOptions tuning,
    llvm::function_ref<llvm::ModulePassManager(llvm::PassBuilder &)> build,
    llvm::ArrayRef<llvm::StringRef> skip = {}) {
  llvm::PassInstrumentationCallbacks callbacks;
  if (!skip.empty())
    callbacks.registerShouldRunOptionalPassCallback(
        [skip](llvm::StringRef pass, llvm::Any) {
          return !llvm::is_contained(skip, pass);
        });
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&tm, tuning, /*PGOOpt=*/std::nullopt, &callbacks);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  build(pb).run(llvmModule, mam);
}

/// The passes of LLVM's default pipeline the host code skips:
/// CalledValuePropagation only annotates indirect calls with their possible
/// callees (!callees), and the generated code makes none (every call names
/// its function), but it solves a lattice over every pointer argument of
/// every call, which grows faster than the module: 42 of the 51 s
/// `opt -O3` spends on the whole module of a 48-layer model (d_model 64),
/// 2.5 of 5.8 s at 16 layers; `txlc --emit=obj` of the 48-layer model
/// 81 s -> 69 s without it.
static constexpr llvm::StringRef kSkippedHostPasses[] = {
    "CalledValuePropagationPass"};

static llvm::cl::opt<bool> sinkEntryLoadsOption(
    "txl-sink-entry-loads",
    llvm::cl::desc("Load each packed argument of an entry where it is first "
                   "used (default true; false for the tests' negative "
                   "control)"),
    llvm::cl::init(true), llvm::cl::Hidden);

static llvm::cl::opt<unsigned> entryPartSizeOption(
    "txl-entry-part-size",
    llvm::cl::desc("Cut each packed entry into functions of about this many "
                   "instructions (cutIntoParts; 0: never)"),
    llvm::cl::init(2000), llvm::cl::Hidden);

/// Whether `fn` is a packed entry (txl-emit-packed-entry): `void @txl_*(ptr
/// %args)`, external, args[i] pointing at argument i's descriptor or
/// scalar.
static bool isPackedEntry(llvm::Function &fn) {
  return !fn.isDeclaration() && !fn.hasLocalLinkage() && fn.arg_size() == 1 &&
         fn.getArg(0)->getType()->isPointerTy() &&
         fn.getReturnType()->isVoidTy();
}

/// Moves the loads of a packed entry's arguments (txl-emit-packed-entry:
/// `void @txl_*(ptr %args)`, args[i] pointing at argument i's descriptor or
/// scalar) and their address computations to just before their first use
/// (the nearest common dominator of the uses, outside any loop the
/// instruction was not already in). The inlined wrappers load
/// every field of every argument at the entry's start: at 200 layers
/// (d_model 64) 11,455 loads whose values lived through every layer's
/// call, and instruction selection and register allocation of
/// `@txl_segment_grad` grew with the square of the layers (llc 10.6 s,
/// 5.8 s with the loads where they are used; issue #48). Nothing writes
/// the argument array or the descriptors while the entry runs (they are the
/// caller's; the generated code writes through the data pointers they
/// hold); the entry is left as it is when an address into them is used by
/// anything but a load or an address computation. Returns the number of
/// instructions moved.
static unsigned sinkPackedArgumentLoads(llvm::Function &fn) {
  if (!isPackedEntry(fn))
    return 0;
  // Addresses into the argument array (depth 0) and into what its elements
  // point at (depth 1), and every instruction computing or loading them.
  llvm::DenseMap<llvm::Value *, unsigned> depth = {{fn.getArg(0), 0}};
  llvm::SmallVector<llvm::Value *> work = {fn.getArg(0)};
  llvm::SmallVector<llvm::Instruction *> movable;
  while (!work.empty()) {
    llvm::Value *address = work.pop_back_val();
    unsigned d = depth[address];
    for (llvm::User *user : address->users()) {
      if (auto *gep = llvm::dyn_cast<llvm::GetElementPtrInst>(user);
          gep && gep->getPointerOperand() == address) {
        if (depth.try_emplace(gep, d).second) {
          work.push_back(gep);
          movable.push_back(gep);
        }
        continue;
      }
      auto *load = llvm::dyn_cast<llvm::LoadInst>(user);
      if (!load || load->isVolatile() || load->isAtomic())
        return 0;
      movable.push_back(load);
      if (d == 0 && load->getType()->isPointerTy() &&
          depth.try_emplace(load, 1).second)
        work.push_back(load);
    }
  }
  llvm::DominatorTree dominators(fn);
  llvm::LoopInfo loops(dominators);
  // Positions in the function as it is: the instructions that stay never
  // change their order, and no position is asked of the block after a move
  // (comesBefore renumbers a block each time it changed: the square of a
  // 400-layer entry's largest block).
  SmallVector<llvm::Instruction *> byOrder;
  llvm::DenseMap<const llvm::Instruction *, unsigned> order;
  for (llvm::Instruction &inst : llvm::instructions(fn)) {
    order[&inst] = byOrder.size();
    byOrder.push_back(&inst);
  }
  llvm::DenseSet<llvm::Instruction *> isMovable(movable.begin(), movable.end());
  // The last first: an instruction's users are placed before it is.
  llvm::sort(movable, [&](llvm::Instruction *a, llvm::Instruction *b) {
    return order[a] > order[b];
  });
  // For each placed instruction, where it goes: the nearest common
  // dominator of where its value is used (where the moved instructions that
  // use it go; a phi uses it at the end of the incoming block), outside the
  // loops it was not in, and the first such use in that block (~0u: none
  // there, it goes before the terminator).
  constexpr unsigned kNone = ~0u;
  llvm::DenseMap<llvm::Instruction *, std::pair<llvm::BasicBlock *, unsigned>>
      finalUses;
  // The instruction each moved one goes just before.
  llvm::MapVector<llvm::Instruction *, SmallVector<llvm::Instruction *>> before;
  for (llvm::Instruction *inst : movable) {
    llvm::BasicBlock *target = nullptr;
    unsigned first = kNone;
    for (llvm::Use &use : inst->uses()) {
      auto *user = llvm::cast<llvm::Instruction>(use.getUser());
      llvm::BasicBlock *block;
      unsigned position;
      if (auto it = finalUses.find(user); it != finalUses.end()) {
        // A moved user: where it goes.
        std::tie(block, position) = it->second;
      } else if (isMovable.contains(user)) {
        // One that stays (it has no use): where it is.
        block = user->getParent();
        position = order[user];
      } else {
        llvm::Instruction *at = user;
        if (auto *phi = llvm::dyn_cast<llvm::PHINode>(user))
          at = phi->getIncomingBlock(use)->getTerminator();
        block = at->getParent();
        position = order[at];
      }
      if (!target) {
        target = block;
        first = position;
        continue;
      }
      llvm::BasicBlock *common =
          dominators.findNearestCommonDominator(target, block);
      first = std::min(target == common ? first : kNone,
                       block == common ? position : kNone);
      target = common;
    }
    if (!target)
      continue;
    // Never into a loop the instruction is not in: it would run on every
    // iteration (LLVM's loop passes, which would hoist it, are done).
    while (llvm::Loop *loop = loops.getLoopFor(target)) {
      if (loop->contains(inst->getParent()))
        break;
      target = dominators.getNode(loop->getHeader())->getIDom()->getBlock();
      first = kNone;
    }
    finalUses[inst] = {target, first};
    before[first == kNone ? target->getTerminator() : byOrder[first]].push_back(
        inst);
  }
  // Before each instruction, its loads and address computations in their
  // first order: each after the ones it uses.
  unsigned moved = 0;
  for (auto &[at, insts] : before) {
    llvm::sort(insts, [&](llvm::Instruction *a, llvm::Instruction *b) {
      return order[a] < order[b];
    });
    for (llvm::Instruction *inst : insts) {
      moved += inst->getNextNode() != at;
      inst->moveBefore(at->getIterator());
    }
  }
  return moved;
}

/// Runs LLVM's default per-module pipeline at `options.optLevel` (with loop
/// and SLP vectorization) on `llvmModule`, for the target of `tm`, but for
/// kSkippedHostPasses; then sinkPackedArgumentLoads on each function and
/// cutIntoParts on each packed entry (the entries of a deep model are long
/// lines of layer calls whose code generation grew faster than the layers:
/// at 400 layers of d_model 64, 17 s of llc on @txl_segment_grad alone;
/// issue #48).
static void optimizeModule(llvm::Module &llvmModule, llvm::TargetMachine &tm,
                           const CodegenOptions &options) {
  if (options.optLevel == 0)
    return;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  llvm::OptimizationLevel level = options.optLevel == 1   ? llvm::OptimizationLevel::O1
                                  : options.optLevel == 2 ? llvm::OptimizationLevel::O2
                                                          : llvm::OptimizationLevel::O3;
  runModulePipeline(
      llvmModule, tm, tuning,
      [&](llvm::PassBuilder &pb) {
        return pb.buildPerModuleDefaultPipeline(level);
      },
      kSkippedHostPasses);
  SmallVector<llvm::Function *> entries;
  for (llvm::Function &fn : llvmModule) {
    if (sinkEntryLoadsOption)
      sinkPackedArgumentLoads(fn);
    if (isPackedEntry(fn))
      entries.push_back(&fn);
  }
  for (llvm::Function *fn : entries)
    cutIntoParts(*fn, entryPartSizeOption);
}

/// Whether `fn` has a loop: the functions whose code the vector width
/// changes.
static bool hasLoop(llvm::Function &fn) {
  llvm::DominatorTree dominators(fn);
  llvm::LoopInfo loops(dominators);
  return !loops.empty();
}

void mlir::txl::addX86_64V4Variants(llvm::Module &llvmModule) {
  SmallVector<llvm::Function *> functions;
  for (llvm::Function &fn : llvmModule)
    if (!fn.isDeclaration() && fn.hasLocalLinkage() &&
        !fn.hasFnAttribute(llvm::Attribute::AlwaysInline) && hasLoop(fn))
      functions.push_back(&fn);
  if (functions.empty())
    return;
  llvm::LLVMContext &context = llvmModule.getContext();
  auto *flagType = llvm::Type::getInt8Ty(context);
  llvm::GlobalVariable *flag = llvmModule.getGlobalVariable(kX86_64V4Flag);
  if (!flag)
    flag = new llvm::GlobalVariable(llvmModule, flagType, /*isConstant=*/false,
                                    llvm::GlobalValue::ExternalLinkage,
                                    /*Initializer=*/nullptr, kX86_64V4Flag);
  for (llvm::Function *fn : functions) {
    llvm::ValueToValueMapTy map;
    llvm::Function *variant = llvm::CloneFunction(fn, map);
    variant->setName(fn->getName() + ".x86_64_v4");
    variant->addFnAttr("target-cpu", "x86-64-v4");
    variant->removeFnAttr("target-features");
    variant->removeFnAttr("tune-cpu");
    // The dispatch: a new entry block that calls the variant when the
    // runtime's flag is set and falls through to the body otherwise.
    llvm::BasicBlock *body = &fn->getEntryBlock();
    auto *dispatch =
        llvm::BasicBlock::Create(context, "x86_64_v4.dispatch", fn, body);
    auto *fast = llvm::BasicBlock::Create(context, "x86_64_v4", fn, body);
    llvm::IRBuilder<> b(dispatch);
    llvm::Value *set =
        b.CreateICmpNE(b.CreateLoad(flagType, flag, "x86_64_v4.flag"),
                       llvm::ConstantInt::get(flagType, 0));
    b.CreateCondBr(set, fast, body);
    b.SetInsertPoint(fast);
    SmallVector<llvm::Value *> args;
    for (llvm::Argument &arg : fn->args())
      args.push_back(&arg);
    llvm::CallInst *call = b.CreateCall(variant, args);
    call->setTailCall();
    if (fn->getReturnType()->isVoidTy())
      b.CreateRetVoid();
    else
      b.CreateRet(call);
    // Allocas stay in the entry block, where passes look for them.
    for (llvm::Instruction &inst : llvm::make_early_inc_range(*body))
      if (auto *alloca = llvm::dyn_cast<llvm::AllocaInst>(&inst);
          alloca && llvm::isa<llvm::Constant>(alloca->getArraySize()))
        alloca->moveBefore(dispatch->getTerminator()->getIterator());
  }
}

/// Translates `module` to LLVM IR with the target's triple and data layout.
/// The `txl.*` argument attributes (parameter names for readers of the IR)
/// are dropped first: the translation warns on each attribute it does not
/// know, and each warning printed the whole function into a diagnostic
/// nobody reads (6.5 s of enwik8_base's compile). Each function's list is
/// replaced once: a removeArgAttr per attribute uniqued a new list of every
/// argument's attributes each time, kept by the context for the rest of the
/// compilation (quadratic in the arguments: 0.3 GB of a 200-layer model's
/// peak).
///
/// With `x86_64V4Variants`, the functions with loops get an x86-64-v4
/// variant (addX86_64V4Variants).
static std::unique_ptr<llvm::Module> translate(ModuleOp module,
                                               llvm::LLVMContext &llvmContext,
                                               llvm::TargetMachine &tm,
                                               bool x86_64V4Variants) {
  module.walk([](LLVM::LLVMFuncOp fn) {
    ArrayAttr all = fn.getArgAttrsAttr();
    if (!all)
      return;
    bool dropped = false;
    SmallVector<DictionaryAttr> kept;
    for (DictionaryAttr dict : all.getAsRange<DictionaryAttr>()) {
      NamedAttrList attrs;
      for (NamedAttribute attr : dict)
        if (attr.getName().strref().starts_with("txl."))
          dropped = true;
        else
          attrs.push_back(attr);
      kept.push_back(attrs.getDictionary(fn.getContext()));
    }
    if (dropped)
      fn.setAllArgAttrs(kept);
  });
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmContext);
  if (!llvmModule) {
    module.emitError("failed to translate the LLVM dialect to LLVM IR");
    return nullptr;
  }
  llvmModule->setTargetTriple(tm.getTargetTriple());
  llvmModule->setDataLayout(tm.createDataLayout());
  if (x86_64V4Variants)
    addX86_64V4Variants(*llvmModule);
  return llvmModule;
}

std::unique_ptr<llvm::Module>
mlir::txl::translateAndOptimize(ModuleOp module, llvm::LLVMContext &llvmContext,
                                const CodegenOptions &options) {
  auto tm = createTargetMachine(options);
  if (!tm) {
    module.emitError(llvm::toString(tm.takeError()));
    return nullptr;
  }
  std::unique_ptr<llvm::Module> llvmModule =
      translate(module, llvmContext, **tm, options.x86_64V4Variants);
  if (llvmModule)
    optimizeModule(*llvmModule, **tm, options);
  return llvmModule;
}

/// Writes `llvmModule` as an object file through `tm`.
static llvm::Error emitObject(llvm::Module &llvmModule, llvm::StringRef path,
                              llvm::TargetMachine &tm) {
  std::error_code ec;
  llvm::ToolOutputFile out(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return llvm::createStringError(ec, "cannot open '" + path + "': " +
                                           ec.message());
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, out.os(), nullptr,
                             llvm::CodeGenFileType::ObjectFile))
    return llvm::createStringError("the target cannot emit object files");
  pm.run(llvmModule);
  out.keep();
  return llvm::Error::success();
}

llvm::Error mlir::txl::emitObjectFile(llvm::Module &llvmModule,
                                      llvm::StringRef path,
                                      const CodegenOptions &options) {
  auto tm = createTargetMachine(options);
  if (!tm)
    return tm.takeError();
  return emitObject(llvmModule, path, **tm);
}

/// Splits `whole` into at most `count` modules, as bitcode, of whole
/// functions balanced by instruction count (largest first, each to the
/// lightest part; llvm::SplitModule's round robin left enwik8_base's parts
/// at 2.5 : 1). Global variables go with part 0; local symbols become
/// hidden externals so that parts reach each other's by name. Bitcode,
/// because an LLVMContext is not thread-safe: each thread parses its part
/// into a context of its own (as llvm::splitCodeGen does).
static SmallVector<SmallString<0>> splitIntoParts(llvm::Module &whole,
                                                  unsigned count) {
  SmallVector<std::pair<size_t, llvm::Function *>> functions;
  for (llvm::Function &fn : whole)
    if (!fn.isDeclaration())
      functions.push_back({fn.getInstructionCount(), &fn});
  // Largest first, ties by name: the same module always splits the same way.
  llvm::sort(functions, [](const auto &a, const auto &b) {
    if (a.first != b.first)
      return a.first > b.first;
    return a.second->getName() < b.second->getName();
  });
  count = std::max<unsigned>(1, std::min<size_t>(count, functions.size()));
  SmallVector<size_t> load(count, 0);
  llvm::DenseMap<const llvm::GlobalValue *, unsigned> partOf;
  for (auto [size, fn] : functions) {
    unsigned lightest = std::min_element(load.begin(), load.end()) - load.begin();
    load[lightest] += size;
    partOf[fn] = lightest;
  }
  for (llvm::GlobalValue &gv : whole.global_values()) {
    if (!gv.hasLocalLinkage())
      continue;
    // A declaration in another part refers to it by name.
    if (!gv.hasName())
      gv.setName("txl.part.unnamed");
    gv.setLinkage(llvm::GlobalValue::ExternalLinkage);
    gv.setVisibility(llvm::GlobalValue::HiddenVisibility);
  }
  SmallVector<SmallString<0>> parts(count);
  for (unsigned i = 0; i < count; ++i) {
    llvm::ValueToValueMapTy map;
    std::unique_ptr<llvm::Module> part =
        llvm::CloneModule(whole, map, [&](const llvm::GlobalValue *gv) {
          auto it = partOf.find(gv);
          return it == partOf.end() ? i == 0 : it->second == i;
        });
    llvm::raw_svector_ostream os(parts[i]);
    llvm::WriteBitcodeToFile(*part, os);
  }
  return parts;
}

/// Gives the heap's free pages back to the system (glibc keeps what a
/// program frees for its next allocations, so a peak of one stage would
/// otherwise stay resident through the next).
static void releaseFreeMemory() {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

/// Translates `module` to LLVM IR, inlines the entries' wrappers, drops dead
/// arguments, and splits the result into at most `threads` parts, as
/// bitcode. The module's operations are erased once translated, and the
/// whole LLVM module and its context are gone on return, so that the parts'
/// code generation does not run beside them (a 200-layer model of d_model
/// 64 peaked at 1.9 GB, 0.9 GB with this and the argument attributes set
/// at once; issue #48).
static FailureOr<SmallVector<SmallString<0>>>
translateAndSplit(ModuleOp module, llvm::TargetMachine &tm,
                  const CodegenOptions &options, unsigned threads,
                  TimingScope &timing) {
  llvm::LLVMContext llvmContext;
  TimingScope translateTiming = timing.nest("translation to LLVM IR");
  std::unique_ptr<llvm::Module> whole =
      translate(module, llvmContext, tm, options.x86_64V4Variants);
  translateTiming.stop();
  if (!whole)
    return failure();
  module.getBody()->clear();
  releaseFreeMemory();

  // The entries' wrappers are always-inline (txl-emit-packed-entry):
  // inlining them first leaves only external functions that parts can
  // share by name.
  //
  // Then, while the module is whole and the private functions internal (the
  // split makes them hidden externals), dead argument elimination drops the
  // memref descriptor fields no callee reads and no caller reads back: a
  // layer function called from an entry received every field of every
  // descriptor (at 200 layers of d_model 64, @decoder_layer_grad took 284
  // arguments, 68 after), and each of those values lived from the entry's
  // first instruction to its call, across every layer's calls; register
  // allocation, live intervals and stack slot coloring grew with the
  // square of the layers (llc on @txl_segment_grad 59.6 s, 15.3 s after).
  // The bodies are simplified first (SROA, EarlyCSE, InstCombine,
  // SimplifyCFG): the translated IR packs every argument into a descriptor
  // struct, a use that would keep it alive.
  TimingScope splitTiming =
      timing.nest("inlining the entry wrappers, dead arguments, split");
  runModulePipeline(*whole, tm, {}, [](llvm::PassBuilder &pb) {
    llvm::ModulePassManager mpm;
    mpm.addPass(llvm::AlwaysInlinerPass(/*InsertLifetimeIntrinsics=*/false));
    if (llvm::Error err = pb.parsePassPipeline(
            mpm, "function(sroa,early-cse,instcombine,simplifycfg),"
                 "deadargelim"))
      llvm::report_fatal_error(std::move(err));
    return mpm;
  });
  return splitIntoParts(*whole, std::max(threads, 1u));
}

LogicalResult mlir::txl::emitObjectFilesInParallel(
    ModuleOp module, const CodegenOptions &options,
    llvm::SmallVectorImpl<std::string> &objectPaths, TimingScope &timing) {
  auto tm = createTargetMachine(options);
  if (!tm) {
    module.emitError(llvm::toString(tm.takeError()));
    return failure();
  }
  unsigned threads =
      options.threads ? options.threads
                      : llvm::hardware_concurrency().compute_thread_count();
  FailureOr<SmallVector<SmallString<0>>> parts =
      translateAndSplit(module, **tm, options, threads, timing);
  if (failed(parts))
    return failure();
  releaseFreeMemory();

  TimingScope partsTiming =
      timing.nest("optimization and code generation of the parts");
  size_t first = objectPaths.size();
  for (size_t i = 0; i < parts->size(); ++i) {
    llvm::SmallString<128> path;
    if (std::error_code ec =
            llvm::sys::fs::createTemporaryFile("txl_segment", "o", path)) {
      module.emitError("cannot create a temporary file: ") << ec.message();
      return failure();
    }
    objectPaths.push_back(std::string(path));
  }
  std::mutex errorMutex;
  std::string errors;
  {
    llvm::StdThreadPool pool(llvm::hardware_concurrency(parts->size()));
    for (size_t i = 0; i < parts->size(); ++i) {
      pool.async([&, i] {
        auto fail = [&](llvm::Error err) {
          std::lock_guard<std::mutex> lock(errorMutex);
          errors += (errors.empty() ? "" : "; ") + llvm::toString(std::move(err));
        };
        auto partTm = createTargetMachine(options);
        if (!partTm)
          return fail(partTm.takeError());
        llvm::LLVMContext partContext;
        llvm::Expected<std::unique_ptr<llvm::Module>> part =
            llvm::parseBitcodeFile(
                llvm::MemoryBufferRef((*parts)[i].str(), "txl-part"),
                partContext);
        if (!part)
          return fail(part.takeError());
        optimizeModule(**part, **partTm, options);
        if (llvm::Error err =
                emitObject(**part, objectPaths[first + i], **partTm))
          fail(std::move(err));
      });
    }
    pool.wait();
  }
  if (!errors.empty()) {
    module.emitError(errors);
    return failure();
  }
  return success();
}

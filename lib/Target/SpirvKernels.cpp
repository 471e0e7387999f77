//===- SpirvKernels.cpp - One SPIR-V module per kernel --------------------===//

#include "txl/Target/SpirvKernels.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FormatVariadic.h"

#include <spirv-tools/libspirv.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

using namespace mlir;
using namespace mlir::txl;

namespace {

// SPIR-V opcodes (the specification's numbers) the split sorts by.
enum Opcode : uint16_t {
  OpSourceContinued = 2,
  OpSource = 3,
  OpSourceExtension = 4,
  OpName = 5,
  OpMemberName = 6,
  OpString = 7,
  OpLine = 8,
  OpExtension = 10,
  OpExtInstImport = 11,
  OpMemoryModel = 14,
  OpEntryPoint = 15,
  OpExecutionMode = 16,
  OpCapability = 17,
  OpTypeForwardPointer = 39,
  OpFunction = 54,
  OpFunctionEnd = 56,
  OpDecorate = 71,
  OpMemberDecorate = 72,
  OpDecorationGroup = 73,
  OpGroupDecorate = 74,
  OpGroupMemberDecorate = 75,
  OpNoLine = 317,
  OpModuleProcessed = 330,
  OpExecutionModeId = 331,
  OpDecorateId = 332,
  OpDecorateString = 5632,
  OpMemberDecorateString = 5633,
};

/// One instruction: its words, and which of them are ids.
struct Inst {
  uint16_t opcode = 0;
  uint32_t result = 0;
  std::vector<uint32_t> words;
  /// Word offsets of every id operand, the result id included.
  llvm::SmallVector<uint16_t, 4> ids;
  /// The entry point's name (OpEntryPoint only).
  std::string name;
};

struct Parsed {
  uint32_t version = 0, generator = 0;
  std::vector<Inst> insts;
};

bool isIdOperand(spv_operand_type_t type) {
  return type == SPV_OPERAND_TYPE_ID || type == SPV_OPERAND_TYPE_TYPE_ID ||
         type == SPV_OPERAND_TYPE_RESULT_ID ||
         type == SPV_OPERAND_TYPE_MEMORY_SEMANTICS_ID ||
         type == SPV_OPERAND_TYPE_SCOPE_ID;
}

spv_result_t onHeader(void *user, spv_endianness_t, uint32_t, uint32_t version,
                      uint32_t generator, uint32_t, uint32_t) {
  auto *parsed = static_cast<Parsed *>(user);
  parsed->version = version;
  parsed->generator = generator;
  return SPV_SUCCESS;
}

spv_result_t onInstruction(void *user, const spv_parsed_instruction_t *in) {
  auto *parsed = static_cast<Parsed *>(user);
  Inst inst;
  inst.opcode = in->opcode;
  inst.result = in->result_id;
  inst.words.assign(in->words, in->words + in->num_words);
  for (uint16_t i = 0; i < in->num_operands; ++i) {
    const spv_parsed_operand_t &operand = in->operands[i];
    if (isIdOperand(operand.type))
      inst.ids.push_back(operand.offset);
    else if (in->opcode == OpEntryPoint &&
             operand.type == SPV_OPERAND_TYPE_LITERAL_STRING)
      inst.name = std::string(
          reinterpret_cast<const char *>(in->words + operand.offset));
  }
  parsed->insts.push_back(std::move(inst));
  return SPV_SUCCESS;
}

/// The module's instructions by section.
struct Sections {
  std::vector<const Inst *> preamble;   // capabilities ... memory model
  std::vector<const Inst *> entryPoints;
  std::vector<const Inst *> modes;      // OpExecutionMode(Id)
  std::vector<const Inst *> sources;    // OpSource* and OpModuleProcessed
  std::vector<const Inst *> names;      // OpName, OpMemberName
  std::vector<const Inst *> decorations;
  /// Types, constants, global variables and OpString, by result id.
  llvm::DenseMap<uint32_t, const Inst *> globals;
  /// Each function's instructions, OpFunction to OpFunctionEnd, by id.
  llvm::DenseMap<uint32_t, std::vector<const Inst *>> functions;
};

llvm::Expected<Sections> sort(const Parsed &parsed) {
  Sections s;
  std::vector<const Inst *> *function = nullptr;
  for (const Inst &inst : parsed.insts) {
    if (function) {
      function->push_back(&inst);
      if (inst.opcode == OpFunctionEnd)
        function = nullptr;
      continue;
    }
    switch (inst.opcode) {
    case OpCapability:
    case OpExtension:
    case OpExtInstImport:
    case OpMemoryModel:
      s.preamble.push_back(&inst);
      break;
    case OpEntryPoint:
      s.entryPoints.push_back(&inst);
      break;
    case OpExecutionMode:
    case OpExecutionModeId:
      s.modes.push_back(&inst);
      break;
    case OpSource:
    case OpSourceContinued:
    case OpSourceExtension:
    case OpModuleProcessed:
      s.sources.push_back(&inst);
      break;
    case OpName:
    case OpMemberName:
      s.names.push_back(&inst);
      break;
    case OpDecorate:
    case OpMemberDecorate:
    case OpDecorateId:
    case OpDecorateString:
    case OpMemberDecorateString:
      s.decorations.push_back(&inst);
      break;
    case OpLine:
    case OpNoLine:
      break; // between global declarations: nothing refers to it
    case OpFunction:
      function = &s.functions[inst.result];
      function->push_back(&inst);
      break;
    case OpDecorationGroup:
    case OpGroupDecorate:
    case OpGroupMemberDecorate:
    case OpTypeForwardPointer:
      return llvm::createStringError(
          llvm::formatv("SPIR-V split: opcode {0} is not supported",
                        inst.opcode));
    default:
      if (!inst.result)
        return llvm::createStringError(llvm::formatv(
            "SPIR-V split: global instruction (opcode {0}) without a result",
            inst.opcode));
      s.globals[inst.result] = &inst;
    }
  }
  return s;
}

/// The module of one entry point.
class KernelModule {
public:
  KernelModule(const Sections &s) : s_(s) {}

  llvm::Expected<std::string> build(const Parsed &parsed,
                                    const Inst &entry) {
    // Reach from the entry point (its function and interface), its
    // execution modes' id operands and the source's.
    visitOperands(entry);
    for (const Inst *mode : s_.modes)
      if (mode->words[1] == entry.words[2])
        modes_.push_back(mode), visitOperands(*mode);
    for (const Inst *source : s_.sources)
      visitOperands(*source);

    // Ids in order of definition: the preamble's, the strings', the other
    // globals', then each function's.
    for (const Inst *inst : s_.preamble)
      define(*inst);
    for (const Inst *inst : globals_)
      if (inst->opcode == OpString)
        define(*inst);
    for (const Inst *inst : globals_)
      if (inst->opcode != OpString)
        define(*inst);
    for (uint32_t function : functions_)
      for (const Inst *inst : s_.functions.lookup(function))
        define(*inst);

    std::vector<uint32_t> out = {0x07230203, parsed.version, parsed.generator,
                                 0, 0};
    auto emit = [&](const Inst &inst) -> llvm::Error {
      std::vector<uint32_t> words = inst.words;
      for (uint16_t offset : inst.ids) {
        auto renamed = ids_.find(words[offset]);
        if (renamed == ids_.end())
          return llvm::createStringError(llvm::formatv(
              "SPIR-V split: {0}: id {1} (opcode {2}) is not defined",
              entry.name, words[offset], inst.opcode));
        words[offset] = renamed->second;
      }
      // The entry point's interface (the ids after its function's), which
      // LLVM lists in the module's order, by id.
      if (inst.opcode == OpEntryPoint && inst.ids.size() > 2)
        std::sort(words.begin() + inst.ids[1], words.end());
      out.insert(out.end(), words.begin(), words.end());
      return llvm::Error::success();
    };
    // Names and decorations of what the kernel keeps, by target.
    auto kept = [&](const std::vector<const Inst *> &all) {
      std::vector<const Inst *> list;
      for (const Inst *inst : all)
        if (ids_.count(inst->words[1]))
          list.push_back(inst);
      // By target, then in the module's order (the instructions are one
      // vector's elements).
      llvm::sort(list, [&](const Inst *a, const Inst *b) {
        uint32_t ta = ids_.lookup(a->words[1]), tb = ids_.lookup(b->words[1]);
        return ta != tb ? ta < tb : a < b;
      });
      return list;
    };
    std::vector<const Inst *> order(s_.preamble);
    order.push_back(&entry);
    llvm::append_range(order, modes_);
    for (const Inst *inst : globals_)
      if (inst->opcode == OpString)
        order.push_back(inst);
    llvm::append_range(order, s_.sources);
    llvm::append_range(order, kept(s_.names));
    llvm::append_range(order, kept(s_.decorations));
    for (const Inst *inst : globals_)
      if (inst->opcode != OpString)
        order.push_back(inst);
    for (uint32_t function : functions_)
      llvm::append_range(order, s_.functions.lookup(function));
    for (const Inst *inst : order)
      if (llvm::Error error = emit(*inst))
        return std::move(error);
    out[3] = next_; // the bound
    return std::string(reinterpret_cast<const char *>(out.data()),
                       out.size() * sizeof(uint32_t));
  }

private:
  /// Visits the id operands of `inst` but its result.
  void visitOperands(const Inst &inst) {
    for (uint16_t offset : inst.ids)
      if (inst.words[offset] != inst.result)
        visit(inst.words[offset]);
  }

  /// Depth first: what `id` refers to, then `id` itself.
  void visit(uint32_t id) {
    if (!visited_.insert(id).second)
      return;
    if (const Inst *global = s_.globals.lookup(id)) {
      visitOperands(*global);
      globals_.push_back(global);
      return;
    }
    auto function = s_.functions.find(id);
    if (function == s_.functions.end())
      return; // a function's own value, or the preamble's
    for (const Inst *inst : function->second)
      visitOperands(*inst);
    functions_.push_back(id);
  }

  void define(const Inst &inst) {
    if (inst.result)
      ids_.try_emplace(inst.result, next_++);
  }

  const Sections &s_;
  llvm::DenseSet<uint32_t> visited_;
  std::vector<const Inst *> globals_;
  std::vector<uint32_t> functions_;
  std::vector<const Inst *> modes_;
  llvm::DenseMap<uint32_t, uint32_t> ids_;
  uint32_t next_ = 1;
};

} // namespace

llvm::Expected<llvm::StringMap<std::string>>
mlir::txl::splitSpirvKernels(llvm::StringRef spirv) {
  if (spirv.size() % 4 != 0 || spirv.size() < 20)
    return llvm::createStringError("SPIR-V split: not a SPIR-V module");
  std::vector<uint32_t> words(spirv.size() / 4);
  std::memcpy(words.data(), spirv.data(), spirv.size());
  Parsed parsed;
  std::unique_ptr<spv_context_t, void (*)(spv_context)> context(
      spvContextCreate(SPV_ENV_UNIVERSAL_1_6), spvContextDestroy);
  spv_diagnostic diagnostic = nullptr;
  spv_result_t status =
      spvBinaryParse(context.get(), &parsed, words.data(), words.size(),
                     onHeader, onInstruction, &diagnostic);
  if (status != SPV_SUCCESS) {
    std::string message = diagnostic && diagnostic->error
                              ? diagnostic->error
                              : "status " + std::to_string(int(status));
    spvDiagnosticDestroy(diagnostic);
    return llvm::createStringError("SPIR-V split: cannot parse: " + message);
  }
  llvm::Expected<Sections> sections = sort(parsed);
  if (!sections)
    return sections.takeError();
  llvm::StringMap<std::string> kernels;
  for (const Inst *entry : sections->entryPoints) {
    llvm::Expected<std::string> module =
        KernelModule(*sections).build(parsed, *entry);
    if (!module)
      return module.takeError();
    kernels[entry->name] = std::move(*module);
  }
  return kernels;
}

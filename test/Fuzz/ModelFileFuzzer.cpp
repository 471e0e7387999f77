//===- ModelFileFuzzer.cpp - libFuzzer target of the model-file parser ----===//
//
// Input: the text of a model file (TOML). Checks that parseModelConfig
// either returns a configuration or an error whose message has the
// `<file>:<line>:<col>: error: ` form users are promised, and never crashes.
// The parser is compiled like the compiler: no exceptions, no RTTI.
//
//===----------------------------------------------------------------------===//

#include "txl/Frontend/ModelConfig.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  llvm::Expected<mlir::txl::ModelConfig> config =
      mlir::txl::parseModelConfig(text, "fuzz.toml");
  if (config)
    return 0;
  std::string message = llvm::toString(config.takeError());
  // "fuzz.toml:<line>:<col>: error: ..."
  llvm::StringRef rest(message);
  unsigned line = 0, column = 0;
  if (!rest.consume_front("fuzz.toml:") || rest.consumeInteger(10, line) ||
      !rest.consume_front(":") || rest.consumeInteger(10, column) ||
      !rest.consume_front(": error: ") || line == 0 || column == 0) {
    std::fprintf(stderr, "model-file error without file:line:col: %s\n",
                 message.c_str());
    std::abort();
  }
  return 0;
}

//===- Cublas.cpp - cuBLAS, loaded with dlopen ----------------------------===//

#include "txl/rt/device/Cublas.h"

#include "txl/rt/support/Status.h"

#include <cstdlib>

namespace txl::rt {

namespace {

/// Where cuBLAS is looked for: the sonames of CUDA 13 and 12 on the
/// loader's path, then the toolkit's lib64 (CUDA_PATH, then the default
/// install), which the loader's path often lacks.
std::vector<std::string> defaultCandidates() {
  std::vector<std::string> candidates = {"libcublas.so.13", "libcublas.so.12"};
  std::vector<std::string> roots;
  if (const char *cudaPath = std::getenv("CUDA_PATH"))
    roots.push_back(cudaPath);
  roots.push_back("/usr/local/cuda");
  for (const std::string &root : roots)
    for (const char *soname : {"libcublas.so.13", "libcublas.so.12"})
      candidates.push_back(root + "/lib64/" + soname);
  return candidates;
}

} // namespace

Cublas::Cublas(std::vector<std::string> candidates)
    : library_(openFirstLibrary(
          candidates.empty() ? defaultCandidates() : candidates, "cuBLAS")) {
  const char *requirement = "the runtime needs cuBLAS from CUDA 12 or newer";
#define TXL_CUBLAS_SYMBOL(name, ret, params)                                   \
  name = reinterpret_cast<ret(*) params>(library_->symbol(#name, requirement));
#include "txl/rt/device/CublasSymbols.def"
#undef TXL_CUBLAS_SYMBOL
}

void Cublas::check(int status, const char *what) const {
  if (status == 0)
    return;
  const char *name = cublasGetStatusName(status);
  const char *description = cublasGetStatusString(status);
  failDeviceCall(
      what, name ? std::string(name) : fmt::format("cublasStatus_t {}", status),
      description);
}

} // namespace txl::rt

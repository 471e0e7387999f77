//===- DynamicLibrary.cpp - A shared library opened at run time -----------===//

#include "txl/rt/support/DynamicLibrary.h"

#include "txl/rt/support/Status.h"

#include <dlfcn.h>

namespace txl::rt {

DynamicLibrary::DynamicLibrary(const std::string &path, const std::string &what,
                               bool global)
    : path_(path), what_(what) {
  // RTLD_NODELETE: a vendor library stays mapped after the last close.
  // Drivers are not built to be unloaded and loaded again, and what one
  // keeps for its lifetime (cuBLAS's C++ runtime keeps an exception pool)
  // stays attributable to it in LeakSanitizer's reports.
  handle_ =
      dlopen(path.c_str(),
             RTLD_NOW | (global ? RTLD_GLOBAL : RTLD_LOCAL) | RTLD_NODELETE);
  if (!handle_) {
    const char *why = dlerror();
    fail(TXL_UNAVAILABLE, "no {}: dlopen({}) failed: {}", what, path,
         why ? why : "unknown error");
  }
}

DynamicLibrary::~DynamicLibrary() { dlclose(handle_); }

void *DynamicLibrary::symbol(const char *name, const char *requirement) const {
  void *address = dlsym(handle_, name);
  if (!address)
    fail(TXL_UNAVAILABLE, "no usable {}: {} has no symbol {} ({})", what_,
         path_, name, requirement);
  return address;
}

std::unique_ptr<DynamicLibrary>
openFirstLibrary(const std::vector<std::string> &candidates,
                 const std::string &what) {
  std::string firstError, others;
  for (const std::string &path : candidates) {
    try {
      return std::make_unique<DynamicLibrary>(path, what);
    } catch (const Error &e) {
      if (firstError.empty())
        firstError = e.what();
      else
        others += (others.empty() ? "" : ", ") + path;
    }
  }
  if (others.empty())
    fail(TXL_UNAVAILABLE, "{}", firstError);
  fail(TXL_UNAVAILABLE, "{} (also tried: {})", firstError, others);
}

void failDeviceCall(const char *what, const std::string &name,
                    const char *description) {
  if (description)
    fail(TXL_UNAVAILABLE, "{}: {} ({})", what, name, description);
  fail(TXL_UNAVAILABLE, "{}: {}", what, name);
}

} // namespace txl::rt

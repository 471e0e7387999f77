//===- DynamicLibrary.h - A shared library opened at run time ---*- C++ -*-===//
//
// The device backends (CUDA driver, OpenCL ICD loader) reach their
// libraries only through dlopen/dlsym, so that an executable builds and
// starts on a machine without them and says what is missing.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_DYNAMICLIBRARY_H
#define TXL_RT_DYNAMICLIBRARY_H

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace txl::rt {

/// A result code of a device API, with its name and a one-line
/// description, for the codes a user is likely to meet.
struct KnownCode {
  int code;
  const char *name;
  const char *description;
};

/// A KnownCode row from the API's own enumerator (its header's), named by
/// its spelling: TXL_KNOWN_CODE(CL_INVALID_VALUE, "invalid argument").
#define TXL_KNOWN_CODE(code, description)                                      \
  { code, #code, description }

/// The entry of `code` in `table`, or null.
template <size_t N>
const KnownCode *findKnownCode(const KnownCode (&table)[N], int code) {
  for (const KnownCode &known : table)
    if (known.code == code)
      return &known;
  return nullptr;
}

/// Throws Error(TXL_UNAVAILABLE) "<what>: <name> (<description>)", or
/// "<what>: <name>" when `description` is null: the one message shape of a
/// failed device call.
[[noreturn]] void failDeviceCall(const char *what, const std::string &name,
                                 const char *description);

/// An open shared library; closes it when destroyed.
class DynamicLibrary {
public:
  /// dlopen()s `path`, its symbols local unless `global` (RTLD_GLOBAL:
  /// Open MPI's components, which it dlopens itself, resolve libmpi's
  /// symbols through the global scope). Throws Error(TXL_UNAVAILABLE) "no
  /// <what>: dlopen(<path>) failed: <dlerror>" when it cannot be loaded.
  DynamicLibrary(const std::string &path, const std::string &what,
                 bool global = false);
  ~DynamicLibrary();
  DynamicLibrary(const DynamicLibrary &) = delete;
  DynamicLibrary &operator=(const DynamicLibrary &) = delete;

  /// The address of `name`. Throws Error(TXL_UNAVAILABLE) "no usable
  /// <what>: <path> has no symbol <name> (<requirement>)" when absent.
  void *symbol(const char *name, const char *requirement) const;

  const std::string &path() const { return path_; }

private:
  std::string path_, what_;
  void *handle_ = nullptr;
};

/// Opens the first of `candidates` that dlopen() loads. Throws
/// Error(TXL_UNAVAILABLE) "no <what>: dlopen(<first>) failed: <dlerror>
/// (also tried: <the others>)" when none loads.
std::unique_ptr<DynamicLibrary>
openFirstLibrary(const std::vector<std::string> &candidates,
                 const std::string &what);

} // namespace txl::rt

#endif // TXL_RT_DYNAMICLIBRARY_H

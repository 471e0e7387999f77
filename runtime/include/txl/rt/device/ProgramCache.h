//===- ProgramCache.h - On-disk cache of device-built kernel programs -*- C++
//-*-===//
//
// Building a kernel module from SPIR-V is the OpenCL driver's job and costs
// seconds per process (Intel's CPU runtime: about 9 s for a small model's
// kernels), every time an executable starts. The runtime keeps what the
// driver built (clGetProgramInfo(CL_PROGRAM_BINARIES)) in a directory, as
// CUDA's driver keeps JIT-compiled PTX in ~/.nv/ComputeCache, and the next
// start loads it with clCreateProgramWithBinary.
//
// An entry holds its whole key: the device key (platform, device, driver
// versions and build options) and the SPIR-V bytes themselves, compared
// byte for byte on lookup, so a hash collision or a stale entry is a miss,
// never a wrong program. Entries are written atomically (temporary file +
// rename), so concurrent processes sharing the directory see either no
// entry or a complete one. The cache is an optimisation: every failure to
// read or write it is a miss, never an error.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_PROGRAMCACHE_H
#define TXL_RT_PROGRAMCACHE_H

#include <optional>
#include <string>
#include <string_view>

namespace txl::rt {

class ProgramCache {
public:
  /// A cache in `dir` (created on the first store).
  explicit ProgramCache(std::string dir) : dir_(std::move(dir)) {}

  /// The cache the environment selects: TXL_OPENCL_CACHE_DIR, else
  /// $XDG_CACHE_HOME/txlc/opencl, else $HOME/.cache/txlc/opencl; none when
  /// TXL_OPENCL_CACHE=0 or when none of those variables is set.
  static std::optional<ProgramCache> fromEnvironment();

  /// The built program stored for (`deviceKey`, `source`), or nothing: no
  /// entry, an unreadable or truncated one, or one whose stored key or
  /// source differs.
  std::optional<std::string> lookup(std::string_view deviceKey,
                                    std::string_view source) const;

  /// Stores `binary` for (`deviceKey`, `source`), replacing any entry.
  /// Returns false (and leaves no partial entry) when the directory cannot
  /// be created or written.
  bool store(std::string_view deviceKey, std::string_view source,
             std::string_view binary) const;

  /// The entry's file: `<dir>/<16 hex digits of FNV-1a 64 over the key and
  /// source>.clbin`.
  std::string path(std::string_view deviceKey, std::string_view source) const;

  const std::string &directory() const { return dir_; }

private:
  std::string dir_;
};

} // namespace txl::rt

#endif // TXL_RT_PROGRAMCACHE_H

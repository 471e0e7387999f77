//===- HostChecks.cpp - Where the generated host code's checks end -*- C++
//-*-===//
//
// txl_rt_malloc / txl_rt_aligned_alloc, which the CPU code calls for its
// working buffers (txl-check-host-allocations), and txl_rt_assert_failed,
// which a failed run-time check of the host code calls
// (txl-lower-host-asserts); txl/runtime.h. In a file of their own so that
// test/lib/txlrun.py's shared objects of single ops link them without the
// rest of the runtime.
//
//===----------------------------------------------------------------------===//

#include "txl/runtime.h"

#include <cstdio>
#include <cstdlib>

/// The end of a failed allocation of generated code: nothing is unwound
/// (the caller is generated code, which has no error path); the process
/// exits with a message instead of a segmentation fault.
[[noreturn]] static void failAllocation(size_t size) {
  std::fprintf(stderr,
               "error: out of memory (%zu bytes for the compiled model's "
               "working buffers)\n",
               size);
  std::fflush(stderr);
  std::_Exit(1);
}

extern "C" void *txl_rt_malloc(size_t size) {
  void *p = std::malloc(size);
  if (!p && size != 0)
    failAllocation(size);
  return p;
}

extern "C" void *txl_rt_aligned_alloc(size_t alignment, size_t size) {
  void *p = std::aligned_alloc(alignment, size);
  if (!p && size != 0)
    failAllocation(size);
  return p;
}

extern "C" void txl_rt_assert_failed(const char *message) {
  std::fprintf(stderr, "error: run-time check failed: %s\n", message);
  std::fflush(stderr);
  std::_Exit(1);
}

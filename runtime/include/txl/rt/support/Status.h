//===- Status.h - Runtime errors and C API status objects -------*- C++ -*-===//
//
// Inside the runtime, C++ code reports failures by throwing `txl::rt::Error`
// (a message plus a `txl_status_code_t`); every C API entry point converts
// them into a `txl_status_t` at one boundary (`guardStatus`), the way IREE
// turns driver results into statuses in one place.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_STATUS_H
#define TXL_RT_STATUS_H

#include "txl/runtime.h"

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace txl::rt {

/// A runtime failure: a status code and a complete, user-facing message that
/// names the file / tensor / option at fault (no trailing period).
class Error : public std::runtime_error {
public:
  Error(txl_status_code_t code, const std::string &message)
      : std::runtime_error(message), code_(code) {}

  /// The C API code this error maps to (never TXL_OK).
  txl_status_code_t code() const { return code_; }

private:
  txl_status_code_t code_;
};

/// Throws an `Error` with `code` and a message formatted with fmt.
template <typename... Args>
[[noreturn]] void fail(txl_status_code_t code,
                       fmt::format_string<Args...> format, Args &&...args) {
  throw Error(code, fmt::format(format, std::forward<Args>(args)...));
}

/// Allocates a C API status; `code` must not be TXL_OK (success is NULL).
/// Never fails (falls back to a static out-of-memory status).
txl_status_t makeStatus(txl_status_code_t code, std::string message);

/// `makeStatus` with an fmt-formatted message.
template <typename... Args>
txl_status_t makeStatus(txl_status_code_t code,
                        fmt::format_string<Args...> format, Args &&...args) {
  return makeStatus(code, fmt::format(format, std::forward<Args>(args)...));
}

/// Converts the exception being handled (call only inside a `catch`) into a
/// status: `Error` keeps its code, `std::bad_alloc` becomes
/// TXL_INVALID_ARGUMENT "out of memory", any other exception TXL_DATA_ERROR.
txl_status_t statusFromCurrentException() noexcept;

/// Runs `fn` and returns NULL, or the status of the exception it threw. Use it
/// as the whole body of a C API function.
template <typename Fn> txl_status_t guardStatus(Fn &&fn) noexcept {
  try {
    std::forward<Fn>(fn)();
    return nullptr;
  } catch (...) {
    return statusFromCurrentException();
  }
}

/// Consumes `status`: returns on success (NULL), otherwise frees it and
/// throws the equivalent `Error`. The bridge from the C API back into C++.
void checkStatus(txl_status_t status);

} // namespace txl::rt

#endif // TXL_RT_STATUS_H

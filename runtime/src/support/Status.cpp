//===- Status.cpp - C API status objects ------------------------*- C++ -*-===//
//
// `txl_status_t` is a heap object holding a code and a message; NULL is
// success. A static object stands in when allocating a status fails, so an
// error is never lost (freeing it is a no-op).
//
//===----------------------------------------------------------------------===//

#include "txl/rt/support/Status.h"

#include <new>

struct txl_status {
  txl_status_code_t code;
  std::string message;
};

namespace {
/// Returned when the status itself cannot be allocated; never freed.
txl_status outOfMemoryStatus{TXL_INVALID_ARGUMENT, "out of memory"};
} // namespace

namespace txl::rt {

txl_status_t makeStatus(txl_status_code_t code, std::string message) {
  try {
    return new txl_status{code, std::move(message)};
  } catch (const std::bad_alloc &) {
    return &outOfMemoryStatus;
  }
}

txl_status_t statusFromCurrentException() noexcept {
  try {
    throw;
  } catch (const Error &error) {
    return makeStatus(error.code(), error.what());
  } catch (const std::bad_alloc &) {
    return &outOfMemoryStatus;
  } catch (const std::exception &error) {
    return makeStatus(TXL_DATA_ERROR, error.what());
  } catch (...) {
    return makeStatus(TXL_DATA_ERROR, std::string("unknown error"));
  }
}

void checkStatus(txl_status_t status) {
  if (!status)
    return;
  txl_status_code_t code = txl_status_code(status);
  std::string message = txl_status_message(status);
  txl_status_free(status);
  throw Error(code, message);
}

} // namespace txl::rt

extern "C" {

txl_status_code_t txl_status_code(txl_status_t status) {
  return status ? status->code : TXL_OK;
}

const char *txl_status_message(txl_status_t status) {
  return status ? status->message.c_str() : "";
}

void txl_status_free(txl_status_t status) {
  if (status != &outOfMemoryStatus)
    delete status;
}

} // extern "C"

//===- CLBlast.cpp - CLBlast, loaded with dlopen --------------------------===//

#include "txl/rt/device/CLBlast.h"

#include "txl/rt/support/Status.h"

namespace txl::rt {

namespace {

/// CLBlast's own status codes a user is likely to meet (clblast_c.h's
/// CLBlastStatusCode); the OpenCL codes it shares are named by OpenCL's
/// table.
constexpr KnownCode kKnownCodes[] = {
    TXL_KNOWN_CODE(CLBlastNotImplemented, "routine or option not implemented"),
    TXL_KNOWN_CODE(CLBlastInvalidMatrixA, "matrix A is not a valid buffer"),
    TXL_KNOWN_CODE(CLBlastInvalidMatrixB, "matrix B is not a valid buffer"),
    TXL_KNOWN_CODE(CLBlastInvalidMatrixC, "matrix C is not a valid buffer"),
    TXL_KNOWN_CODE(CLBlastInvalidDimension, "m, n and k must be positive"),
    TXL_KNOWN_CODE(CLBlastInvalidLeadDimA, "leading dimension of A too small"),
    TXL_KNOWN_CODE(CLBlastInvalidLeadDimB, "leading dimension of B too small"),
    TXL_KNOWN_CODE(CLBlastInvalidLeadDimC, "leading dimension of C too small"),
    TXL_KNOWN_CODE(CLBlastInsufficientMemoryA, "A's buffer is too small"),
    TXL_KNOWN_CODE(CLBlastInsufficientMemoryB, "B's buffer is too small"),
    TXL_KNOWN_CODE(CLBlastInsufficientMemoryC, "C's buffer is too small"),
    TXL_KNOWN_CODE(CLBlastInvalidBatchCount,
                   "the batch count must be positive"),
    TXL_KNOWN_CODE(CLBlastInvalidLocalMemUsage,
                   "not enough local memory on the device"),
    TXL_KNOWN_CODE(CLBlastDatabaseError, "no tuning entry for the device"),
    TXL_KNOWN_CODE(CLBlastUnknownError, "unspecified error"),
    TXL_KNOWN_CODE(CLBlastUnexpectedError, "unexpected exception"),
};

} // namespace

CLBlast::CLBlast(const std::string &library) : library_(library, "CLBlast") {
  const char *requirement = "the runtime needs CLBlast 1.5 or newer";
#define TXL_CLBLAST_SYMBOL(name, ret, params)                                  \
  name = reinterpret_cast<ret(*) params>(library_.symbol(#name, requirement));
#include "txl/rt/device/CLBlastSymbols.def"
#undef TXL_CLBLAST_SYMBOL
}

void CLBlast::check(int status, const char *what) const {
  if (status == CLBlastSuccess)
    return;
  if (const KnownCode *known = findKnownCode(kKnownCodes, status))
    failDeviceCall(what, known->name, known->description);
  if (status > -1000) {
    // An OpenCL code, passed through.
    OpenCL::check(status, what);
  }
  failDeviceCall(what, fmt::format("CLBlastStatusCode {}", status), nullptr);
}

} // namespace txl::rt

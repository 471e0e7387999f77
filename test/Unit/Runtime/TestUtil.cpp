//===- TestUtil.cpp - Shared helpers of the runtime unit tests --*- C++ -*-===//

#include "TestUtil.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <dirent.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

// The session (Session.cpp), which Train.cpp and the C API drive, references
// the generated forward entry; the unit tests link no model.
extern "C" void txl_segment_forward(void **) {}

namespace txl::rt::test {

TempDir::TempDir() {
  const char *base = std::getenv("TMPDIR");
  std::string templ =
      std::string(base && *base ? base : "/tmp") + "/txl-rt-test.XXXXXX";
  std::vector<char> buffer(templ.begin(), templ.end());
  buffer.push_back('\0');
  if (!::mkdtemp(buffer.data()))
    throw std::runtime_error("mkdtemp failed for " + templ);
  path_ = buffer.data();
}

TempDir::~TempDir() {
  ::nftw(
      path_.c_str(),
      [](const char *path, const struct stat *, int, struct FTW *) {
        return ::remove(path);
      },
      16, FTW_DEPTH | FTW_PHYS);
}

std::string TempDir::file(std::string_view name) const {
  return path_ + "/" + std::string(name);
}

std::string TempDir::write(std::string_view name,
                           std::string_view bytes) const {
  std::string path = file(name);
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out)
    throw std::runtime_error("cannot write " + path);
  return path;
}

std::vector<std::string> TempDir::list() const {
  std::vector<std::string> names;
  if (DIR *dir = ::opendir(path_.c_str())) {
    while (struct dirent *entry = ::readdir(dir)) {
      std::string name = entry->d_name;
      if (name != "." && name != "..")
        names.push_back(name);
    }
    ::closedir(dir);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string slurp(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

std::string sharedPath(std::string_view relative) {
  std::string path = std::string(TXL_SHARED_DIR) + "/" + std::string(relative);
  if (::access(path.c_str(), R_OK) != 0)
    ADD_FAILURE() << "shared test data missing: " << path
                  << " (TXL_SHARED_DIR=" << TXL_SHARED_DIR << ")";
  return path;
}

std::string u64le(uint64_t value) {
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i)
    bytes[i] = static_cast<char>((value >> (8 * i)) & 0xff);
  return bytes;
}

std::string safetensorsImage(std::string_view header, size_t dataBytes) {
  return u64le(header.size()) + std::string(header) +
         std::string(dataBytes, '\0');
}

std::vector<std::string> symbols(const Vocab &vocab) {
  std::vector<std::string> result;
  for (int64_t i = 0; i < vocab.size(); ++i)
    result.push_back(vocab.symbol(i));
  return result;
}

} // namespace txl::rt::test

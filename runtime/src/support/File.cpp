//===- File.cpp - Whole-file reads, mappings and atomic writes --*- C++ -*-===//

#include "txl/rt/support/File.h"

#include "txl/rt/support/Status.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace txl::rt {

namespace {

/// Throws the error for a failed `open` of `path` (errno still set).
[[noreturn]] void failOpen(const std::string &path) {
  int err = errno;
  if (err == ENOENT)
    fail(TXL_NOT_FOUND, "{}: no such file", path);
  fail(TXL_IO_ERROR, "{}: cannot open: {}", path, std::strerror(err));
}

/// Closes `fd` on scope exit.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0)
      ::close(fd);
  }
};

/// Opens `path` read-only and returns its size; rejects directories and
/// anything else that is not a regular file (devices such as /dev/zero,
/// FIFOs, sockets), whose size says nothing about what a read returns.
int openForRead(const std::string &path, size_t &size) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    failOpen(path);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    fail(TXL_IO_ERROR, "{}: cannot stat: {}", path, std::strerror(err));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    fail(TXL_IO_ERROR, "{}: is a directory", path);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(TXL_IO_ERROR, "{}: not a regular file", path);
  }
  size = static_cast<size_t>(st.st_size);
  return fd;
}

} // namespace

std::string readFile(const std::string &path) {
  size_t size = 0;
  FdCloser fd{openForRead(path, size)};
  std::string bytes;
  try {
    bytes.reserve(size);
  } catch (const std::bad_alloc &) {
    fail(TXL_IO_ERROR, "{}: out of memory reading its {} bytes", path, size);
  }
  char buffer[1 << 16];
  while (true) {
    ssize_t n = ::read(fd.fd, buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR)
        continue;
      fail(TXL_IO_ERROR, "{}: read failed: {}", path, std::strerror(errno));
    }
    if (n == 0)
      break;
    bytes.append(buffer, static_cast<size_t>(n));
  }
  return bytes;
}

MappedFile::MappedFile(const std::string &path) {
  size_t size = 0;
  FdCloser fd{openForRead(path, size)};
  if (size == 0)
    return;
  void *addr = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd.fd, 0);
  if (addr == MAP_FAILED)
    fail(TXL_IO_ERROR, "{}: cannot map: {}", path, std::strerror(errno));
  data_ = static_cast<std::byte *>(addr);
  size_ = size;
}

MappedFile::MappedFile(MappedFile &&other) noexcept
    : data_(other.data_), size_(other.size_) {
  other.data_ = nullptr;
  other.size_ = 0;
}

MappedFile &MappedFile::operator=(MappedFile &&other) noexcept {
  if (this != &other) {
    reset();
    data_ = other.data_;
    size_ = other.size_;
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

MappedFile::~MappedFile() { reset(); }

void MappedFile::reset() noexcept {
  if (data_)
    ::munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

/// Appended to every failure after the temporary file exists: the
/// destination is only ever replaced by a complete, fsync'ed file.
static constexpr const char *kLeftAsItWas =
    "the file at that path, if any, is left as it was";

namespace {

/// `path` with its symbolic links followed (at most 40, as the kernel
/// does): where a write to `path` lands. A dangling link resolves to the
/// path it names, which the write then creates.
std::string followLinks(const std::string &path) {
  std::string at = path;
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st;
    if (::lstat(at.c_str(), &st) != 0 || !S_ISLNK(st.st_mode))
      return at;
    std::vector<char> target(size_t(st.st_size > 0 ? st.st_size : 4096) + 1);
    ssize_t n = ::readlink(at.c_str(), target.data(), target.size());
    if (n < 0 || size_t(n) >= target.size())
      fail(TXL_IO_ERROR, "{}: cannot read the symbolic link: {}", path,
           n < 0 ? std::strerror(errno) : "it changed while read");
    std::string link(target.data(), size_t(n));
    size_t slash = at.rfind('/');
    at = (!link.empty() && link.front() == '/') || slash == std::string::npos
             ? link
             : at.substr(0, slash + 1) + link;
  }
  fail(TXL_IO_ERROR, "{}: too many levels of symbolic links", path);
}

} // namespace

AtomicFileWriter::AtomicFileWriter(std::string path) : path_(std::move(path)) {
  // Where the bytes land: a symbolic link is followed, so that the link
  // stays and its target is written.
  std::string target = followLinks(path_);
  struct stat st;
  bool exists = ::stat(target.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode))
    fail(TXL_IO_ERROR, "{}: is a directory", path_);
  if (exists && !S_ISREG(st.st_mode)) {
    // A device, FIFO or socket: written through, as `tee` would; renaming
    // a file over it would replace the node itself.
    fd_ = ::open(target.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd_ < 0)
      fail(TXL_IO_ERROR, "{}: cannot open for writing: {}", path_,
           std::strerror(errno));
    return;
  }
  destination_ = target;
  size_t slash = target.rfind('/');
  std::string dir =
      slash == std::string::npos ? "" : target.substr(0, slash + 1);
  std::string base =
      slash == std::string::npos ? target : target.substr(slash + 1);
  if (base.empty())
    fail(TXL_IO_ERROR, "{}: not a file name", path_);
  tempPath_ = dir + "." + base + ".tmp.XXXXXX";
  std::vector<char> templ(tempPath_.begin(), tempPath_.end());
  templ.push_back('\0');
  fd_ = ::mkstemp(templ.data());
  if (fd_ < 0)
    fail(TXL_IO_ERROR, "{}: cannot create a temporary file: {}", path_,
         std::strerror(errno));
  tempPath_.assign(templ.data());
  // mkstemp creates 0600: a file that exists keeps its mode, a new one
  // gets the usual 0666 & ~umask.
  mode_t mode;
  if (exists) {
    mode = st.st_mode & 07777;
  } else {
    mode_t mask = ::umask(0);
    ::umask(mask);
    mode = 0666 & ~mask;
  }
  ::fchmod(fd_, mode);
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) {
    ::close(fd_);
    if (!tempPath_.empty())
      ::unlink(tempPath_.c_str());
  }
}

void AtomicFileWriter::write(const void *data, size_t size) {
  const char *bytes = static_cast<const char *>(data);
  while (size > 0) {
    ssize_t n = ::write(fd_, bytes, size);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      fail(TXL_IO_ERROR, "{}: write failed: {}{}", path_, std::strerror(errno),
           tempPath_.empty() ? "" : std::string("; ") + kLeftAsItWas);
    }
    bytes += n;
    size -= static_cast<size_t>(n);
  }
}

void AtomicFileWriter::commit() {
  if (tempPath_.empty()) {
    // Written through (a device or FIFO): nothing to rename, and fsync
    // means nothing to most of them.
    int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0)
      fail(TXL_IO_ERROR, "{}: close failed: {}", path_, std::strerror(errno));
    return;
  }
  if (::fsync(fd_) != 0)
    fail(TXL_IO_ERROR, "{}: fsync failed: {}; {}", path_, std::strerror(errno),
         kLeftAsItWas);
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    int err = errno;
    ::unlink(tempPath_.c_str());
    fail(TXL_IO_ERROR, "{}: close failed: {}; {}", path_, std::strerror(err),
         kLeftAsItWas);
  }
  if (::rename(tempPath_.c_str(), destination_.c_str()) != 0) {
    int err = errno;
    ::unlink(tempPath_.c_str());
    fail(TXL_IO_ERROR,
         "{}: cannot rename the temporary file into place: {}; {}", path_,
         std::strerror(err), kLeftAsItWas);
  }
  // Make the rename itself durable; failure here is not worth reporting.
  size_t slash = destination_.rfind('/');
  std::string dir =
      slash == std::string::npos ? "." : destination_.substr(0, slash);
  if (dir.empty())
    dir = "/";
  int dirFd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirFd >= 0) {
    ::fsync(dirFd);
    ::close(dirFd);
  }
}

void refuseOutputsOverInputs(const std::vector<NamedPath> &outputs,
                             const std::vector<NamedPath> &inputs) {
  for (const NamedPath &output : outputs) {
    struct stat out;
    if (output.path.empty() || ::stat(output.path.c_str(), &out) != 0)
      continue;
    for (const NamedPath &input : inputs) {
      struct stat in;
      if (input.path.empty() || ::stat(input.path.c_str(), &in) != 0)
        continue;
      if (in.st_dev == out.st_dev && in.st_ino == out.st_ino)
        fail(TXL_INVALID_ARGUMENT,
             "{} {} is the same file as {} {}: refusing to overwrite an input",
             output.option, output.path, input.option, input.path);
    }
  }
}

void writeFileAtomic(const std::string &path, std::string_view bytes) {
  AtomicFileWriter writer(path);
  writer.write(bytes);
  writer.commit();
}

} // namespace txl::rt

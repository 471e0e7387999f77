//===- File.h - Whole-file reads, mappings and atomic writes ----*- C++ -*-===//
//
// Small POSIX file helpers shared by the safetensors, npy and corpus readers.
// Every failure throws `txl::rt::Error` (TXL_IO_ERROR, or TXL_NOT_FOUND for a
// missing file) whose message starts with the path and includes strerror.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_FILE_H
#define TXL_RT_FILE_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace txl::rt {

/// Reads the whole file at `path` as bytes.
/// Errors: TXL_NOT_FOUND "<path>: no such file"; TXL_IO_ERROR for one that
/// cannot be opened or read, a directory ("<path>: is a directory"), anything
/// else that is not a regular file ("<path>: not a regular file": /dev/zero,
/// a FIFO), and a file larger than memory allows ("out of memory reading").
std::string readFile(const std::string &path);

/// A read-only private mapping of a whole file (empty files map to no bytes).
/// Movable, not copyable; unmaps on destruction.
class MappedFile {
public:
  MappedFile() = default;
  /// Maps `path`. Errors as `readFile`.
  explicit MappedFile(const std::string &path);
  MappedFile(MappedFile &&other) noexcept;
  MappedFile &operator=(MappedFile &&other) noexcept;
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;
  ~MappedFile();

  const std::byte *data() const { return data_; }
  size_t size() const { return size_; }

private:
  void reset() noexcept;

  std::byte *data_ = nullptr;
  size_t size_ = 0;
};

/// The one writer of every output the runtime writes (checkpoints, npy
/// dumps, logs' data, the program cache). What stands at the path decides
/// how:
/// - nothing, or a regular file: atomically. The bytes go to a fresh
///   temporary file in the destination's directory (`.<name>.tmp.XXXXXX`),
///   which is fsync'ed and then renamed over it, so readers see either the
///   old or the complete new file; an existing file keeps its mode, a new
///   one gets 0666 & ~umask. The temporary is removed if the writer is
///   destroyed before `commit()`.
/// - a symbolic link: followed (the link stays; its target is written by
///   these rules, a dangling link's target created).
/// - a device, FIFO or socket: written through, as `tee` would (opened
///   for writing, never replaced: `-o /dev/null` discards, `-o /dev/full`
///   fails with "No space left on device").
/// - a directory: refused ("<path>: is a directory").
class AtomicFileWriter {
public:
  /// Creates the temporary. Errors: TXL_IO_ERROR naming `path`.
  explicit AtomicFileWriter(std::string path);
  AtomicFileWriter(const AtomicFileWriter &) = delete;
  AtomicFileWriter &operator=(const AtomicFileWriter &) = delete;
  ~AtomicFileWriter();

  /// Appends `size` bytes. Errors: TXL_IO_ERROR naming `path`.
  void write(const void *data, size_t size);
  void write(std::string_view bytes) { write(bytes.data(), bytes.size()); }

  /// fsync + close + rename onto the destination (+ fsync of the directory).
  /// Errors: TXL_IO_ERROR naming `path`; the temporary is removed.
  void commit();

private:
  std::string path_;
  /// The regular file the rename replaces or creates (the path with its
  /// links followed); empty when written through.
  std::string destination_;
  /// Empty when written through.
  std::string tempPath_;
  int fd_ = -1;
};

/// One path a command line names, with its option ("--checkpoint").
struct NamedPath {
  std::string_view option;
  std::string path;
};

/// Refuses a run whose output would overwrite one of its inputs: throws
/// Error(TXL_INVALID_ARGUMENT) "<output option> <path> is the same file as
/// <input option> <path>: refusing to overwrite an input" when an output
/// and an input that both exist are one file (same device and inode, so a
/// link or another spelling of the path counts too). Empty paths and paths
/// that do not exist are passed over.
void refuseOutputsOverInputs(const std::vector<NamedPath> &outputs,
                             const std::vector<NamedPath> &inputs);

/// Writes `bytes` to `path` through an AtomicFileWriter.
void writeFileAtomic(const std::string &path, std::string_view bytes);

} // namespace txl::rt

#endif // TXL_RT_FILE_H

//===- WorkDir.cpp - `train`'s work directory -----------------------------===//
//
// The checks and the lock of a run's work directory, the temporaries a
// killed run left, and the metrics a resumed run rewrites (TrainParts.h).
//
//===----------------------------------------------------------------------===//

#include "TrainParts.h"

#include <nlohmann/json.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace txl::rt {

WorkDirLock::WorkDirLock(const std::string &dir) : path_(dir + "/.lock") {
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd_ < 0)
    fail(TXL_IO_ERROR, "{}: cannot open the work directory's lock: {}", path_,
         std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    char pid[32] = {};
    ssize_t n = ::pread(fd_, pid, sizeof pid - 1, 0);
    ::close(fd_);
    fd_ = -1;
    std::string holder = n > 0 ? std::string(pid, size_t(n)) : "";
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' '))
      holder.pop_back();
    if (err == EWOULDBLOCK)
      fail(TXL_INVALID_ARGUMENT,
           "--work-dir {} is in use by another train run{}: one run per "
           "work directory",
           dir, holder.empty() ? "" : " (pid " + holder + ")");
    fail(TXL_IO_ERROR, "{}: cannot lock: {}", path_, std::strerror(err));
  }
  std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) == 0)
    (void)!::pwrite(fd_, pid.data(), pid.size(), 0);
}

WorkDirLock::~WorkDirLock() {
  if (fd_ >= 0)
    ::close(fd_); // releases the lock
}

/// Removes what an earlier run killed mid-write left in `dir`: the
/// temporaries of AtomicFileWriter (`.<name>.tmp.XXXXXX`) of the files a
/// run writes there (issue 48, item 7). Called under the WorkDirLock, when
/// no other run can be writing them. Returns how many it removed.
static int removeStaleTemporaries(const std::string &dir,
                                  const WorkPaths &paths) {
  int removed = 0;
  DIR *entries = ::opendir(dir.c_str());
  if (!entries)
    return 0;
  std::vector<std::string> prefixes;
  for (const std::string *path :
       {&paths.log, &paths.metrics, &paths.last, &paths.best})
    prefixes.push_back("." + path->substr(path->rfind('/') + 1) + ".tmp.");
  while (dirent *entry = ::readdir(entries)) {
    std::string name = entry->d_name;
    for (const std::string &prefix : prefixes)
      if (name.size() == prefix.size() + 6 && name.rfind(prefix, 0) == 0 &&
          ::unlink((dir + "/" + name).c_str()) == 0) {
        ++removed;
        break;
      }
  }
  ::closedir(entries);
  return removed;
}

static void makeDirectory(const std::string &dir) {
  std::string partial;
  for (size_t i = 0; i <= dir.size(); ++i) {
    if (i == dir.size() || dir[i] == '/') {
      if (!partial.empty() && ::mkdir(partial.c_str(), 0777) != 0 &&
          errno != EEXIST)
        fail(TXL_IO_ERROR, "{}: cannot create directory: {}", partial,
             std::strerror(errno));
    }
    if (i < dir.size())
      partial += dir[i];
  }
}

void truncateMetrics(const std::string &path, int64_t step) {
  std::ifstream in(path);
  if (!in)
    return;
  std::string kept, line;
  while (std::getline(in, line)) {
    nlohmann::json record = nlohmann::json::parse(line, nullptr, false);
    if (record.is_object() && record.value("step", int64_t(0)) <= step &&
        record.value("kind", "") != "test")
      kept += line + "\n";
  }
  writeFileAtomic(path, kept);
}

void prepareWorkDir(const Settings &settings, const TrainOptions &options,
                    const WorkPaths &paths, bool root,
                    std::optional<WorkDirLock> &lock, std::FILE *out) {
  if (options.resume) {
    struct stat st;
    if (::stat(paths.last.c_str(), &st) != 0)
      fail(TXL_NOT_FOUND, "{}: nothing to resume (no checkpoint)", paths.last);
  }
  if (!root)
    return;
  makeDirectory(settings.workDir);
  struct stat dirStat;
  if (::stat(settings.workDir.c_str(), &dirStat) != 0 ||
      !S_ISDIR(dirStat.st_mode))
    fail(TXL_IO_ERROR, "{}: --work-dir is not a directory", settings.workDir);
  try {
    std::string probe = settings.workDir + "/.txl-write-check";
    writeFileAtomic(probe, "");
    std::remove(probe.c_str());
  } catch (const Error &error) {
    fail(TXL_IO_ERROR, "--work-dir {} is not writable: {}", settings.workDir,
         error.what());
  }
  lock.emplace(settings.workDir);
  // A fresh run would replace a previous run's checkpoints and log (issue
  // 48, item 4): only when asked to.
  struct stat previous;
  if (!options.resume && !options.overwrite &&
      ::stat(paths.last.c_str(), &previous) == 0)
    fail(TXL_INVALID_ARGUMENT,
         "{} holds a previous run ({}): give --resume to continue it, or "
         "--overwrite to start a new run there",
         settings.workDir, paths.last);
  if (int removed = removeStaleTemporaries(settings.workDir, paths))
    std::fprintf(out,
                 "| removed %d temporary file(s) a killed run left in %s |\n",
                 removed, settings.workDir.c_str());
}

} // namespace txl::rt

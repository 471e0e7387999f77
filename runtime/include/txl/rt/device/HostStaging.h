//===- HostStaging.h - Host memory of the copies in flight ------*- C++ -*-===//
//
// What lets a GPU backend copy without waiting for its queue: an upload's
// bytes are taken from the caller's memory into a block that stays until
// the copy completes, so that the caller may reuse its memory at once; a
// download lands in a block and reaches the caller's memory at the next
// synchronisation. Blocks are reused; on CUDA they are page-locked
// (cuMemAllocHost), so that the copies are truly asynchronous.
//
//===----------------------------------------------------------------------===//

#ifndef TXL_RT_DEVICE_HOSTSTAGING_H
#define TXL_RT_DEVICE_HOSTSTAGING_H

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace txl::rt {

/// A copy enqueued on a device's queue, asked about without waiting (a
/// CUevent recorded after it, a cl_event).
class CopyFence {
public:
  virtual ~CopyFence() = default;
  /// Whether the copy has completed; never waits.
  virtual bool done() = 0;
};

/// Blocks of host memory for copies in flight. Not thread-safe: a device's
/// operations reach it one at a time.
class HostStaging {
public:
  using AllocateHost = std::function<void *(size_t bytes)>;
  using FreeHost = std::function<void(void *block)>;

  /// Blocks come from `allocate` (at least 64 KiB each) and go back to
  /// `free` when the staging is destroyed.
  HostStaging(AllocateHost allocate, FreeHost free);
  /// Frees every block: the device's queue must be empty (synchronized).
  ~HostStaging();
  HostStaging(const HostStaging &) = delete;
  HostStaging &operator=(const HostStaging &) = delete;

  /// A block no copy in flight uses, holding a copy of `bytes` bytes of
  /// `source`: the backend enqueues the upload from it, then calls
  /// `inFlight` with the upload's fence. Blocks whose uploads have
  /// completed are reused first.
  void *stageUpload(const void *source, size_t bytes);
  /// The block stageUpload returned last is read by a copy until `fence`
  /// is done.
  void inFlight(void *block, std::unique_ptr<CopyFence> fence);

  /// A block of `bytes` bytes for a download, whose bytes `complete`
  /// copies into `destination` once the queue is empty.
  void *stageDownload(void *destination, size_t bytes);

  /// The device's queue is empty: copies every staged download into its
  /// destination and makes every block free, then releases the largest
  /// blocks until at most kRetainedBytes are kept (a checkpoint's uploads
  /// would otherwise keep a model's size of host memory, page-locked on
  /// CUDA, for the rest of the run).
  void complete();
  /// What complete() keeps for the next copies (a segment's token ids and
  /// NLL need far less).
  static constexpr size_t kRetainedBytes = size_t(4) << 20;

  /// Blocks allocated, and of them those a copy may still use.
  size_t blocks() const { return blocks_.size(); }
  size_t blocksInUse() const;

private:
  struct Block {
    void *data = nullptr;
    size_t capacity = 0;
    enum State { Free, Uploading, Downloading } state = Free;
    std::unique_ptr<CopyFence> fence;
    void *destination = nullptr;
    size_t bytes = 0;
    /// A download's place in the order they were staged.
    uint64_t sequence = 0;
  };

  /// A free block of at least `bytes` (the smallest), after reclaiming
  /// the blocks of completed uploads; allocates one when none is free.
  Block &take(size_t bytes);

  AllocateHost allocate_;
  FreeHost free_;
  std::vector<Block> blocks_;
  uint64_t nextSequence_ = 0;
};

} // namespace txl::rt

#endif // TXL_RT_DEVICE_HOSTSTAGING_H

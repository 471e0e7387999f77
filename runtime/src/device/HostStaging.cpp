//===- HostStaging.cpp - Host memory of the copies in flight --------------===//

#include "txl/rt/device/HostStaging.h"

#include "txl/rt/support/Status.h"

#include <algorithm>
#include <cstring>

namespace txl::rt {

namespace {
/// The smallest block: small uploads (token ids) share few blocks.
constexpr size_t kMinBlockBytes = size_t(64) << 10;
} // namespace

HostStaging::HostStaging(AllocateHost allocate, FreeHost free)
    : allocate_(std::move(allocate)), free_(std::move(free)) {}

HostStaging::~HostStaging() {
  for (Block &block : blocks_)
    free_(block.data);
}

size_t HostStaging::blocksInUse() const {
  return size_t(
      std::count_if(blocks_.begin(), blocks_.end(),
                    [](const Block &b) { return b.state != Block::Free; }));
}

HostStaging::Block &HostStaging::take(size_t bytes) {
  Block *best = nullptr;
  for (Block &block : blocks_) {
    if (block.state == Block::Uploading && block.fence->done()) {
      block.state = Block::Free;
      block.fence.reset();
    }
    if (block.state == Block::Free && block.capacity >= bytes &&
        (!best || block.capacity < best->capacity))
      best = &block;
  }
  if (best)
    return *best;
  Block block;
  block.capacity = std::max(bytes, kMinBlockBytes);
  block.data = allocate_(block.capacity);
  if (!block.data)
    fail(TXL_UNAVAILABLE, "no host memory for a {}-byte staging block",
         block.capacity);
  blocks_.push_back(std::move(block));
  return blocks_.back();
}

void *HostStaging::stageUpload(const void *source, size_t bytes) {
  Block &block = take(bytes);
  std::memcpy(block.data, source, bytes);
  block.bytes = bytes;
  return block.data;
}

void HostStaging::inFlight(void *data, std::unique_ptr<CopyFence> fence) {
  for (Block &block : blocks_)
    if (block.data == data) {
      block.state = Block::Uploading;
      block.fence = std::move(fence);
      return;
    }
  fail(TXL_INVALID_ARGUMENT, "{} is no staging block", data);
}

void *HostStaging::stageDownload(void *destination, size_t bytes) {
  Block &block = take(bytes);
  block.state = Block::Downloading;
  block.sequence = nextSequence_++;
  block.destination = destination;
  block.bytes = bytes;
  return block.data;
}

void HostStaging::complete() {
  // In the order they were enqueued: a later download into the same
  // memory wins, as it would without staging.
  std::vector<Block *> downloads;
  for (Block &block : blocks_)
    if (block.state == Block::Downloading)
      downloads.push_back(&block);
  std::sort(
      downloads.begin(), downloads.end(),
      [](const Block *a, const Block *b) { return a->sequence < b->sequence; });
  for (const Block *block : downloads)
    std::memcpy(block->destination, block->data, block->bytes);
  size_t kept = 0;
  for (Block &block : blocks_) {
    block.state = Block::Free;
    block.fence.reset();
    block.destination = nullptr;
    kept += block.capacity;
  }
  // The smallest blocks stay.
  std::sort(blocks_.begin(), blocks_.end(), [](const Block &a, const Block &b) {
    return a.capacity < b.capacity;
  });
  while (kept > kRetainedBytes) {
    kept -= blocks_.back().capacity;
    free_(blocks_.back().data);
    blocks_.pop_back();
  }
}

} // namespace txl::rt

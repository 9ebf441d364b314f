// The batch memory pool behind allocateBatchMemory (decode-types.h): blocks freed by earlier
// batches are handed to later ones instead of back to malloc.
#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <unordered_map>

#include <sys/mman.h>
#include <unistd.h>

#include "decode-types.h"

namespace ec {

namespace {

class BlockPool {
 public:
  void* take(size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    // Best fit among blocks no more than twice the request, so small asks don't pin big blocks.
    auto it = blocks_.lower_bound(bytes);
    if (it == blocks_.end() || it->first > 2 * bytes) return nullptr;
    void* p = it->second;
    sizes_[p] = it->first;  // first: if this throws, the block stays in the pool as it was
    held_ -= it->first;
    inUse(it->first);
    blocks_.erase(it);
    return p;
  }
  /**
   * Keeps `p` for reuse unless the pool is full; returns false when the caller must free it.
   * Full is past the cap, or past two of the largest block ever asked for, or past the most
   * bytes of blocks ever in use at once, where that is larger (up to four times the cap): a batch
   * bigger than the cap (240 frames of 1080p in one call are 746 MB, in one block or in a block
   * per frame decoded in place) is kept for the next call instead of being freed and faulted in
   * afresh every call, page by zero-filled page. Two, because V8 collects lazily: one collection
   * often frees two calls' batches at once, and the next two calls want both. Those blocks were
   * in use a moment ago, so keeping them holds no more than the caller's own batches did; the
   * bound keeps one giant call (6 GB of float frames) from pinning its memory for the life of
   * the process.
   */
  bool give(void* p, size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    live_ -= std::min(live_, bytes);
    if (held_ + bytes > std::max(cap_, std::min(std::max(2 * largest_, peakLive_), 4 * cap_))) return false;
    try {
      blocks_.emplace(bytes, p);
    } catch (const std::bad_alloc&) {
      return false;  // no memory for the map's node: the caller frees the block instead
    }
    held_ += bytes;
    return true;
  }
  /** Real size of a block handed out by take() (it may exceed what was asked). */
  size_t realSize(void* p, size_t asked) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = sizes_.find(p);
    if (it == sizes_.end()) return asked;
    size_t real = it->second;
    sizes_.erase(it);
    return real;
  }
  void remember(void* p, size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    sizes_[p] = bytes;
    largest_ = std::max(largest_, bytes);
    inUse(bytes);
  }

 private:
  std::mutex mutex_;
  std::multimap<size_t, void*> blocks_;
  std::unordered_map<void*, size_t> sizes_;
  size_t held_ = 0;
  void inUse(size_t bytes) {
    live_ += bytes;
    peakLive_ = std::max(peakLive_, live_);
  }

  size_t largest_ = 0;   // the largest block allocated for a batch so far
  size_t live_ = 0;      // bytes of pool-sized blocks handed out and not yet given back
  size_t peakLive_ = 0;  // the most of them at once
  size_t cap_ = [] {
    const char* mb = std::getenv("EC_NATIVE_POOL_MB");
    return static_cast<size_t>(mb ? std::strtoull(mb, nullptr, 10) : 512) << 20;
  }();
};

BlockPool& blockPool() {
  static BlockPool* pool = new BlockPool();  // never destroyed: finalizers may run at exit
  return *pool;
}

constexpr size_t kPooledMin = 1 << 20;  // smaller blocks are cheap for malloc's own caches

// Pooled blocks are mapped here and marked MADV_DONTFORK. A fork (every child_process spawn on
// Linux) otherwise write-protects every page of the pool for copy-on-write, and each first
// write after it faults again: 0.3 ms per 1080p frame for a process that spawns one child per
// GOP. No child ever execs into them. That includes blocks of one frame each (frames decoded in
// place, 3 MB at 1080p), which malloc would keep on its heap.
constexpr size_t kMappedMin = kPooledMin;

size_t pageRound(size_t bytes) {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

void* allocateBlock(size_t bytes) {
  if (bytes < kMappedMin) return std::malloc(std::max<size_t>(bytes, 1));
  void* p = mmap(nullptr, pageRound(bytes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  madvise(p, pageRound(bytes), MADV_DONTFORK);  // best effort: without it, only slower after a fork
  return p;
}

void freeBlock(void* p, size_t bytes) noexcept {
  if (bytes < kMappedMin) {
    std::free(p);
  } else {
    munmap(p, pageRound(bytes));
  }
}

}  // namespace

void* allocateBatchMemory(size_t bytes) {
  if (bytes >= kPooledMin) {
    if (void* p = blockPool().take(bytes)) return p;
  }
  void* p = allocateBlock(bytes);
  if (!p) throw std::bad_alloc();
  if (bytes >= kPooledMin) {
    try {
      blockPool().remember(p, bytes);
    } catch (...) {
      freeBlock(p, bytes);
      throw;
    }
  }
  return p;
}

void freeBatchMemory(void* p, size_t bytes) noexcept {
  if (!p) return;
  if (bytes >= kPooledMin) {
    size_t real = blockPool().realSize(p, bytes);
    if (blockPool().give(p, real)) return;
    freeBlock(p, real);
    return;
  }
  std::free(p);
}

}  // namespace ec

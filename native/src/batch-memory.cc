// The batch memory pool behind allocateBatchMemory (decode-types.h): blocks freed by earlier
// batches are handed to later ones instead of back to malloc.
#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <unordered_map>

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
    blocks_.erase(it);
    return p;
  }
  /**
   * Keeps `p` for reuse unless the pool is full; returns false when the caller must free it.
   * Full is past the cap, or past the largest block ever asked for where that is larger (up to
   * four times the cap): a batch bigger than the cap (240 frames of 1080p in one call are 746 MB)
   * is kept for the next call instead of being freed and faulted in afresh every call, page by
   * zero-filled page. That block was in use a moment ago, so keeping it holds no more than the
   * caller's own batches did; the bound keeps one giant call (6 GB of float frames) from pinning
   * its memory for the life of the process.
   */
  bool give(void* p, size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (held_ + bytes > std::max(cap_, std::min(largest_, 4 * cap_))) return false;
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
  }

 private:
  std::mutex mutex_;
  std::multimap<size_t, void*> blocks_;
  std::unordered_map<void*, size_t> sizes_;
  size_t held_ = 0;
  size_t largest_ = 0;  // the largest block malloc'd for a batch so far
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

}  // namespace

void* allocateBatchMemory(size_t bytes) {
  if (bytes >= kPooledMin) {
    if (void* p = blockPool().take(bytes)) return p;
  }
  void* p = std::malloc(std::max<size_t>(bytes, 1));
  if (!p) throw std::bad_alloc();
  if (bytes >= kPooledMin) {
    try {
      blockPool().remember(p, bytes);
    } catch (...) {
      std::free(p);
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
  }
  std::free(p);
}

}  // namespace ec

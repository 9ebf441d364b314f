// Maps a file another process maps too (a shared-memory slot under /dev/shm) into this one, so
// the decoder writes frames straight into the memory the other process reads. Thread-safe.
#pragma once

#include <cstddef>

namespace ec {

/** A read-write MAP_SHARED mapping of the first `bytes` of `fd`; throws NativeException (ERR_MAP_FAILED). */
void* mapSharedFile(int fd, size_t bytes);

void unmapSharedFile(void* data, size_t bytes) noexcept;

}  // namespace ec

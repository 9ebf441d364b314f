#include "shared-map.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "errors.h"

namespace ec {

void* mapSharedFile(int fd, size_t bytes) {
  void* data = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (data == MAP_FAILED)
    throw NativeException("ERR_MAP_FAILED", "Expected to map " + std::to_string(bytes) + " bytes of descriptor " +
                                                std::to_string(fd) + " but mmap failed: " + std::strerror(errno));
  return data;
}

void unmapSharedFile(void* data, size_t bytes) noexcept { munmap(data, bytes); }

}  // namespace ec

// Reads a byte range of a local file (an origin-cache block) into memory, reporting the
// path taken — a silent fallback from GPUDirect Storage is what users of GDS complain of.
// Thread-safe: every call opens its own file descriptor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace ec {

struct ReadResult {
  size_t bytesRead = 0;
  std::string mode;  // "cufile" | "compat" | "host"
};

/** pread into host memory; stops early only at end of file. */
ReadResult readIntoHost(const std::string& path, uint64_t offset, size_t length, uint8_t* target);

/**
 * Into device memory: cuFile when libcufile loads and its driver opens, else pread into
 * pinned host memory plus a copy ("compat"). Throws ERR_DEVICE_UNAVAILABLE without CUDA.
 */
ReadResult readIntoDevice(const std::string& path, uint64_t offset, size_t length, int deviceIndex, uint64_t target);

/** Whether cuFile is usable here, and if not why (for devices()). */
bool cufileAvailable(std::string* reason);

}  // namespace ec

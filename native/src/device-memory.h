// Device memory that JS holds (allocDevice's buffers, CUDA IPC): the part of the CUDA driver the
// binding calls. Declared in every build; a build without CUDA links cuda-stubs.cc, whose
// definitions throw ERR_DEVICE_UNAVAILABLE. Thread-safe (the driver's own guarantees).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace ec::cuda {

/** Device memory owned by a JS buffer; freed by its finalizer. */
uint64_t allocDevice(int index, size_t bytes);
void freeDevice(int index, uint64_t pointer);
void copyDeviceToHost(int index, void* dst, uint64_t src, size_t bytes);

/**
 * Copies a pitched region (rows of `rowBytes`) between device pointers and waits for it, so a
 * reader in another process sees the bytes once this returns.
 */
void copyDevice2D(int index, uint64_t dst, size_t dstPitch, uint64_t src, size_t srcPitch, size_t rowBytes, size_t rows);
/** The CUDA IPC handle of an allocation from allocDevice: another process opens the same memory with it. */
std::string ipcHandle(int index, uint64_t pointer);

}  // namespace ec::cuda

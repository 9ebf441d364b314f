// The CUDA driver API, loaded with dlopen at run time so one build runs with or without
// a GPU. Only compiled where the CUDA headers are found (EC_WITH_CUDA).
// Thread-safe: the library is loaded once (std::call_once); the table is then read-only.
#pragma once

#ifdef EC_WITH_CUDA

#include <cuda.h>

#include "device-memory.h"

#include <cstdint>
#include <memory>
#include <string>

namespace ec::cuda {

struct Driver {
  CUresult (*cuInit)(unsigned int);
  CUresult (*cuDeviceGetCount)(int*);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDeviceGetName)(char*, int, CUdevice);
  CUresult (*cuDeviceTotalMem)(size_t*, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuCtxPushCurrent)(CUcontext);
  CUresult (*cuCtxPopCurrent)(CUcontext*);
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemAllocHost)(void**, size_t);
  CUresult (*cuMemFreeHost)(void*);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, size_t);
  CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, size_t);
  CUresult (*cuGetErrorString)(CUresult, const char**);
  CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t);
  CUresult (*cuModuleLoadData)(CUmodule*, const void*);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
                             unsigned int, unsigned int, CUstream, void**, void**);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuMemcpy2D)(const CUDA_MEMCPY2D*);
  CUresult (*cuIpcGetMemHandle)(CUipcMemHandle*, CUdeviceptr);
};

/** The loaded and initialised driver, or nullptr with `reason` saying why not. */
const Driver* driver(std::string* reason = nullptr);

/** Throws ERR_CUDA with the driver's own words when `result` is an error. */
void check(CUresult result, const char* what);

/** Makes device `index`'s primary context current for this scope (shared with PyTorch et al.). */
class ScopedContext {
 public:
  explicit ScopedContext(int index);
  ~ScopedContext();
  ScopedContext(const ScopedContext&) = delete;
  ScopedContext& operator=(const ScopedContext&) = delete;
};

/** Device memory released with the last reference (a clip's converted frames share one). */
std::shared_ptr<void> allocShared(int index, size_t bytes);

}  // namespace ec::cuda

#endif  // EC_WITH_CUDA

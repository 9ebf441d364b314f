#ifdef EC_WITH_CUDA

#include "cuda-driver.h"

#include <dlfcn.h>

#include <map>
#include <mutex>

#include "errors.h"

namespace ec::cuda {

namespace {

Driver g_driver;
const Driver* g_loaded = nullptr;
std::string g_reason;

template <typename F>
bool bind(void* lib, F& slot, const char* name) {
  slot = reinterpret_cast<F>(dlsym(lib, name));
  if (!slot) g_reason = std::string("libcuda.so.1 lacks ") + name + " (driver too old?)";
  return slot != nullptr;
}

void load() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    g_reason = "libcuda.so.1 was not found: no NVIDIA driver on this host";
    return;
  }
  Driver d{};
  bool ok = bind(lib, d.cuInit, "cuInit") && bind(lib, d.cuDeviceGetCount, "cuDeviceGetCount") &&
            bind(lib, d.cuDeviceGet, "cuDeviceGet") && bind(lib, d.cuDeviceGetName, "cuDeviceGetName") &&
            bind(lib, d.cuDeviceTotalMem, "cuDeviceTotalMem_v2") &&
            bind(lib, d.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain") &&
            bind(lib, d.cuCtxPushCurrent, "cuCtxPushCurrent_v2") && bind(lib, d.cuCtxPopCurrent, "cuCtxPopCurrent_v2") &&
            bind(lib, d.cuMemAlloc, "cuMemAlloc_v2") && bind(lib, d.cuMemFree, "cuMemFree_v2") &&
            bind(lib, d.cuMemAllocHost, "cuMemAllocHost_v2") && bind(lib, d.cuMemFreeHost, "cuMemFreeHost") &&
            bind(lib, d.cuMemcpyHtoD, "cuMemcpyHtoD_v2") && bind(lib, d.cuMemcpyDtoH, "cuMemcpyDtoH_v2") &&
            bind(lib, d.cuGetErrorString, "cuGetErrorString") && bind(lib, d.cuMemsetD8, "cuMemsetD8_v2") &&
            bind(lib, d.cuModuleLoadData, "cuModuleLoadData") &&
            bind(lib, d.cuModuleGetFunction, "cuModuleGetFunction") && bind(lib, d.cuLaunchKernel, "cuLaunchKernel") &&
            bind(lib, d.cuCtxSynchronize, "cuCtxSynchronize") && bind(lib, d.cuMemcpy2D, "cuMemcpy2D_v2") &&
            bind(lib, d.cuIpcGetMemHandle, "cuIpcGetMemHandle");
  if (!ok) return;
  CUresult r = d.cuInit(0);
  if (r != CUDA_SUCCESS) {
    const char* text = nullptr;
    d.cuGetErrorString(r, &text);
    g_reason = std::string("cuInit failed: ") + (text ? text : std::to_string(r));
    return;
  }
  g_driver = d;
  g_loaded = &g_driver;
}

}  // namespace

const Driver* driver(std::string* reason) {
  static std::once_flag once;
  std::call_once(once, load);
  if (!g_loaded && reason) *reason = g_reason;
  return g_loaded;
}

void check(CUresult result, const char* what) {
  if (result == CUDA_SUCCESS) return;
  const char* text = nullptr;
  if (g_loaded) g_loaded->cuGetErrorString(result, &text);
  throw NativeException("ERR_CUDA", std::string(what) + " failed: " + (text ? text : std::to_string(result)));
}

ScopedContext::ScopedContext(int index) {
  std::string reason;
  const Driver* d = driver(&reason);
  if (!d) throw NativeException("ERR_DEVICE_UNAVAILABLE", "cuda:" + std::to_string(index) + " is unavailable: " + reason);
  // Retained once per device for the life of the process, like the runtime API does.
  static std::mutex mutex;
  static std::map<int, CUcontext> contexts;
  CUcontext ctx;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = contexts.find(index);
    if (it == contexts.end()) {
      CUdevice device;
      check(d->cuDeviceGet(&device, index), "cuDeviceGet");
      check(d->cuDevicePrimaryCtxRetain(&ctx, device), "cuDevicePrimaryCtxRetain");
      contexts[index] = ctx;
    } else {
      ctx = it->second;
    }
  }
  check(d->cuCtxPushCurrent(ctx), "cuCtxPushCurrent");
}

ScopedContext::~ScopedContext() {
  CUcontext popped;
  driver()->cuCtxPopCurrent(&popped);
}

uint64_t allocDevice(int index, size_t bytes) {
  ScopedContext scope(index);
  CUdeviceptr ptr = 0;
  check(driver()->cuMemAlloc(&ptr, bytes), "cuMemAlloc");
  return static_cast<uint64_t>(ptr);
}

void freeDevice(int index, uint64_t pointer) {
  ScopedContext scope(index);
  driver()->cuMemFree(static_cast<CUdeviceptr>(pointer));
}

void copyDeviceToHost(int index, void* dst, uint64_t src, size_t bytes) {
  ScopedContext scope(index);
  check(driver()->cuMemcpyDtoH(dst, static_cast<CUdeviceptr>(src), bytes), "cuMemcpyDtoH");
}

void copyDevice2D(int index, uint64_t dst, size_t dstPitch, uint64_t src, size_t srcPitch, size_t rowBytes, size_t rows) {
  ScopedContext scope(index);
  CUDA_MEMCPY2D m{};
  m.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  m.srcDevice = static_cast<CUdeviceptr>(src);
  m.srcPitch = srcPitch;
  m.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  m.dstDevice = static_cast<CUdeviceptr>(dst);
  m.dstPitch = dstPitch;
  m.WidthInBytes = rowBytes;
  m.Height = rows;
  check(driver()->cuMemcpy2D(&m), "cuMemcpy2D");
  // Device-to-device copies may return before they finish; the other process reads right after.
  check(driver()->cuCtxSynchronize(), "cuCtxSynchronize");
}

std::string ipcHandle(int index, uint64_t pointer) {
  ScopedContext scope(index);
  CUipcMemHandle handle;
  check(driver()->cuIpcGetMemHandle(&handle, static_cast<CUdeviceptr>(pointer)), "cuIpcGetMemHandle");
  return std::string(handle.reserved, sizeof(handle.reserved));
}

std::shared_ptr<void> allocShared(int index, size_t bytes) {
  uint64_t pointer = allocDevice(index, bytes);
  return std::shared_ptr<void>(reinterpret_cast<void*>(static_cast<uintptr_t>(pointer)),
                               [index](void* p) {
                                 try {
                                   freeDevice(index, reinterpret_cast<uintptr_t>(p));
                                 } catch (...) {  // a deleter must not throw; the context is gone at exit
                                 }
                               });
}

}  // namespace ec::cuda

#endif  // EC_WITH_CUDA

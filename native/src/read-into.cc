#include "read-into.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "errors.h"

namespace ec {

namespace {

struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

[[noreturn]] void ioError(const std::string& what, const std::string& path, int err) {
  std::string code = err == ENOENT ? "ERR_FILE_NOT_FOUND" : "ERR_READ_FAILED";
  throw NativeException(code, what + " " + path + ": " + std::strerror(err));
}

int openOrThrow(const std::string& path, int flags) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) ioError("Cannot open", path, errno);
  return fd;
}

size_t preadFully(int fd, const std::string& path, uint64_t offset, size_t length, uint8_t* target) {
  size_t done = 0;
  while (done < length) {
    ssize_t n = ::pread(fd, target + done, length - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      ioError("Cannot read", path, errno);
    }
    if (n == 0) break;  // end of file
    done += static_cast<size_t>(n);
  }
  return done;
}

}  // namespace

ReadResult readIntoHost(const std::string& path, uint64_t offset, size_t length, uint8_t* target) {
  FdCloser file{openOrThrow(path, O_RDONLY)};
  return ReadResult{preadFully(file.fd, path, offset, length, target), "host"};
}

}  // namespace ec

#ifdef EC_WITH_CUDA

#include <dlfcn.h>

#include <mutex>

#include "cuda-driver.h"

namespace ec {

namespace {

// The few cuFile entry points used, declared here (ABI of cufile.h, CUDA 11.4+) so the
// build needs no GDS headers; libcufile.so.0 is loaded at run time.
struct CuFileError {
  int err;  // CUfileOpError; 0 is success
  CUresult cuErr;
};
struct CuFileDescr {
  int type;  // CU_FILE_HANDLE_TYPE_OPAQUE_FD = 1
  union {
    int fd;
    void* handle;
  } handle;
  const void* fsOps;
};
using CuFileHandle = void*;

struct CuFile {
  CuFileError (*driverOpen)();
  CuFileError (*handleRegister)(CuFileHandle*, CuFileDescr*);
  void (*handleDeregister)(CuFileHandle);
  ssize_t (*read)(CuFileHandle, void*, size_t, off_t, off_t);
};

CuFile g_cufile;
const CuFile* g_cufileLoaded = nullptr;
std::string g_cufileReason;

void loadCuFile() {
  std::string cudaReason;
  if (!cuda::driver(&cudaReason)) {
    g_cufileReason = cudaReason;
    return;
  }
  void* lib = dlopen("libcufile.so.0", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    g_cufileReason = "libcufile.so.0 was not found (install GPUDirect Storage: the nvidia-gds package)";
    return;
  }
  CuFile f{};
  f.driverOpen = reinterpret_cast<decltype(f.driverOpen)>(dlsym(lib, "cuFileDriverOpen"));
  f.handleRegister = reinterpret_cast<decltype(f.handleRegister)>(dlsym(lib, "cuFileHandleRegister"));
  f.handleDeregister = reinterpret_cast<decltype(f.handleDeregister)>(dlsym(lib, "cuFileHandleDeregister"));
  f.read = reinterpret_cast<decltype(f.read)>(dlsym(lib, "cuFileRead"));
  if (!f.driverOpen || !f.handleRegister || !f.handleDeregister || !f.read) {
    g_cufileReason = "libcufile.so.0 lacks the cuFile entry points";
    return;
  }
  CuFileError e = f.driverOpen();
  if (e.err != 0) {
    g_cufileReason = "cuFileDriverOpen failed with error " + std::to_string(e.err) +
                     " (is the nvidia-fs module loaded? see /etc/cufile.json)";
    return;
  }
  g_cufile = f;
  g_cufileLoaded = &g_cufile;
}

const CuFile* cufile(std::string* reason) {
  static std::once_flag once;
  std::call_once(once, loadCuFile);
  if (!g_cufileLoaded && reason) *reason = g_cufileReason;
  return g_cufileLoaded;
}

struct PinnedDeleter {
  void operator()(void* p) const { cuda::driver()->cuMemFreeHost(p); }
};

ReadResult readCompat(const std::string& path, uint64_t offset, size_t length, uint64_t target) {
  constexpr size_t kChunk = 8 << 20;
  size_t chunk = std::min(length, kChunk);
  void* raw = nullptr;
  cuda::check(cuda::driver()->cuMemAllocHost(&raw, std::max<size_t>(chunk, 1)), "cuMemAllocHost");
  std::unique_ptr<void, PinnedDeleter> pinned(raw);
  FdCloser file{openOrThrow(path, O_RDONLY)};
  size_t done = 0;
  while (done < length) {
    size_t want = std::min(chunk, length - done);
    size_t got = preadFully(file.fd, path, offset + done, want, static_cast<uint8_t*>(raw));
    if (got > 0) cuda::check(cuda::driver()->cuMemcpyHtoD(target + done, raw, got), "cuMemcpyHtoD");
    done += got;
    if (got < want) break;
  }
  return ReadResult{done, "compat"};
}

}  // namespace

bool cufileAvailable(std::string* reason) { return cufile(reason) != nullptr; }

ReadResult readIntoDevice(const std::string& path, uint64_t offset, size_t length, int deviceIndex, uint64_t target) {
  cuda::ScopedContext scope(deviceIndex);
  const CuFile* f = cufile(nullptr);
  if (!f) return readCompat(path, offset, length, target);
  // O_DIRECT is what lets GDS DMA straight to the GPU; cuFile falls back internally without it.
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
  if (fd < 0) fd = openOrThrow(path, O_RDONLY);
  FdCloser file{fd};
  CuFileDescr descr{};
  descr.type = 1;
  descr.handle.fd = fd;
  CuFileHandle handle = nullptr;
  if (f->handleRegister(&handle, &descr).err != 0) return readCompat(path, offset, length, target);
  struct Deregister {
    const CuFile* f;
    CuFileHandle h;
    ~Deregister() { f->handleDeregister(h); }
  } deregister{f, handle};
  size_t done = 0;
  while (done < length) {
    ssize_t n = f->read(handle, reinterpret_cast<void*>(target), length - done, static_cast<off_t>(offset + done),
                        static_cast<off_t>(done));
    if (n < 0) throw NativeException("ERR_READ_FAILED", "cuFileRead of " + path + " failed: " + std::to_string(n));
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return ReadResult{done, "cufile"};
}

}  // namespace ec

#else  // no CUDA headers at build time

namespace ec {

bool cufileAvailable(std::string* reason) {
  if (reason) *reason = "this build has no CUDA support (CUDA headers were not found when it was compiled)";
  return false;
}

ReadResult readIntoDevice(const std::string&, uint64_t, size_t, int deviceIndex, uint64_t) {
  throw NativeException("ERR_DEVICE_UNAVAILABLE", "cuda:" + std::to_string(deviceIndex) +
                                                      " is unavailable: this build has no CUDA support");
}

}  // namespace ec

#endif

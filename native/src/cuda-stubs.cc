// A build without the CUDA headers links this instead of the driver's and the kernels' device
// entry points, so the binding calls them the same way in every build: each one throws.
#include "device-memory.h"
#include "errors.h"
#include "kernels/kernels.h"

namespace ec {

namespace {

[[noreturn]] void noCuda() { throw NativeException("ERR_DEVICE_UNAVAILABLE", "This build has no CUDA support"); }

}  // namespace

namespace cuda {

uint64_t allocDevice(int, size_t) { noCuda(); }
void freeDevice(int, uint64_t) { noCuda(); }
void copyDeviceToHost(int, void*, uint64_t, size_t) { noCuda(); }
void copyDevice2D(int, uint64_t, size_t, uint64_t, size_t, size_t, size_t) { noCuda(); }
std::string ipcHandle(int, uint64_t) { noCuda(); }

}  // namespace cuda

namespace kernels {

void convertOnDevice(int, const ConvertParams&) { noCuda(); }
std::vector<uint32_t> lumaStatsOnDevice(int, const std::vector<LumaSource>&, int) { noCuda(); }

}  // namespace kernels

}  // namespace ec

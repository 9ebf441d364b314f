#include "host-report.h"

#include "codec-config.h"
#include "device-backend.h"
#include "kernels/kernels.h"
#include "nvdec-caps.h"
#include "read-into.h"

#ifdef EC_WITH_CUDA
#include <dlfcn.h>

#include "cuda-driver.h"
#endif

namespace ec {

#ifdef EC_WITH_CUDA
bool cudaDecodeSupported(AVCodecID id);  // cuda-backend.cc
#endif

HostReport probeHost() {
  HostReport report;
  report.backends = registeredBackends();
  report.kernels = kernels::compiled(&report.kernelsReason);
  for (const std::string& codec : knownCodecs()) {
    const AVCodec* decoder = avcodec_find_decoder(codecIdFor(codec));
    report.cpuCodecs.push_back({codec, decoder ? decoder->name : ""});
  }
#ifdef EC_WITH_CUDA
  report.cudaCompiled = true;
  std::string reason;
  const cuda::Driver* d = cuda::driver(&reason);
  if (d) {
    int count = 0;
    if (d->cuDeviceGetCount(&count) == CUDA_SUCCESS) {
      for (int i = 0; i < count; ++i) {
        CUdevice device;
        if (d->cuDeviceGet(&device, i) != CUDA_SUCCESS) continue;
        char name[256] = {0};
        size_t memory = 0;
        d->cuDeviceGetName(name, sizeof name - 1, device);
        d->cuDeviceTotalMem(&memory, device);
        report.cudaDevices.push_back({i, name, static_cast<uint64_t>(memory), {}});
      }
    }
    if (report.cudaDevices.empty()) reason = "the NVIDIA driver reports no CUDA device";
  }
  report.cudaReason = report.cudaDevices.empty() ? reason : "";
  void* nvcuvid = dlopen("libnvcuvid.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!nvcuvid) {
    report.nvdecReason = "libnvcuvid.so.1 was not found (it ships with the NVIDIA driver)";
  } else {
    dlclose(nvcuvid);
    if (!report.cudaDevices.empty()) {
      for (const std::string& codec : knownCodecs()) {
        if (cudaDecodeSupported(codecIdFor(codec))) report.nvdecCodecs.push_back(codec);
      }
      for (CudaDeviceInfo& device : report.cudaDevices) {
        for (const std::string& codec : report.nvdecCodecs) {
          NvdecSupport s = nvdecSupport(device.index, codec);
          device.nvdec.push_back({codec, s.probed, s.supported, s.reason});
        }
      }
    } else {
      report.nvdecReason = report.cudaReason;
    }
  }
  report.cufile = cufileAvailable(&report.cufileReason);
  report.deviceReadMode = report.cufile ? "cufile" : report.cudaDevices.empty() ? "none" : "compat";
#else
  report.cudaReason = "this build has no CUDA support (CUDA headers were not found when it was compiled)";
  report.nvdecReason = report.cudaReason;
  cufileAvailable(&report.cufileReason);
  report.deviceReadMode = "none";
#endif
  return report;
}

}  // namespace ec

// What this host can do: decode backends, codecs per device, CUDA devices, cuFile.
// Thread-safe: probes are loaded once and then read-only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ec {

struct NvdecCodec {
  std::string codec;
  bool probed = false;  // the driver was asked (cuvidGetDecoderCaps); else `supported` assumes the hwaccel works
  bool supported = false;
  std::string reason;  // why not; empty when supported
};

struct CudaDeviceInfo {
  int index = 0;
  std::string name;
  uint64_t memoryBytes = 0;
  std::vector<NvdecCodec> nvdec;  // per codec with a CUDA hwaccel in this libavcodec: does this device's NVDEC decode it
};

struct CodecSupport {
  std::string codec;    // "h264"
  std::string decoder;  // libavcodec decoder name, "" when none
};

struct HostReport {
  std::vector<std::string> backends;  // compiled in: "cpu", "cuda"
  std::vector<CodecSupport> cpuCodecs;
  bool cudaCompiled = false;
  std::string cudaReason;  // why no CUDA device is usable; empty when one is
  bool kernels = false;     // the CUDA kernels (GPU conversion, GPU label statistics) are embedded
  std::string kernelsReason;
  std::vector<CudaDeviceInfo> cudaDevices;
  std::vector<std::string> nvdecCodecs;  // codecs with a CUDA hwaccel in this libavcodec
  std::string nvdecReason;
  bool cufile = false;
  std::string cufileReason;
  std::string deviceReadMode;  // mode readInto uses for device targets: "cufile" | "compat" | "none"
};

HostReport probeHost();

}  // namespace ec

#include "nvdec-caps.h"

#include <map>
#include <mutex>
#include <utility>

#if defined(EC_WITH_CUDA) && __has_include(<ffnvcodec/dynlink_loader.h>)
#define EC_WITH_NVDEC_CAPS
// ffnvcodec's loader dlopens libcuda and libnvcuvid itself; its CUDA types are its own, so this
// file includes no cuda.h (cuda-driver.h) beside it.
#define FFNV_LOG_FUNC(logctx, msg, ...)
#define FFNV_DEBUG_LOG_FUNC(logctx, msg, ...)
#include <ffnvcodec/dynlink_loader.h>
#endif

namespace ec {

#ifdef EC_WITH_NVDEC_CAPS
namespace {

struct Loaded {
  CudaFunctions* cuda = nullptr;
  CuvidFunctions* cuvid = nullptr;
  std::string reason;
};

const Loaded& loaded() {
  static Loaded l = [] {
    Loaded out;
    if (cuda_load_functions(&out.cuda, nullptr) < 0 || out.cuda->cuInit(0) != CUDA_SUCCESS) {
      out.reason = "the CUDA driver (libcuda.so.1) cannot be loaded";
    } else if (cuvid_load_functions(&out.cuvid, nullptr) < 0 || !out.cuvid->cuvidGetDecoderCaps) {
      out.reason = "libnvcuvid.so.1 (it ships with the NVIDIA driver) cannot be loaded or has no cuvidGetDecoderCaps";
    }
    return out;
  }();
  return l;
}

bool codecType(const std::string& codec, cudaVideoCodec* type) {
  static const std::map<std::string, cudaVideoCodec> types = {
      {"h264", cudaVideoCodec_H264}, {"hevc", cudaVideoCodec_HEVC}, {"vp9", cudaVideoCodec_VP9}, {"av1", cudaVideoCodec_AV1}};
  auto it = types.find(codec);
  if (it == types.end()) return false;
  *type = it->second;
  return true;
}

NvdecSupport ask(int index, const std::string& codec) {
  const Loaded& l = loaded();
  if (!l.reason.empty()) return {true, false, l.reason};
  CUVIDDECODECAPS caps = {};
  if (!codecType(codec, &caps.eCodecType)) return {true, false, "NVDEC has no " + codec + " decoder"};
  caps.eChromaFormat = cudaVideoChromaFormat_420;
  caps.nBitDepthMinus8 = 0;
  CUdevice device;
  CUcontext ctx = nullptr;
  if (l.cuda->cuDeviceGet(&device, index) != CUDA_SUCCESS) return {true, false, "there is no cuda:" + std::to_string(index)};
  if (l.cuda->cuDevicePrimaryCtxRetain(&ctx, device) != CUDA_SUCCESS) {
    return {true, false, "cannot open cuda:" + std::to_string(index) + "'s primary context"};
  }
  bool pushed = l.cuda->cuCtxPushCurrent(ctx) == CUDA_SUCCESS;
  CUresult result = pushed ? l.cuvid->cuvidGetDecoderCaps(&caps) : CUDA_ERROR_UNKNOWN;
  CUcontext popped;
  if (pushed) l.cuda->cuCtxPopCurrent(&popped);
  l.cuda->cuDevicePrimaryCtxRelease(device);
  if (!pushed) return {true, false, "cannot make cuda:" + std::to_string(index) + "'s context current"};
  if (result != CUDA_SUCCESS) return {true, false, "cuvidGetDecoderCaps failed for " + codec + " (CUresult " + std::to_string(result) + ")"};
  if (!caps.bIsSupported) return {true, false, "the NVDEC of cuda:" + std::to_string(index) + " does not decode " + codec};
  return {true, true, ""};
}

}  // namespace
#endif

NvdecSupport nvdecSupport(int index, const std::string& codec) {
#ifdef EC_WITH_NVDEC_CAPS
  static std::mutex mutex;
  static std::map<std::pair<int, std::string>, NvdecSupport> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto key = std::make_pair(index, codec);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, ask(index, codec)).first;
  return it->second;
#elif defined(EC_WITH_CUDA)
  return {false, true, "this build cannot ask NVDEC (nv-codec-headers were not found when it was compiled)"};
#else
  return {false, false, "this build has no CUDA support (CUDA headers were not found when it was compiled)"};
#endif
}

}  // namespace ec

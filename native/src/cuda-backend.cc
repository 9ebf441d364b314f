// NVDEC decode through libavcodec's CUDA hwaccel. Frames stay in device memory: the
// AVFrame's data[] are CUdeviceptr planes (nv12 / p010 / p016) in the device's primary
// context. libavcodec loads libcuda and libnvcuvid itself at run time.
#ifdef EC_WITH_CUDA

extern "C" {
#include <libavutil/hwcontext.h>
#include <libavutil/hwcontext_cuda.h>
}

#include "cuda-driver.h"
#include "device-backend.h"
#include "errors.h"

namespace ec {

namespace {

AVPixelFormat pickCuda(AVCodecContext*, const AVPixelFormat* formats) {
  for (const AVPixelFormat* f = formats; *f != AV_PIX_FMT_NONE; ++f) {
    if (*f == AV_PIX_FMT_CUDA) return *f;
  }
  // No CUDA surface format offered (profile NVDEC lacks): fail rather than fall back silently.
  return AV_PIX_FMT_NONE;
}

bool hasCudaConfig(const AVCodec* codec) {
  for (int i = 0;; ++i) {
    const AVCodecHWConfig* config = avcodec_get_hw_config(codec, i);
    if (!config) return false;
    if (config->device_type == AV_HWDEVICE_TYPE_CUDA && (config->methods & AV_CODEC_HW_CONFIG_METHOD_HW_DEVICE_CTX)) {
      return true;
    }
  }
}

class CudaBackend : public DeviceBackend {
 public:
  explicit CudaBackend(const DecoderOptions& options) : index_(options.deviceIndex) {
    if (options.output != OutputFormat::Native || options.resizeHeight > 0) {
      throw NativeException("ERR_UNSUPPORTED_OUTPUT",
                            "On cuda devices this build returns native (nv12/p010) frames only; use output \"native\" "
                            "without resize, or device \"cpu\" for rgb24/rgbf32-planar/resize");
    }
    // Our own probe first: it says why (no driver, no device) where FFmpeg only says EPERM.
    std::string reason;
    if (!cuda::driver(&reason)) {
      throw NativeException("ERR_DEVICE_UNAVAILABLE", "cuda:" + std::to_string(index_) + " is unavailable: " + reason);
    }
    AVBufferRef* device = nullptr;
    std::string name = std::to_string(index_);
    int ret = av_hwdevice_ctx_create(&device, AV_HWDEVICE_TYPE_CUDA, name.c_str(), nullptr, AV_CUDA_USE_PRIMARY_CONTEXT);
    if (ret < 0) {
      throw NativeException("ERR_DEVICE_UNAVAILABLE",
                            "Cannot open cuda:" + name + " for NVDEC: " + avErrorString(ret) +
                                " (needs an NVIDIA GPU, its driver, and libnvcuvid.so.1)");
    }
    device_.reset(device);
  }

  const AVCodec* findDecoder(AVCodecID id) const override {
    // hwaccels hang off libavcodec's own decoders (libdav1d has none), so ask for those by id.
    const char* name = id == AV_CODEC_ID_AV1 ? "av1" : nullptr;
    const AVCodec* codec = name ? avcodec_find_decoder_by_name(name) : avcodec_find_decoder(id);
    return codec && hasCudaConfig(codec) ? codec : nullptr;
  }

  void configure(AVCodecContext* ctx) override {
    ctx->hw_device_ctx = av_buffer_ref(device_.get());
    if (!ctx->hw_device_ctx) throw NativeException("ERR_OUT_OF_MEMORY", "av_buffer_ref failed");
    ctx->get_format = pickCuda;
    // NVDEC does the work; frame threads would only add latency and surface copies.
    ctx->thread_count = 1;
  }

  void emit(AVFrame* frame, DecodeResult& out) override {
    if (frame->format != AV_PIX_FMT_CUDA) {
      throw NativeException("ERR_NVDEC_UNSUPPORTED",
                            "NVDEC did not decode this stream (unsupported profile or size); use device \"cpu\"");
    }
    FramePtr ref(av_frame_clone(frame));
    if (!ref) throw NativeException("ERR_OUT_OF_MEMORY", "av_frame_clone failed");
    out.device.push_back(DeviceFrame{std::move(ref), frame->pts, index_});
  }

 private:
  int index_;
  BufferRefPtr device_;
};

const BackendRegistration registration("cuda", [](const DecoderOptions& options) {
  return std::unique_ptr<DeviceBackend>(new CudaBackend(options));
});

}  // namespace

/** Whether libavcodec in this process has a CUDA hwaccel for `id` (for devices()). */
bool cudaDecodeSupported(AVCodecID id) {
  const AVCodec* codec = id == AV_CODEC_ID_AV1 ? avcodec_find_decoder_by_name("av1") : avcodec_find_decoder(id);
  return codec && hasCudaConfig(codec);
}

}  // namespace ec

#endif  // EC_WITH_CUDA

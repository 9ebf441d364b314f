// NVDEC decode through libavcodec's CUDA hwaccel. Frames stay in device memory: the
// AVFrame's data[] are CUdeviceptr planes (nv12 / p010 / p016) in the device's primary
// context. libavcodec loads libcuda and libnvcuvid itself at run time.
#ifdef EC_WITH_CUDA

extern "C" {
#include <libavutil/hwcontext.h>
#include <libavutil/hwcontext_cuda.h>
}

#include <algorithm>

#include "cuda-driver.h"
#include "device-backend.h"
#include "errors.h"
#include "host-converter.h"
#include "kernels/kernels.h"

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
  explicit CudaBackend(const DecoderOptions& options)
      : index_(options.deviceIndex), output_(options.output), resizeHeight_(options.resizeHeight),
        resizeWidth_(options.resizeWidth) {
    if (output_ == OutputFormat::Native && resizeHeight_ > 0) {
      throw NativeException("ERR_UNSUPPORTED_OUTPUT",
                            "On cuda devices a resize needs output \"rgb24\" or \"rgbf32-planar\"; native frames keep "
                            "the decoded size");
    }
    std::string why;
    if (output_ != OutputFormat::Native && !kernels::compiled(&why)) {
      throw NativeException("ERR_UNSUPPORTED_OUTPUT", "This build returns native (nv12/p010) frames only on cuda devices (" +
                                                          why + "); use output \"native\" or device \"cpu\"");
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
    if (frame->format != AV_PIX_FMT_CUDA || !frame->hw_frames_ctx) {
      throw NativeException("ERR_NVDEC_UNSUPPORTED",
                            "NVDEC did not decode this stream (unsupported profile or size); use device \"cpu\"");
    }
    auto swFormat = reinterpret_cast<AVHWFramesContext*>(frame->hw_frames_ctx->data)->sw_format;
    DeviceFrame f;
    f.pts = frame->pts;
    f.deviceIndex = index_;
    if (output_ == OutputFormat::Native) {
      f.width = frame->width;
      f.height = frame->height;
      f.format = pixelFormatName(swFormat);
      for (int p = 0; p < AV_NUM_DATA_POINTERS && frame->data[p]; ++p) {
        f.planes.push_back({static_cast<uint64_t>(reinterpret_cast<uintptr_t>(frame->data[p])), frame->linesize[p]});
      }
      f.frame.reset(av_frame_clone(frame));
      if (!f.frame) throw NativeException("ERR_OUT_OF_MEMORY", "av_frame_clone failed");
    } else {
      convert(frame, swFormat, f, out);
    }
    out.device.push_back(std::move(f));
  }

 private:
  // Converts the NVDEC surface into this call's shared device allocation (one per clip).
  void convert(const AVFrame* frame, AVPixelFormat swFormat, DeviceFrame& f, DecodeResult& out) {
    int w = resizeWidth_ > 0 ? resizeWidth_ : frame->width;
    int h = resizeHeight_ > 0 ? resizeHeight_ : frame->height;
    kernels::ConvertParams p{};
    kernels::OutputLayout layout = kernels::setOutput(p, output_ == OutputFormat::Rgb24, w, h);
    size_t slot = (layout.bytes() + 255) / 256 * 256;  // each frame 256-byte aligned
    if (out.device.empty() || !arena_ || arenaUsed_ + slot > arenaBytes_) {
      arenaBytes_ = slot * std::max<size_t>(out.expectedFrames, 1);
      arena_ = cuda::allocShared(index_, arenaBytes_);
      arenaUsed_ = 0;
    }
    auto base = reinterpret_cast<uintptr_t>(arena_.get()) + arenaUsed_;
    arenaUsed_ += slot;
    const uint8_t* planes[4] = {frame->data[0], frame->data[1], frame->data[2], frame->data[3]};
    p.src = kernels::yuvImage(swFormat, planes, frame->linesize, frame->width, frame->height);
    p.matrix = kernels::matrixFor(frame->colorspace, frame->color_range);
    p.dst = reinterpret_cast<uint8_t*>(base);
    kernels::convertOnDevice(index_, p);
    f.memory = arena_;
    f.width = w;
    f.height = h;
    f.bytes = layout.bytes();
    f.format = output_ == OutputFormat::Rgb24 ? "rgb24" : "rgbf32-planar";
    for (int c = 0; c < layout.planes; ++c) f.planes.push_back({static_cast<uint64_t>(base + c * layout.planeBytes), layout.pitch});
  }

  int index_;
  OutputFormat output_;
  int resizeHeight_;
  int resizeWidth_;
  BufferRefPtr device_;
  std::shared_ptr<void> arena_;
  size_t arenaBytes_ = 0;
  size_t arenaUsed_ = 0;
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

// libavcodec software decode; frames become packed host typed-array memory.
#include "device-backend.h"
#include "host-converter.h"
#include "packed-frames.h"

namespace ec {

namespace {

class CpuBackend : public DeviceBackend {
 public:
  explicit CpuBackend(const DecoderOptions& options)
      : converter_(options.output, options.resizeHeight, options.resizeWidth),
        packed_(options.output == OutputFormat::Native && options.resizeHeight == 0) {}

  const AVCodec* findDecoder(AVCodecID id) const override {
    // The same default decoder the ffmpeg CLI picks, so framemd5 lines match.
    return avcodec_find_decoder(id);
  }

  void configure(AVCodecContext* ctx) override {
    // Native output is the decoded pixels packed: decode into that layout instead of copying.
    if (packed_) decodeIntoPackedFrames(ctx, &arenas_);
  }

  void begin(const DecodeResult& out, std::optional<int64_t> dropBefore) override {
    // Frames with a target are copied into it: no arena then.
    arenas_.begin(out.targets && !out.targets->empty() ? 0 : out.expectedFrames, dropBefore);
  }

  void emit(AVFrame* frame, DecodeResult& out) override {
    converter_.append(frame, frame->pts, out.host, out.expectedFrames, out.targets);
  }

  void settle(DecodeResult& out) override {
    arenas_.end();
    converter_.settle(out.host);
  }

 private:
  // Before converter_ and the codec (the Decoder's ctx_, opened after this backend): freed last.
  FrameArenas arenas_;
  HostConverter converter_;
  bool packed_;
};

const BackendRegistration registration("cpu", [](const DecoderOptions& options) {
  return std::unique_ptr<DeviceBackend>(new CpuBackend(options));
});

}  // namespace

}  // namespace ec

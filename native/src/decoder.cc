#include "decoder.h"

#include <algorithm>
#include <cstring>

#include "codec-config.h"
#include "errors.h"

namespace ec {

namespace {

// Resets the codec whatever way decode() leaves, so a failed clip never poisons the next.
struct FlushOnExit {
  Decoder* decoder;
  AVCodecContext* ctx;
  bool armed = true;
  ~FlushOnExit() {
    if (!armed) return;
    avcodec_flush_buffers(ctx);
    decoder->endRecovery();
  }
};

bool damaged(const AVFrame* frame) { return frame->decode_error_flags != 0 || (frame->flags & AV_FRAME_FLAG_CORRUPT); }

int64_t alignUp(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

// A picture whose size no index declared (an image decoded on its own) is still bounded: 16384².
constexpr int64_t kMaxUndeclaredPixels = int64_t{16384} * 16384;

bool declared(const DecoderOptions& options) { return options.width > 0 && options.height > 0; }

// The pixels libavcodec may allocate a picture of: the index's size, padded as its buffers are
// (rows to the SIMD stride, coded sizes to whole macroblocks or superblocks), and no more. A
// stream that declares a larger picture than its index fails before any frame is allocated.
int64_t maxPixelsFor(const DecoderOptions& options) {
  if (!declared(options)) return kMaxUndeclaredPixels;
  return alignUp(options.width, 128) * alignUp(options.height, 128);
}

std::string sizeText(int width, int height) { return std::to_string(width) + "x" + std::to_string(height); }

}  // namespace

void Decoder::checkSize(const AVFrame* frame, size_t packetIndex) const {
  if (!declared(options_) || (frame->width == options_.width && frame->height == options_.height)) return;
  throw NativeException("ERR_FRAME_DIMENSIONS", "A decoded frame is " + sizeText(frame->width, frame->height) +
                                                    " but the index says " + sizeText(options_.width, options_.height) +
                                                    " (near packet " + std::to_string(packetIndex) + ")");
}

[[noreturn]] void Decoder::rejected(const std::string& what, int ret) const {
  // A picture past max_pixels fails in ff_get_buffer, reported as whatever the codec makes of a
  // failed slice (h264: AVERROR_INVALIDDATA); the size it was refused for is in the context.
  int width = ctx_->width, height = ctx_->height;
  bool otherSize = width > 0 && height > 0 &&
                   (declared(options_) ? width != options_.width || height != options_.height
                                       : int64_t{width} * height > ctx_->max_pixels);
  if (otherSize || (declared(options_) && ret == AVERROR(EINVAL))) {
    std::string bound = declared(options_) ? " where the index says " + sizeText(options_.width, options_.height) : "";
    throw NativeException("ERR_FRAME_DIMENSIONS", what + ": the stream declares " +
                                                      (otherSize ? sizeText(width, height) : "a picture size") + bound +
                                                      " (at most " + std::to_string(ctx_->max_pixels) +
                                                      " pixels are decoded)");
  }
  throw NativeException("ERR_CORRUPT_PACKET", what + ": " + avErrorString(ret));
}

namespace {

}  // namespace

Decoder::Decoder(const DecoderOptions& options)
    : options_(options), backend_(createBackend(options)), packet_(makePacket()), frame_(makeFrame()) {
  CodecConfig config = resolveCodecConfig(options.codec, options.extradata);
  const AVCodec* codec = backend_->findDecoder(config.id);
  if (!codec) {
    throw NativeException("ERR_UNSUPPORTED_CODEC",
                          "This libavcodec has no " + options.codec + " decoder for device " + options.device);
  }
  ctx_.reset(avcodec_alloc_context3(codec));
  if (!ctx_) throw NativeException("ERR_OUT_OF_MEMORY", "avcodec_alloc_context3 failed");
  if (!config.extradata.empty()) {
    ctx_->extradata = static_cast<uint8_t*>(av_mallocz(config.extradata.size() + AV_INPUT_BUFFER_PADDING_SIZE));
    if (!ctx_->extradata) throw NativeException("ERR_OUT_OF_MEMORY", "Cannot allocate extradata");
    std::memcpy(ctx_->extradata, config.extradata.data(), config.extradata.size());
    ctx_->extradata_size = static_cast<int>(config.extradata.size());
  }
  ctx_->width = options.width;
  ctx_->height = options.height;
  // The stream's own dimensions are a declared size like any other: bounded by the index's.
  ctx_->max_pixels = maxPixelsFor(options);
  ctx_->thread_count = options.threads;
  ctx_->thread_type = FF_THREAD_FRAME | FF_THREAD_SLICE;
  // Detected bitstream damage fails the call instead of being concealed into wrong pixels.
  ctx_->err_recognition = kExplode;
  ctx_->pkt_timebase = AVRational{1, 1};
  backend_->configure(ctx_.get());
  int ret = avcodec_open2(ctx_.get(), codec, nullptr);
  if (ret < 0) {
    throw NativeException("ERR_DECODER_OPEN", "Cannot open the " + std::string(codec->name) +
                                                  " decoder (wrong extradata?): " + avErrorString(ret));
  }
}

size_t Decoder::receiveAll(DecodeResult& out, std::optional<int64_t> dropBefore, size_t packetIndex,
                           std::optional<int64_t> until) {
  size_t received = 0;
  for (;; ++received) {
    if (out.reached) return received;
    int ret = avcodec_receive_frame(ctx_.get(), frame_.get());
    if (ret == AVERROR(EAGAIN) || ret == AVERROR_EOF) return received;
    if (ret < 0) {
      // Frame threads report a picture that lacked references here, not at send time.
      if (recovering_) continue;
      rejected("The decoder rejected the stream near packet " + std::to_string(packetIndex), ret);
    }
    FramePtr frame(av_frame_alloc());
    if (!frame) throw NativeException("ERR_OUT_OF_MEMORY", "av_frame_alloc failed");
    av_frame_move_ref(frame.get(), frame_.get());
    ++out.decodedFrames;
    checkSize(frame.get(), packetIndex);
    int64_t pts = frame->pts != AV_NOPTS_VALUE ? frame->pts : frame->best_effort_timestamp;
    bool dropped = dropBefore && pts != AV_NOPTS_VALUE && pts < *dropBefore;
    if (damaged(frame.get())) {
      // Before a recovery point's first intact picture, damage is the missing references: the
      // picture is dropped. A damaged picture the caller keeps is never delivered.
      if (recovering_ && dropped) continue;
      throw NativeException("ERR_CORRUPT_FRAME", "A decoded frame is damaged (near packet " +
                                                     std::to_string(packetIndex) + "); the packets are corrupt");
    }
    endRecovery();
    if (dropped) continue;
    frame->pts = pts;
    backend_->emit(frame.get(), out);
    if (until && pts != AV_NOPTS_VALUE && pts >= *until) out.reached = true;
  }
}

void Decoder::endRecovery() {
  if (!recovering_) return;
  recovering_ = false;
  ctx_->err_recognition = kExplode;
}

DecodeResult Decoder::decode(const std::vector<PacketView>& packets, std::optional<int64_t> dropBefore, bool drain,
                             bool recovering, const std::vector<FrameTarget>& targets, std::optional<int64_t> until) {
  if (drain && until) {
    throw NativeException("ERR_INVALID_ARGUMENT", "Expected drain: false with until but received drain: true");
  }
  DecodeResult out;
  out.targets = &targets;
  if (recovering) {
    // Frame threads keep their own copy of err_recognition (and report errors late): a recovery
    // start needs the one context that the tolerance below switches.
    if (ctx_->active_thread_type & FF_THREAD_FRAME) {
      throw NativeException("ERR_INVALID_ARGUMENT", "Expected a decoder opened with threads: 1 for recovering but this one runs " +
                                                        std::to_string(ctx_->thread_count) + " frame threads");
    }
    // Pictures that reference frames before the recovery point decode concealed (and are
    // dropped) instead of failing the run, until the first intact picture comes out.
    recovering_ = true;
    ctx_->err_recognition = 0;
  }
  // Size the batch for the frames that will be kept, not for the ones decoded and dropped.
  out.expectedFrames = 0;
  for (const PacketView& p : packets)
    out.expectedFrames += ((!dropBefore || p.pts >= *dropBefore) && (!until || p.pts <= *until)) ? 1 : 0;
  // Frames with a target take no room in the batch.
  out.expectedFrames -= std::min(out.expectedFrames, targets.size());
  backend_->begin(out, dropBefore);
  FlushOnExit flush{this, ctx_.get()};
  for (size_t i = 0; i < packets.size() && !out.reached; ++i) {
    const PacketView& view = packets[i];
    av_packet_unref(packet_.get());
    // Copied into a padded packet: decoders may read up to AV_INPUT_BUFFER_PADDING_SIZE past the end.
    if (av_new_packet(packet_.get(), static_cast<int>(view.size)) < 0) {
      throw NativeException("ERR_OUT_OF_MEMORY", "Cannot allocate a packet of " + std::to_string(view.size) + " bytes");
    }
    if (view.size > 0) std::memcpy(packet_->data, view.data, view.size);
    packet_->pts = view.pts;
    packet_->dts = view.dts;
    if (view.keyframe) packet_->flags |= AV_PKT_FLAG_KEY;
    for (;;) {
      int ret = avcodec_send_packet(ctx_.get(), packet_.get());
      if (ret == AVERROR(EAGAIN)) {
        // Full output queue: drain it, then resend. No frame and still full means a stuck codec.
        if (receiveAll(out, dropBefore, i, until) == 0) {
          throw NativeException("ERR_DECODER_STALLED", "The decoder accepts no input and returns no frame");
        }
        // The wanted frame came out of the queue: this packet stays unsent.
        if (out.reached) break;
        continue;
      }
      if (ret < 0 && !recovering_) rejected("The decoder rejected packet " + std::to_string(i), ret);
      out.packetsFed = i + 1;
      break;
    }
    receiveAll(out, dropBefore, i, until);
  }
  if (drain) {
    int ret = avcodec_send_packet(ctx_.get(), nullptr);
    if (ret < 0 && ret != AVERROR_EOF) rejected("The decoder failed to drain", ret);
    receiveAll(out, dropBefore, packets.size());
    // Reset now rather than on the way out: the flush drops the codec's references to the
    // frames, so those decoded in place can be settled without a copy.
    avcodec_flush_buffers(ctx_.get());
    endRecovery();
  }
  flush.armed = false;
  backend_->settle(out);
  return out;
}

}  // namespace ec

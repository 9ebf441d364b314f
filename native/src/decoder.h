// One video decoder: packets of one clip in, frames in presentation order out.
//
// Thread safety: a Decoder is NOT thread-safe. It is used by one decode() call at a
// time (the binding rejects a second concurrent call with ERR_DECODER_BUSY, and the TS
// wrapper queues calls). Different Decoder objects share nothing and run in parallel.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "decode-types.h"
#include "device-backend.h"

namespace ec {

class Decoder {
 public:
  /** Opens the codec on the requested device; throws NativeException on failure. */
  explicit Decoder(const DecoderOptions& options);

  /**
   * Decodes one clip: sends every packet, then drains the decoder so reordered (B-)frames
   * all come out, then resets it for the next clip. Frames with pts < dropBefore are
   * decoded (later frames reference them) but not converted or returned.
   * With drain false the codec keeps its state (references, frames still being reordered) so
   * the next call continues the same run of packets; a failure still resets it.
   * recovering: the run starts at an H.264 recovery point that is not an IDR (intra refresh,
   * open GOP), so pictures before its first intact one may lack references: their decode errors
   * are tolerated and they are never returned; from the first intact picture on (this call or a
   * later one of the run) every error fails the call as usual.
   * targets: caller memory that kept host frames of those pts are written into (see FrameTarget);
   * frames without one, or whose target does not fit, land in the result's batch.
   * until (drain false only): once a frame with pts >= until came out, no more packets are sent
   * and no more frames received: every frame up to it is out (presentation order), the rest of
   * the packets stay unsent (packetsFed says how many went in) and frames the codec already
   * holds come out on the next call, so no packet is decoded that no wanted frame waits for.
   */
  DecodeResult decode(const std::vector<PacketView>& packets, std::optional<int64_t> dropBefore, bool drain = true,
                      bool recovering = false, const std::vector<FrameTarget>& targets = {},
                      std::optional<int64_t> until = std::nullopt);

  /** Back to failing on every error (the run's first intact picture came out, or it ended). */
  void endRecovery();

  const DecoderOptions& options() const { return options_; }

 private:
  /** Returns how many frames came out, dropped ones included. */
  size_t receiveAll(DecodeResult& out, std::optional<int64_t> dropBefore, size_t packetIndex,
                    std::optional<int64_t> until = std::nullopt);

  /** Whether the index gave the frame dimensions (an image's decoder has none). */
  bool sized() const;
  /** Throws ERR_FRAME_DIMENSIONS for a frame of other dimensions than the index gave. */
  void checkSize(const AVFrame* frame, size_t packetIndex) const;
  /** Throws for an error libavcodec returned: ERR_FRAME_DIMENSIONS past max_pixels, else ERR_CORRUPT_PACKET. */
  [[noreturn]] void rejected(const std::string& what, int ret) const;

  static constexpr int kExplode = AV_EF_EXPLODE;

  DecoderOptions options_;
  bool recovering_ = false;
  std::unique_ptr<DeviceBackend> backend_;
  CodecContextPtr ctx_;
  PacketPtr packet_;
  FramePtr frame_;
};

}  // namespace ec

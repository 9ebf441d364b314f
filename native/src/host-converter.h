// Turns CPU AVFrames into packed host frames appended to one batch allocation: a copy (or the
// decoder's own packed buffer, packed-frames.h) for native output, libswscale for the rest.
// Not thread-safe: owned by one Decoder, which is used by one call at a time.
#pragma once

#include <vector>

#include "decode-types.h"

namespace ec {

class HostConverter {
 public:
  HostConverter(OutputFormat output, int resizeHeight, int resizeWidth);
  /**
   * Appends `frame` (a software frame) in the configured output format: into the target of its
   * pts when one is given whose size and alignment fit the converted frame, else into `batch`.
   */
  void append(const AVFrame* frame, int64_t pts, HostBatch& batch, size_t expectedFrames,
              const std::vector<FrameTarget>* targets = nullptr);

  /**
   * Packs the frames decoded in place at their coded height (HostFrame::movedFrom): moves their
   * planes up where the decoder no longer holds the buffer, else copies them into a buffer of
   * their own. Call once the decoder is done with the call (after its flush, where it drains).
   */
  void settle(HostBatch& batch);

 private:
  /** Where the converted frame's `bytes` go: its target, or a new place in the batch. */
  struct Place {
    HostBatch& batch;
    size_t expectedFrames;
    const FrameTarget* target;
    int targetIndex;
    uint8_t* operator()(HostFrame& info, size_t bytes, size_t align) const;
  };
  void appendNative(const AVFrame* frame, HostFrame& info, const Place& place);
  void appendScaled(const AVFrame* frame, HostFrame& info, const Place& place);
  SwsContext* scalerFor(const AVFrame* frame, AVPixelFormat dst, int dstW, int dstH);
  /** Packed rgb24 rows (dstW * 3 bytes each) into `out`, right to the last pixel of any width. */
  void scaleToRgb24(const AVFrame* frame, int dstW, int dstH, uint8_t* out);

  OutputFormat output_;
  int resizeHeight_;
  int resizeWidth_;
  SwsPtr sws_;
  std::vector<uint8_t> scratch_;  // rgb24 staging for 8-bit float output
  std::vector<uint8_t> padded_;   // rgb24 rows padded to whole SIMD groups, for widths not a multiple of 16
};

/** Name of a pixel format as ffmpeg spells it ("yuv420p10le"). */
std::string pixelFormatName(int format);

}  // namespace ec

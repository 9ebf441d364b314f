// Decoding in place: the decoder writes frames straight into packed host buffers, so native
// output needs no copy (see packed-frames.cc for where that layout qualifies).
// Thread-safe: the buffers come from the batch memory pool, a call's larger frames from its arena.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavutil/pixdesc.h>
}

namespace ec {

class FrameArena;

/**
 * Where a decoder's packed frames of 1 MiB and more go: slots of one arena per call, so the
 * frames a call keeps reach JS as views of one ArrayBuffer. Thread-safe (decoder threads take
 * slots while the caller begins the next call).
 */
class FrameArenas {
 public:
  FrameArenas() = default;
  FrameArenas(const FrameArenas&) = delete;
  FrameArenas& operator=(const FrameArenas&) = delete;
  ~FrameArenas();
  /**
   * Room for `frames` frames (the call's kept ones) in a new arena, made at the first frame;
   * frames with pts below `keepFrom` get buffers of their own. 0 frames: no arena.
   */
  void begin(size_t frames, std::optional<int64_t> keepFrom);
  /** No more slots from the call's arena (it lives on with its frames). */
  void end();
  /** A slot's frame start (its header written), or null: a buffer of its own then. */
  uint8_t* take(int64_t pts, size_t bytes, size_t slack);

 private:
  std::mutex mutex_;
  FrameArena* current_ = nullptr;
  size_t frames_ = 0;
  std::optional<int64_t> keepFrom_;
};

/**
 * Makes the decoder write frames straight into packed host buffers (HostFrame::own) where the
 * packed layout is one the codec can decode into (at the coded height: rows past the shown
 * picture are moved out once the decoder is done with the frame); other frames keep
 * libavcodec's buffers and are copied. Call before avcodec_open2.
 */
void decodeIntoPackedFrames(AVCodecContext* ctx, FrameArenas* arenas);

/**
 * The arena a packed buffer lies in (`base`, `bytes`) and a reference that keeps it alive, or
 * null for a buffer of its own.
 */
std::shared_ptr<void> arenaOf(const AVBufferRef* buf, uint8_t*& base, size_t& bytes);

/**
 * A packed buffer like those decodeIntoPackedFrames gives the decoder (pool memory, 64-byte
 * aligned, `slack` readable bytes past `bytes`), or null when out of memory.
 */
AVBufferRef* newPackedBuffer(size_t bytes, size_t slack = 0);

/** Whether `buf` is one of decodeIntoPackedFrames' packed buffers. */
bool isPackedBuffer(const AVBufferRef* buf);

/** Rows of plane `p` of a frame `height` rows tall: a YUV format's chroma planes are subsampled vertically. */
inline int planeRows(const AVPixFmtDescriptor* desc, int p, int height) {
  bool chroma = (p == 1 || p == 2) && desc && !(desc->flags & AV_PIX_FMT_FLAG_RGB);
  return chroma ? AV_CEIL_RSHIFT(height, desc->log2_chroma_h) : height;
}

}  // namespace ec

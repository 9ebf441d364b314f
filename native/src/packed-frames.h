// Decoding in place: the decoder writes frames straight into packed host buffers, so native
// output needs no copy (see packed-frames.cc for where that layout qualifies).
// Thread-safe: no state; the buffers come from the batch memory pool.
#pragma once

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavutil/pixdesc.h>
}

namespace ec {

/**
 * Makes the decoder write frames straight into packed host buffers (HostFrame::own) where the
 * packed layout is one the codec can decode into; other frames keep libavcodec's buffers and
 * are copied. Call before avcodec_open2.
 */
void decodeIntoPackedFrames(AVCodecContext* ctx);

/** Whether `buf` is one of decodeIntoPackedFrames' packed buffers. */
bool isPackedBuffer(const AVBufferRef* buf);

/** Rows of plane `p` of a frame `height` rows tall: a YUV format's chroma planes are subsampled vertically. */
inline int planeRows(const AVPixFmtDescriptor* desc, int p, int height) {
  bool chroma = (p == 1 || p == 2) && desc && !(desc->flags & AV_PIX_FMT_FLAG_RGB);
  return chroma ? AV_CEIL_RSHIFT(height, desc->log2_chroma_h) : height;
}

}  // namespace ec

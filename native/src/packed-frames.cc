#include "packed-frames.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>

extern "C" {
#include <libavutil/imgutils.h>
}

#include "decode-types.h"

namespace ec {

namespace {

/**
 * Frames decoded straight into the packed layout: every plane row by row with no padding,
 * planes back to back — the bytes framemd5 hashes — so native output needs no copy. Only where
 * that layout is also one libavcodec can decode into: h264 and hevc (their writes stay inside
 * the coded picture, and reads past a plane, e.g. h264's chroma MC reading one row too many,
 * land in the next plane or the slack after the last), no cropping (the coded picture is the
 * frame, so no row is written past a plane's end), and every plane's rows and start aligned
 * as avcodec_align_dimensions2 asks (64 bytes covers every SIMD width). 1280x720, 3840x2160
 * qualify; 1920x1080 (coded 1088 rows) and odd sizes keep libavcodec's buffers and the copy.
 */
constexpr size_t kPackedAlign = 64;
const int kPackedTag = 0;  // opaque of our AVBuffers: how isPackedBuffer recognises them

struct PackedHeader {
  void* block;
  size_t blockBytes;
};

void freePacked(void*, uint8_t* data) {
  PackedHeader header;
  std::memcpy(&header, data - sizeof(PackedHeader), sizeof header);
  freeBatchMemory(header.block, header.blockBytes);
}

struct PackedLayout {
  int linesize[4] = {0, 0, 0, 0};
  size_t offset[4] = {0, 0, 0, 0};
  size_t bytes = 0;  // the packed frame
  size_t slack = 0;  // readable bytes after it
};

bool packedLayout(const AVCodecContext* ctx, const AVFrame* frame, PackedLayout& layout) {
  if (ctx->codec_id != AV_CODEC_ID_H264 && ctx->codec_id != AV_CODEC_ID_HEVC) return false;
  if (frame->width != ctx->width || frame->height != ctx->height || frame->width <= 0 || frame->height <= 0) return false;
  auto format = static_cast<AVPixelFormat>(frame->format);
  const AVPixFmtDescriptor* desc = av_pix_fmt_desc_get(format);
  if (!desc || (desc->flags & (AV_PIX_FMT_FLAG_HWACCEL | AV_PIX_FMT_FLAG_PAL | AV_PIX_FMT_FLAG_BITSTREAM))) return false;
  if (av_image_fill_linesizes(layout.linesize, format, frame->width) < 0) return false;
  int alignedW = frame->width;
  int alignedH = frame->height;
  int strideAlign[AV_NUM_DATA_POINTERS];
  avcodec_align_dimensions2(const_cast<AVCodecContext*>(ctx), &alignedW, &alignedH, strideAlign);
  if (alignedW != frame->width) return false;
  size_t offset = 0;
  for (int p = 0; p < 4 && layout.linesize[p] > 0; ++p) {
    if (layout.linesize[p] % kPackedAlign != 0 || (strideAlign[p] > 0 && layout.linesize[p] % strideAlign[p] != 0)) return false;
    if (offset % kPackedAlign != 0) return false;
    int rows = planeRows(desc, p, frame->height);
    layout.offset[p] = offset;
    offset += static_cast<size_t>(layout.linesize[p]) * rows;
  }
  layout.bytes = offset;
  // As much as libavcodec's own allocator leaves readable past a plane: the rows up to the
  // aligned height (plus two), and a SIMD register's worth.
  layout.slack = static_cast<size_t>(alignedH - frame->height + 2) * layout.linesize[0] + kPackedAlign +
                 AV_INPUT_BUFFER_PADDING_SIZE;
  return true;
}

int packedGetBuffer(AVCodecContext* ctx, AVFrame* frame, int flags) {
  PackedLayout layout;
  if (!packedLayout(ctx, frame, layout)) return avcodec_default_get_buffer2(ctx, frame, flags);
  size_t blockBytes = sizeof(PackedHeader) + kPackedAlign + layout.bytes + layout.slack;
  void* block = nullptr;
  try {
    block = allocateBatchMemory(blockBytes);
  } catch (const std::bad_alloc&) {
    return AVERROR(ENOMEM);
  }
  auto start = reinterpret_cast<uintptr_t>(block) + sizeof(PackedHeader);
  auto* data = reinterpret_cast<uint8_t*>((start + kPackedAlign - 1) / kPackedAlign * kPackedAlign);
  PackedHeader header{block, blockBytes};
  std::memcpy(data - sizeof(PackedHeader), &header, sizeof header);
  frame->buf[0] = av_buffer_create(data, static_cast<size_t>(layout.bytes + layout.slack), freePacked,
                                   const_cast<int*>(&kPackedTag), 0);
  if (!frame->buf[0]) {
    freeBatchMemory(block, blockBytes);
    return AVERROR(ENOMEM);
  }
  for (int p = 0; p < 4; ++p) {
    frame->data[p] = layout.linesize[p] > 0 ? data + layout.offset[p] : nullptr;
    frame->linesize[p] = layout.linesize[p];
  }
  frame->extended_data = frame->data;
  return 0;
}

}  // namespace

void decodeIntoPackedFrames(AVCodecContext* ctx) { ctx->get_buffer2 = packedGetBuffer; }

bool isPackedBuffer(const AVBufferRef* buf) { return av_buffer_get_opaque(buf) == &kPackedTag; }

}  // namespace ec

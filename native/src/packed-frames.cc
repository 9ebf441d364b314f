#include "packed-frames.h"

#include <algorithm>
#include <atomic>
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
 * land in the next plane or the slack after the last), and every plane's rows and start aligned
 * as avcodec_align_dimensions2 asks (64 bytes covers every SIMD width). 1280x720 and 3840x2160
 * decode in place as they are. A picture coded taller than it is shown (1920x1080 is coded as
 * 1088 rows, cropped at the bottom) is laid out packed at its coded height: once the decoder
 * has let go of it, its chroma planes are moved up over the cropped rows (host-converter.cc),
 * a third of the bytes a copy of the whole frame moves. Only where a frame is 1 MiB or more:
 * smaller frames keep libavcodec's buffers and are copied into one batch allocation, which the
 * pool reuses whole. Odd sizes and horizontal cropping keep the copy too.
 */
constexpr size_t kPackedAlign = 64;
constexpr size_t kMovedMin = size_t{1} << 20;
// Frames this large share one arena per call: one ArrayBuffer per call instead of one per frame.
// V8 runs a full collection each time the external memory it was handed grows 64 MB: one
// buffer per 1080p frame made that six collections per 240-frame call, one per call made it
// at most one. Smaller frames keep a buffer each (few bytes per call, malloc's own caches).
constexpr size_t kArenaMin = size_t{1} << 20;
// An arena stays well inside the largest external ArrayBuffer (binding/common.h).
constexpr size_t kArenaMax = size_t{1} << 31;
const int kPackedTag = 0;  // opaque of our AVBuffers: how isPackedBuffer recognises them

struct PackedHeader {
  void* block;         // a buffer of its own: its pool block
  size_t blockBytes;
  FrameArena* arena;   // else the arena its slot lies in
};

}  // namespace

/**
 * One pool block cut into equal slots, a frame each, for the frames one call keeps. Alive while
 * any slot's AVBuffer or any JS view of it is (an atomic count; thread-safe: decoder threads
 * take slots and drop references concurrently).
 */
class FrameArena {
 public:
  FrameArena(void* block, size_t blockBytes, uint8_t* base, size_t slotBytes, size_t slots)
      : block_(block), blockBytes_(blockBytes), base_(base), slotBytes_(slotBytes), slots_(slots) {}
  /** A slot's frame start (kPackedAlign bytes into it, after its header), retained; null when all are taken. */
  uint8_t* take() {
    size_t i = next_.fetch_add(1, std::memory_order_relaxed);
    if (i >= slots_) return nullptr;
    retain();
    return base_ + i * slotBytes_ + kPackedAlign;
  }
  void retain() { refs_.fetch_add(1, std::memory_order_relaxed); }
  void release() {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    freeBatchMemory(block_, blockBytes_);
    delete this;
  }
  uint8_t* base() const { return base_; }
  size_t bytes() const { return slotBytes_ * slots_; }
  size_t slotBytes() const { return slotBytes_; }

 private:
  void* block_;
  size_t blockBytes_;
  uint8_t* base_;
  size_t slotBytes_;
  size_t slots_;
  std::atomic<size_t> next_{0};
  std::atomic<size_t> refs_{1};  // the FrameArenas that hands out its slots
};

namespace {

void freePacked(void*, uint8_t* data) {
  PackedHeader header;
  std::memcpy(&header, data - sizeof(PackedHeader), sizeof header);
  if (header.arena) {
    header.arena->release();
  } else {
    freeBatchMemory(header.block, header.blockBytes);
  }
}

size_t alignPacked(size_t n) { return (n + kPackedAlign - 1) / kPackedAlign * kPackedAlign; }

struct PackedLayout {
  int linesize[4] = {0, 0, 0, 0};
  size_t offset[4] = {0, 0, 0, 0};
  size_t bytes = 0;  // the packed frame
  size_t slack = 0;  // readable bytes after it
};

bool packedLayout(const AVCodecContext* ctx, const AVFrame* frame, PackedLayout& layout) {
  if (ctx->codec_id != AV_CODEC_ID_H264 && ctx->codec_id != AV_CODEC_ID_HEVC) return false;
  // libavcodec allocates at the coded size and crops afterwards: rows below the shown picture
  // (fewer than one macroblock or coding tree row) are kept, columns past it are not.
  if (frame->width != ctx->width || frame->height < ctx->height || frame->height > ctx->height + 64 ||
      frame->width <= 0 || ctx->height <= 0)
    return false;
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
  if (frame->height != ctx->height && layout.bytes < kMovedMin) return false;
  // As much as libavcodec's own allocator leaves readable past a plane: the rows up to the
  // aligned height (plus two), and a SIMD register's worth.
  layout.slack = static_cast<size_t>(alignedH - frame->height + 2) * layout.linesize[0] + kPackedAlign +
                 AV_INPUT_BUFFER_PADDING_SIZE;
  return true;
}

int packedGetBuffer(AVCodecContext* ctx, AVFrame* frame, int flags) {
  PackedLayout layout;
  if (!packedLayout(ctx, frame, layout)) return avcodec_default_get_buffer2(ctx, frame, flags);
  auto* arenas = static_cast<FrameArenas*>(ctx->opaque);
  // pts is the packet's here (ff_decode_frame_props ran before this callback).
  uint8_t* slot = arenas ? arenas->take(frame->pts, layout.bytes, layout.slack) : nullptr;
  if (slot) {
    PackedHeader header{nullptr, 0, nullptr};
    std::memcpy(&header, slot - sizeof(PackedHeader), sizeof header);
    frame->buf[0] = av_buffer_create(slot, layout.bytes + layout.slack, freePacked, const_cast<int*>(&kPackedTag), 0);
    if (!frame->buf[0]) header.arena->release();
  } else {
    frame->buf[0] = newPackedBuffer(layout.bytes, layout.slack);
  }
  if (!frame->buf[0]) return AVERROR(ENOMEM);
  uint8_t* data = frame->buf[0]->data;
  for (int p = 0; p < 4; ++p) {
    frame->data[p] = layout.linesize[p] > 0 ? data + layout.offset[p] : nullptr;
    frame->linesize[p] = layout.linesize[p];
  }
  frame->extended_data = frame->data;
  return 0;
}

}  // namespace

FrameArenas::~FrameArenas() { end(); }

void FrameArenas::begin(size_t frames, std::optional<int64_t> keepFrom) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (current_) current_->release();
  current_ = nullptr;
  frames_ = frames;
  keepFrom_ = keepFrom;
}

void FrameArenas::end() { begin(0, std::nullopt); }

uint8_t* FrameArenas::take(int64_t pts, size_t bytes, size_t slack) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (frames_ == 0 || bytes < kArenaMin) return nullptr;
  // A frame decoded only as a reference is freed at once: not in the arena its kept frames hold.
  if (keepFrom_ && (pts == AV_NOPTS_VALUE || pts < *keepFrom_)) return nullptr;
  size_t slotBytes = kPackedAlign + alignPacked(bytes);
  if (!current_) {
    size_t slots = std::min(frames_, kArenaMax / slotBytes);
    if (slots == 0) return nullptr;
    // The last slot's frame is followed by the slack reads past a frame may touch; the others
    // by the next slot.
    size_t blockBytes = kPackedAlign + slots * slotBytes + slack;
    void* block = nullptr;
    try {
      block = allocateBatchMemory(blockBytes);
      auto* base = reinterpret_cast<uint8_t*>(alignPacked(reinterpret_cast<uintptr_t>(block)));
      current_ = new FrameArena(block, blockBytes, base, slotBytes, slots);
    } catch (const std::bad_alloc&) {
      if (block) freeBatchMemory(block, blockBytes);
      frames_ = 0;
      return nullptr;
    }
  }
  // Another size than the call's first frame (a new sequence): a buffer of its own.
  if (slotBytes > current_->slotBytes()) return nullptr;
  uint8_t* data = current_->take();
  if (!data) return nullptr;
  PackedHeader header{nullptr, 0, current_};
  std::memcpy(data - sizeof(PackedHeader), &header, sizeof header);
  return data;
}

std::shared_ptr<void> arenaOf(const AVBufferRef* buf, uint8_t*& base, size_t& bytes) {
  if (!isPackedBuffer(buf)) return nullptr;
  PackedHeader header;
  std::memcpy(&header, buf->data - sizeof(PackedHeader), sizeof header);
  if (!header.arena) return nullptr;
  header.arena->retain();
  base = header.arena->base();
  bytes = header.arena->bytes();
  return std::shared_ptr<void>(header.arena, [](void* a) { static_cast<FrameArena*>(a)->release(); });
}

AVBufferRef* newPackedBuffer(size_t bytes, size_t slack) {
  size_t blockBytes = sizeof(PackedHeader) + kPackedAlign + bytes + slack;
  void* block = nullptr;
  try {
    block = allocateBatchMemory(blockBytes);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
  auto start = reinterpret_cast<uintptr_t>(block) + sizeof(PackedHeader);
  auto* data = reinterpret_cast<uint8_t*>((start + kPackedAlign - 1) / kPackedAlign * kPackedAlign);
  PackedHeader header{block, blockBytes, nullptr};
  std::memcpy(data - sizeof(PackedHeader), &header, sizeof header);
  AVBufferRef* buf = av_buffer_create(data, bytes + slack, freePacked, const_cast<int*>(&kPackedTag), 0);
  if (!buf) freeBatchMemory(block, blockBytes);
  return buf;
}

void decodeIntoPackedFrames(AVCodecContext* ctx, FrameArenas* arenas) {
  ctx->get_buffer2 = packedGetBuffer;
  ctx->opaque = arenas;
#if LIBAVCODEC_VERSION_MAJOR < 60
  // packedGetBuffer is thread-safe (the pool locks). Without saying so, libavcodec 59's frame
  // threads queue every buffer they release until their next packet, so after the call's flush
  // they would still hold the frames the flush let go of: those would be copied, not moved.
  // (It also runs each allocation on the caller's thread.) From 60 on this is how it behaves.
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
  ctx->thread_safe_callbacks = 1;
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
#endif
}

bool isPackedBuffer(const AVBufferRef* buf) { return av_buffer_get_opaque(buf) == &kPackedTag; }

}  // namespace ec

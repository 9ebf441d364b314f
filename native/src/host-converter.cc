#include "host-converter.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <unordered_map>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

extern "C" {
#include <libavutil/imgutils.h>
#include <libavutil/pixdesc.h>
}

#include "errors.h"

namespace ec {

namespace {

constexpr size_t kFrameAlign = 16;  // so Uint16Array/Float32Array views need no copy

size_t alignUp(size_t n) { return (n + kFrameAlign - 1) / kFrameAlign * kFrameAlign; }

// Grows the batch for one more frame; the first frame reserves room for the whole call,
// so a clip is one allocation in the common case.
uint8_t* reserveFrame(HostBatch& batch, size_t bytes, size_t expectedFrames, size_t& offset) {
  auto& data = *batch.data;
  offset = alignUp(data.size());
  if (data.capacity() < offset + bytes) {
    data.reserve(std::max({offset + bytes, alignUp(bytes) * std::max<size_t>(expectedFrames, 1), data.capacity() * 2}));
  }
  data.resize(offset + bytes);
  return data.data() + offset;
}

/** Rows of plane `p` of a frame `height` rows tall: a YUV format's chroma planes are subsampled vertically. */
int planeRows(const AVPixFmtDescriptor* desc, int p, int height) {
  bool chroma = (p == 1 || p == 2) && desc && !(desc->flags & AV_PIX_FMT_FLAG_RGB);
  return chroma ? AV_CEIL_RSHIFT(height, desc->log2_chroma_h) : height;
}

/**
 * Copies `rows` rows of `rowBytes` from a strided source into packed rows at `dst`. On x86 the
 * stores are non-temporal: a batch is far larger than the caches and is read by the consumer
 * much later, so writing around the caches saves the read-for-ownership of every destination
 * line and leaves the decoder threads' reference frames cached (about half the cost of memcpy).
 */
void copyRowsPacked(uint8_t* dst, const uint8_t* src, ptrdiff_t srcStride, size_t rowBytes, int rows) {
#if defined(__SSE2__)
  for (int r = 0; r < rows; ++r, src += srcStride, dst += rowBytes) {
    size_t head = std::min(rowBytes, static_cast<size_t>((16 - (reinterpret_cast<uintptr_t>(dst) & 15)) & 15));
    std::memcpy(dst, src, head);
    size_t i = head;
    for (; i + 64 <= rowBytes; i += 64) {
      __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
      __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 16));
      __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 32));
      __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 48));
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i), a);
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 16), b);
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 32), c);
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 48), d);
    }
    for (; i + 16 <= rowBytes; i += 16) {
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i), _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
    }
    std::memcpy(dst + i, src + i, rowBytes - i);
  }
  _mm_sfence();  // streamed stores are weakly ordered: make them visible before the batch is handed on
#else
  for (int r = 0; r < rows; ++r, src += srcStride, dst += rowBytes) std::memcpy(dst, src, rowBytes);
#endif
}

}  // namespace

namespace {

class BlockPool {
 public:
  void* take(size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    // Best fit among blocks no more than twice the request, so small asks don't pin big blocks.
    auto it = blocks_.lower_bound(bytes);
    if (it == blocks_.end() || it->first > 2 * bytes) return nullptr;
    void* p = it->second;
    held_ -= it->first;
    sizes_[p] = it->first;
    blocks_.erase(it);
    return p;
  }
  /** Keeps `p` for reuse unless the pool is full; returns false when the caller must free it. */
  bool give(void* p, size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (held_ + bytes > cap_) return false;
    blocks_.emplace(bytes, p);
    held_ += bytes;
    return true;
  }
  /** Real size of a block handed out by take() (it may exceed what was asked). */
  size_t realSize(void* p, size_t asked) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = sizes_.find(p);
    if (it == sizes_.end()) return asked;
    size_t real = it->second;
    sizes_.erase(it);
    return real;
  }
  void remember(void* p, size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    sizes_[p] = bytes;
  }

 private:
  std::mutex mutex_;
  std::multimap<size_t, void*> blocks_;
  std::unordered_map<void*, size_t> sizes_;
  size_t held_ = 0;
  size_t cap_ = [] {
    const char* mb = std::getenv("EC_NATIVE_POOL_MB");
    return static_cast<size_t>(mb ? std::strtoull(mb, nullptr, 10) : 512) << 20;
  }();
};

BlockPool& blockPool() {
  static BlockPool* pool = new BlockPool();  // never destroyed: finalizers may run at exit
  return *pool;
}

constexpr size_t kPooledMin = 1 << 20;  // smaller blocks are cheap for malloc's own caches

}  // namespace

void* allocateBatchMemory(size_t bytes) {
  if (bytes >= kPooledMin) {
    if (void* p = blockPool().take(bytes)) return p;
  }
  void* p = std::malloc(std::max<size_t>(bytes, 1));
  if (!p) throw std::bad_alloc();
  if (bytes >= kPooledMin) blockPool().remember(p, bytes);
  return p;
}

void freeBatchMemory(void* p, size_t bytes) noexcept {
  if (!p) return;
  if (bytes >= kPooledMin) {
    size_t real = blockPool().realSize(p, bytes);
    if (blockPool().give(p, real)) return;
  }
  std::free(p);
}

std::string pixelFormatName(int format) {
  const char* name = av_get_pix_fmt_name(static_cast<AVPixelFormat>(format));
  return name ? name : "unknown";
}

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
const int kPackedTag = 0;  // opaque of our AVBuffers: how appendNative recognises them

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

HostConverter::HostConverter(OutputFormat output, int resizeHeight, int resizeWidth)
    : output_(output), resizeHeight_(resizeHeight), resizeWidth_(resizeWidth) {}

void HostConverter::append(const AVFrame* frame, int64_t pts, HostBatch& batch, size_t expectedFrames) {
  HostFrame info;
  info.pts = pts;
  if (output_ == OutputFormat::Native && resizeHeight_ == 0) {
    appendNative(frame, info, batch, expectedFrames);
  } else {
    appendScaled(frame, info, batch, expectedFrames);
  }
  batch.frames.push_back(std::move(info));
}

void HostConverter::appendNative(const AVFrame* frame, HostFrame& info, HostBatch& batch, size_t expectedFrames) {
  auto format = static_cast<AVPixelFormat>(frame->format);
  // Packed with alignment 1: the exact bytes ffmpeg's rawvideo encoder (and so framemd5) hashes.
  int size = av_image_get_buffer_size(format, frame->width, frame->height, 1);
  if (size < 0) throw NativeException("ERR_UNSUPPORTED_FORMAT", "Cannot pack pixel format " + pixelFormatName(format));
  info.bytes = static_cast<size_t>(size);
  info.width = frame->width;
  info.height = frame->height;
  info.format = pixelFormatName(format);

  int linesizes[4] = {0, 0, 0, 0};
  av_image_fill_linesizes(linesizes, format, frame->width);
  const AVPixFmtDescriptor* desc = av_pix_fmt_desc_get(format);
  bool paletted = desc && (desc->flags & AV_PIX_FMT_FLAG_PAL);
  // Decoded straight into one of our packed buffers, and still laid out packed (no cropping
  // moved a plane): keep the buffer instead of copying. The call's flush drops the decoder's
  // references, so ours is the last one when the frames reach JS.
  bool inPlace = !paletted && frame->buf[0] && !frame->buf[1] && av_buffer_get_opaque(frame->buf[0]) == &kPackedTag;
  size_t planeOffset = 0;
  for (int p = 0; p < 4 && linesizes[p] > 0; ++p) {
    int rows = planeRows(desc, p, frame->height);
    info.planes.push_back({planeOffset, linesizes[p], rows});
    inPlace = inPlace && frame->linesize[p] == linesizes[p] && frame->data[p] == frame->buf[0]->data + planeOffset;
    planeOffset += static_cast<size_t>(linesizes[p]) * rows;
  }
  if (inPlace && planeOffset == static_cast<size_t>(size)) {
    AVBufferRef* ref = av_buffer_ref(frame->buf[0]);
    if (!ref) throw NativeException("ERR_OUT_OF_MEMORY", "av_buffer_ref failed");
    info.own.reset(ref, [](AVBufferRef* r) { av_buffer_unref(&r); });
    info.offset = 0;
    return;
  }
  uint8_t* dst = reserveFrame(batch, static_cast<size_t>(size), expectedFrames, info.offset);
  for (size_t p = 0; p < info.planes.size() && !paletted; ++p) {
    copyRowsPacked(dst + info.planes[p].offset, frame->data[p], frame->linesize[p], info.planes[p].rowBytes, info.planes[p].rows);
  }
  // Same bytes as av_image_copy_to_buffer(align 1), which packs every plane this way; only the
  // palette of paletted formats is laid out differently, so those keep its copy.
  if (paletted || planeOffset != static_cast<size_t>(size)) {
    int copied = av_image_copy_to_buffer(dst, size, frame->data, frame->linesize, format, frame->width, frame->height, 1);
    if (copied < 0) throw NativeException("ERR_UNSUPPORTED_FORMAT", "Cannot copy frame: " + avErrorString(copied));
  }
}

SwsContext* HostConverter::scalerFor(const AVFrame* frame, AVPixelFormat dst, int dstW, int dstH) {
  // Plain bilinear keeps libswscale on its SIMD yuv2rgb paths; accurate_rnd/full_chroma_int cost ~8x.
  int flags = SWS_BILINEAR;
  SwsContext* ctx = sws_getCachedContext(sws_.release(), frame->width, frame->height,
                                         static_cast<AVPixelFormat>(frame->format), dstW, dstH, dst, flags, nullptr,
                                         nullptr, nullptr);
  sws_.reset(ctx);
  if (!ctx) {
    throw NativeException("ERR_UNSUPPORTED_FORMAT", "libswscale cannot convert " + pixelFormatName(frame->format) +
                                                        " to " + pixelFormatName(dst));
  }
  int colorspace = frame->colorspace == AVCOL_SPC_BT709 ? SWS_CS_ITU709
                   : frame->colorspace == AVCOL_SPC_BT2020_NCL ? SWS_CS_BT2020
                                                                : SWS_CS_DEFAULT;
  int srcFull = frame->color_range == AVCOL_RANGE_JPEG ? 1 : 0;
  sws_setColorspaceDetails(ctx, sws_getCoefficients(colorspace), srcFull, sws_getCoefficients(SWS_CS_DEFAULT), 1, 0,
                           1 << 16, 1 << 16);
  return ctx;
}

void HostConverter::scaleToRgb24(const AVFrame* frame, int dstW, int dstH, uint8_t* out) {
  SwsContext* ctx = scalerFor(frame, AV_PIX_FMT_RGB24, dstW, dstH);
  int packed = dstW * 3;
  if (dstW % 16 == 0) {
    uint8_t* planes[4] = {out, nullptr, nullptr, nullptr};
    int linesizes[4] = {packed, 0, 0, 0};
    sws_scale(ctx, frame->data, frame->linesize, 0, frame->height, planes, linesizes);
    return;
  }
  // libswscale's SIMD yuv->rgb converts whole groups of 8 pixels and, when a group would not fit
  // the row stride, leaves the row's last pixels unwritten: give it rows padded to 16 pixels, then pack.
  int stride = ((dstW + 15) / 16 * 16) * 3;
  padded_.resize(static_cast<size_t>(stride) * dstH);
  uint8_t* planes[4] = {padded_.data(), nullptr, nullptr, nullptr};
  int linesizes[4] = {stride, 0, 0, 0};
  sws_scale(ctx, frame->data, frame->linesize, 0, frame->height, planes, linesizes);
  for (int row = 0; row < dstH; ++row) {
    std::memcpy(out + static_cast<size_t>(row) * packed, padded_.data() + static_cast<size_t>(row) * stride, packed);
  }
}

void HostConverter::appendScaled(const AVFrame* frame, HostFrame& info, HostBatch& batch, size_t expectedFrames) {
  int dstW = resizeWidth_ > 0 ? resizeWidth_ : frame->width;
  int dstH = resizeHeight_ > 0 ? resizeHeight_ : frame->height;
  info.width = dstW;
  info.height = dstH;
  if (output_ == OutputFormat::Native) {
    // A resized native frame keeps the decoded pixel format.
    auto format = static_cast<AVPixelFormat>(frame->format);
    int size = av_image_get_buffer_size(format, dstW, dstH, 1);
    if (size < 0) throw NativeException("ERR_UNSUPPORTED_FORMAT", "Cannot pack " + pixelFormatName(format));
    uint8_t* dst = reserveFrame(batch, static_cast<size_t>(size), expectedFrames, info.offset);
    uint8_t* planes[4];
    int linesizes[4];
    av_image_fill_arrays(planes, linesizes, dst, format, dstW, dstH, 1);
    sws_scale(scalerFor(frame, format, dstW, dstH), frame->data, frame->linesize, 0, frame->height, planes, linesizes);
    info.bytes = static_cast<size_t>(size);
    info.format = pixelFormatName(format);
    const AVPixFmtDescriptor* desc = av_pix_fmt_desc_get(format);
    for (int p = 0; p < 4 && linesizes[p] > 0; ++p) {
      info.planes.push_back({static_cast<size_t>(planes[p] - dst), linesizes[p], planeRows(desc, p, dstH)});
    }
    return;
  }
  if (output_ == OutputFormat::Rgb24) {
    size_t size = static_cast<size_t>(dstW) * dstH * 3;
    uint8_t* dst = reserveFrame(batch, size, expectedFrames, info.offset);
    scaleToRgb24(frame, dstW, dstH, dst);
    info.bytes = size;
    info.format = "rgb24";
    info.planes.push_back({0, dstW * 3, dstH});
    return;
  }
  // Planar float RGB in [0, 1].
  size_t planeBytes = static_cast<size_t>(dstW) * dstH * sizeof(float);
  uint8_t* dst = reserveFrame(batch, planeBytes * 3, expectedFrames, info.offset);
  info.bytes = planeBytes * 3;
  info.format = "rgbf32-planar";
  for (int p = 0; p < 3; ++p) info.planes.push_back({planeBytes * p, dstW * 4, dstH});
  const AVPixFmtDescriptor* srcDesc = av_pix_fmt_desc_get(static_cast<AVPixelFormat>(frame->format));
  if (srcDesc && srcDesc->comp[0].depth <= 8) {
    // 8-bit sources: libswscale's SIMD rgb24 path, then a table lookup per byte — several times
    // faster than its float writer, and the same pixels as output "rgb24".
    size_t pixels = static_cast<size_t>(dstW) * dstH;
    scratch_.resize(pixels * 3);
    scaleToRgb24(frame, dstW, dstH, scratch_.data());
    static const auto lut = [] {
      std::array<float, 256> t{};
      for (int i = 0; i < 256; ++i) t[i] = static_cast<float>(i) / 255.0f;
      return t;
    }();
    auto* r = reinterpret_cast<float*>(dst);
    float* g = r + pixels;
    float* b = g + pixels;
    const uint8_t* src = scratch_.data();
    for (size_t i = 0; i < pixels; ++i, src += 3) {
      r[i] = lut[src[0]];
      g[i] = lut[src[1]];
      b[i] = lut[src[2]];
    }
    return;
  }
  // Deeper sources keep their precision: libswscale writes GBR plane order, so point its planes at ours.
  uint8_t* planes[4] = {dst + planeBytes, dst + 2 * planeBytes, dst, nullptr};  // G, B, R
  int linesizes[4] = {dstW * 4, dstW * 4, dstW * 4, 0};
  sws_scale(scalerFor(frame, AV_PIX_FMT_GBRPF32LE, dstW, dstH), frame->data, frame->linesize, 0, frame->height,
            planes, linesizes);
}

}  // namespace ec

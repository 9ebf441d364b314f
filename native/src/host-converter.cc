#include "host-converter.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

extern "C" {
#include <libavutil/imgutils.h>
#include <libavutil/pixdesc.h>
}

#include "errors.h"
#include "packed-frames.h"

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

/**
 * Moves the planes of a frame decoded at its coded height (HostFrame::movedFrom) to their packed
 * offsets in the same buffer, in order: each lies at or below where it was and ends before the
 * next one starts, so no plane overwrites another before it has moved. Returns the bytes moved.
 */
size_t movePlanes(HostFrame& f) {
  size_t moved = 0;
  for (size_t p = 0; p < f.planes.size(); ++p) {
    const PlaneLayout& plane = f.planes[p];
    if (f.movedFrom[p] == plane.offset) continue;
    size_t bytes = static_cast<size_t>(plane.rowBytes) * plane.rows;
    std::memmove(f.own->data + plane.offset, f.own->data + f.movedFrom[p], bytes);
    moved += bytes;
  }
  f.movedFrom.clear();
  return moved;
}

/** Bytes per sample of a packed frame's typed-array view: 2 for formats deeper than 8 bits. */
size_t sampleAlign(const AVPixFmtDescriptor* desc) { return desc && desc->comp[0].depth > 8 ? 2 : 1; }

}  // namespace

std::string pixelFormatName(int format) {
  const char* name = av_get_pix_fmt_name(static_cast<AVPixelFormat>(format));
  return name ? name : "unknown";
}

HostConverter::HostConverter(OutputFormat output, int resizeHeight, int resizeWidth)
    : output_(output), resizeHeight_(resizeHeight), resizeWidth_(resizeWidth) {}

void HostConverter::append(const AVFrame* frame, int64_t pts, HostBatch& batch, size_t expectedFrames,
                           const std::vector<FrameTarget>* targets) {
  HostFrame info;
  info.pts = pts;
  Place place{batch, expectedFrames, nullptr, -1};
  for (size_t i = 0; targets && i < targets->size(); ++i) {
    if ((*targets)[i].pts == pts) {
      place.target = &(*targets)[i];
      place.targetIndex = static_cast<int>(i);
      break;
    }
  }
  if (output_ == OutputFormat::Native && resizeHeight_ == 0) {
    appendNative(frame, info, place);
  } else {
    appendScaled(frame, info, place);
  }
  batch.frames.push_back(std::move(info));
}

uint8_t* HostConverter::Place::operator()(HostFrame& info, size_t bytes, size_t align) const {
  // A target of another size (or one a typed-array view of the frame could not start at) is
  // not used: the frame goes where it would without one.
  if (target && target->bytes == bytes && reinterpret_cast<uintptr_t>(target->data) % align == 0) {
    info.target = targetIndex;
    info.offset = 0;
    return target->data;
  }
  return reserveFrame(batch, bytes, expectedFrames, info.offset);
}

void HostConverter::appendNative(const AVFrame* frame, HostFrame& info, const Place& place) {
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
  // Decoded straight into one of our packed buffers: keep the buffer instead of copying. Laid
  // out packed already (no cropping moved a plane), it is the frame as it stands: the call's
  // flush drops the decoder's references, so ours is the last one when the frames reach JS.
  // Decoded at its coded height (1088 rows for 1080), its planes lie in order but below their
  // packed offsets: they are moved up once the decoder no longer reads the frame (now, when
  // nobody else holds it, else in settle()).
  // A target wins: the frame is copied once, into its place, instead of reaching JS as a buffer of its own.
  bool inPlace = !place.target && !paletted && frame->buf[0] && !frame->buf[1] && isPackedBuffer(frame->buf[0]);
  bool moved = false;
  std::vector<size_t> from;
  ptrdiff_t sourceEnd = 0;  // where the previous plane ends in the decoder's layout
  size_t planeOffset = 0;
  for (int p = 0; p < 4 && linesizes[p] > 0; ++p) {
    int rows = planeRows(desc, p, frame->height);
    size_t planeBytes = static_cast<size_t>(linesizes[p]) * rows;
    info.planes.push_back({planeOffset, linesizes[p], rows});
    if (inPlace) {
      ptrdiff_t at = frame->data[p] - frame->buf[0]->data;
      inPlace = frame->linesize[p] == linesizes[p] && at >= sourceEnd && at >= static_cast<ptrdiff_t>(planeOffset) &&
                static_cast<size_t>(at) + planeBytes <= frame->buf[0]->size;
      moved = moved || at != static_cast<ptrdiff_t>(planeOffset);
      sourceEnd = at + static_cast<ptrdiff_t>(planeBytes);
      from.push_back(static_cast<size_t>(at));
    }
    planeOffset += planeBytes;
  }
  if (inPlace && planeOffset == static_cast<size_t>(size)) {
    // Nobody but the frame we were handed holds the buffer: the decoder is done with it.
    bool alone = av_buffer_get_ref_count(frame->buf[0]) == 1;
    AVBufferRef* ref = av_buffer_ref(frame->buf[0]);
    if (!ref) throw NativeException("ERR_OUT_OF_MEMORY", "av_buffer_ref failed");
    info.own.reset(ref, [](AVBufferRef* r) { av_buffer_unref(&r); });
    info.offset = 0;
    info.arena = arenaOf(ref, info.arenaBase, info.arenaBytes);
    if (moved) {
      info.movedFrom = std::move(from);
      if (alone) place.batch.copiedBytes += movePlanes(info);
    }
    return;
  }
  uint8_t* dst = place(info, static_cast<size_t>(size), sampleAlign(desc));
  place.batch.copiedBytes += static_cast<size_t>(size);
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

void HostConverter::settle(HostBatch& batch) {
  for (HostFrame& f : batch.frames) {
    if (f.movedFrom.empty()) continue;
    if (av_buffer_is_writable(f.own.get())) {
      batch.copiedBytes += movePlanes(f);
      continue;
    }
    // The decoder still reads it (a reference frame of a run that goes on): copy it out.
    AVBufferRef* fresh = newPackedBuffer(f.bytes);
    if (!fresh) throw NativeException("ERR_OUT_OF_MEMORY", "Cannot allocate a frame of " + std::to_string(f.bytes) + " bytes");
    for (size_t p = 0; p < f.planes.size(); ++p) {
      const PlaneLayout& plane = f.planes[p];
      copyRowsPacked(fresh->data + plane.offset, f.own->data + f.movedFrom[p], plane.rowBytes, plane.rowBytes, plane.rows);
    }
    f.own.reset(fresh, [](AVBufferRef* r) { av_buffer_unref(&r); });
    f.arena.reset();
    f.movedFrom.clear();
    batch.copiedBytes += f.bytes;
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

void HostConverter::appendScaled(const AVFrame* frame, HostFrame& info, const Place& place) {
  int dstW = resizeWidth_ > 0 ? resizeWidth_ : frame->width;
  int dstH = resizeHeight_ > 0 ? resizeHeight_ : frame->height;
  info.width = dstW;
  info.height = dstH;
  if (output_ == OutputFormat::Native) {
    // A resized native frame keeps the decoded pixel format.
    auto format = static_cast<AVPixelFormat>(frame->format);
    int size = av_image_get_buffer_size(format, dstW, dstH, 1);
    if (size < 0) throw NativeException("ERR_UNSUPPORTED_FORMAT", "Cannot pack " + pixelFormatName(format));
    uint8_t* dst = place(info, static_cast<size_t>(size), sampleAlign(av_pix_fmt_desc_get(format)));
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
    uint8_t* dst = place(info, size, 1);
    scaleToRgb24(frame, dstW, dstH, dst);
    info.bytes = size;
    info.format = "rgb24";
    info.planes.push_back({0, dstW * 3, dstH});
    return;
  }
  // Planar float RGB in [0, 1].
  size_t planeBytes = static_cast<size_t>(dstW) * dstH * sizeof(float);
  uint8_t* dst = place(info, planeBytes * 3, sizeof(float));
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

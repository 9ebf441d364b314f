#include "kernels.h"

#include <algorithm>
#include <cstdlib>

extern "C" {
#include <libavutil/pixdesc.h>
}

#include "../errors.h"

namespace ec::kernels {

YuvImage yuvImage(AVPixelFormat format, const uint8_t* const planes[4], const int pitches[4], int width, int height) {
  const AVPixFmtDescriptor* d = av_pix_fmt_desc_get(format);
  bool yuv = d && !(d->flags & (AV_PIX_FMT_FLAG_RGB | AV_PIX_FMT_FLAG_PAL | AV_PIX_FMT_FLAG_HWACCEL |
                                AV_PIX_FMT_FLAG_BE | AV_PIX_FMT_FLAG_FLOAT | AV_PIX_FMT_FLAG_BITSTREAM)) &&
             d->nb_components >= 3 && d->comp[0].depth >= 8 && d->comp[0].depth <= 16 && d->comp[0].plane == 0 &&
             d->comp[1].step == d->comp[2].step && (d->comp[0].depth > 8) == (d->comp[0].step == 2);
  if (!yuv) {
    throw NativeException("ERR_UNSUPPORTED_FORMAT", std::string("Cannot convert pixel format ") +
                                                        (d ? d->name : "unknown") + " with the CUDA kernels");
  }
  YuvImage s{};
  s.bytesPerSample = d->comp[0].depth > 8 ? 2 : 1;
  s.y = planes[0];
  s.yPitch = pitches[0];
  s.u = planes[d->comp[1].plane] + d->comp[1].offset;
  s.v = planes[d->comp[2].plane] + d->comp[2].offset;
  s.uvPitch = pitches[d->comp[1].plane];
  s.uvStep = d->comp[1].step;
  // Stored value → 8-bit units: drop the MSB alignment (p010's shift 6) and the extra depth.
  s.scale = 1.0f / static_cast<float>(1 << (d->comp[0].shift + d->comp[0].depth - 8));
  s.width = width;
  s.height = height;
  s.chromaShiftX = d->log2_chroma_w;
  s.chromaShiftY = d->log2_chroma_h;
  return s;
}

ColorMatrix matrixFor(AVColorSpace space, AVColorRange range) {
  bool full = range == AVCOL_RANGE_JPEG;
  if (space == AVCOL_SPC_BT709) return colorMatrix(0.2126f, 0.0722f, full);
  if (space == AVCOL_SPC_BT2020_NCL) return colorMatrix(0.2627f, 0.0593f, full);
  return colorMatrix(0.299f, 0.114f, full);
}

LumaSource lumaSource(const std::string& format, const uint8_t* data, int pitch, int width, int height) {
  LumaSource s{data, pitch, width, height, kLuma8, 0};
  if (format == "rgb24") {
    s.kind = kLumaRgb24;
  } else if (format == "rgbf32-planar") {
    s.kind = kLumaRgbF32Planar;
  } else if (format == "p010le" || format == "p016le") {
    s.kind = kLuma16;
    s.shift = 8;  // MSB-aligned
  } else if (format == "yuv420p10le" || format == "yuv422p10le" || format == "yuv444p10le" || format == "gray10le") {
    s.kind = kLuma16;
    s.shift = 2;
  } else if (format == "yuv420p12le") {
    s.kind = kLuma16;
    s.shift = 4;
  } else if (format != "nv12" && format != "yuv420p" && format != "yuvj420p" && format != "yuv422p" &&
             format != "yuv444p" && format != "gray") {
    throw NativeException("ERR_UNSUPPORTED_FORMAT", "The label statistics cannot read " + format + " frames");
  }
  return s;
}

OutputLayout setOutput(ConvertParams& p, bool rgb24, int width, int height) {
  p.output = rgb24 ? kRgb24 : kRgbF32Planar;
  p.dstWidth = width;
  p.dstHeight = height;
  p.dstPitch = rgb24 ? width * 3 : width;  // bytes for rgb24, floats for rgbf32-planar
  if (rgb24) return {1, width * 3, static_cast<size_t>(width) * 3 * height};
  return {3, width * static_cast<int>(sizeof(float)), static_cast<size_t>(width) * height * sizeof(float)};
}

void convertOnHost(const ConvertParams& p) {
  for (int y = 0; y < p.dstHeight; ++y) {
    for (int x = 0; x < p.dstWidth; ++x) convertAt(p, x, y);
  }
}

std::vector<LumaRecord> lumaRecords(const std::vector<LumaSource>& frames, int step) {
  std::vector<LumaRecord> out;
  out.reserve(frames.size());
  LumaStatsLayout last{-1, -1, step};
  size_t offset = 0;
  for (const LumaSource& src : frames) {
    LumaStatsLayout l = lumaStatsLayout(src.width, src.height, step);
    out.push_back({l, offset, l.gridWidth == last.gridWidth && l.gridHeight == last.gridHeight});
    offset += static_cast<size_t>(l.words());
    last = l;
  }
  return out;
}

size_t lumaRecordWords(const std::vector<LumaRecord>& records) {
  return records.empty() ? 0 : records.back().offset + static_cast<size_t>(records.back().layout.words());
}

std::vector<uint32_t> lumaStatsOnHost(const std::vector<LumaSource>& frames, int step) {
  std::vector<LumaRecord> layout = lumaRecords(frames, step);
  std::vector<uint32_t> records(lumaRecordWords(layout), 0);
  std::vector<uint8_t> grid;
  std::vector<uint8_t> prev;
  for (size_t f = 0; f < frames.size(); ++f) {
    const LumaSource& src = frames[f];
    const LumaStatsLayout& l = layout[f].layout;
    uint32_t* record = records.data() + layout[f].offset;
    grid.assign(static_cast<size_t>(l.gridWidth) * l.gridHeight, 0);
    uint64_t diff = 0;
    for (int gy = 0; gy < l.gridHeight; ++gy) {
      for (int gx = 0; gx < l.gridWidth; ++gx) {
        size_t i = static_cast<size_t>(gy) * l.gridWidth + gx;
        uint8_t v = lumaAt(src, gx * step, gy * step);
        grid[i] = v;
        record[l.histogram() + v] += 1;
        record[l.rowSums() + gy] += v;
        record[l.colSums() + gx] += v;
        if (layout[f].compared) diff += static_cast<uint64_t>(std::abs(static_cast<int>(v) - static_cast<int>(prev[i])));
      }
    }
    record[l.diff()] = static_cast<uint32_t>(diff);
    record[l.diff() + 1] = static_cast<uint32_t>(diff >> 32);
    std::swap(grid, prev);
  }
  return records;
}

}  // namespace ec::kernels

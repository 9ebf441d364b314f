// Per-pixel math shared by the CUDA kernels (kernels.cu) and their host twins
// (kernel-reference.cc): one definition, so the twins test on any machine the exact
// arithmetic the GPU runs. Plain structs of ints and pointers: the same layout for nvcc
// and the host compiler, passed by value to cuLaunchKernel.
#pragma once

#include <stdint.h>

#ifdef __CUDACC__
#define EC_HD __host__ __device__ __forceinline__
#else
#define EC_HD inline
#endif

namespace ec::kernels {

/** A YUV image: 8-bit or 16-bit little-endian samples, planar (yuv420p) or semi-planar (nv12/p010). */
struct YuvImage {
  const uint8_t* y;
  const uint8_t* u;
  const uint8_t* v;  // for semi-planar: u + bytes per sample
  int yPitch;        // bytes between rows
  int uvPitch;
  int uvStep;          // bytes between two chroma samples of one plane in a row: 1, 2 (nv12, 16-bit planar) or 4 (p010)
  int bytesPerSample;  // 1 or 2
  float scale;         // sample value → 8-bit units: 1 (8-bit), 1/4 (10-bit LSB-aligned), 1/256 (p010/p016)
  int width;
  int height;
  int chromaShiftX;  // log2 of chroma subsampling: 1 for 4:2:0 and 4:2:2
  int chromaShiftY;  // 1 for 4:2:0
};

/** Y'CbCr → R'G'B' for one matrix and range, in 8-bit units. */
struct ColorMatrix {
  float yOffset, yGain;  // Y' = (Y - yOffset) * yGain
  float cGain;           // Cb = (U - 128) * cGain
  float rCr, gCb, gCr, bCb;
};

enum OutputKind { kRgb24 = 0, kRgbF32Planar = 1 };

struct ConvertParams {
  YuvImage src;
  ColorMatrix matrix;
  uint8_t* dst;
  int dstPitch;  // rgb24: bytes between rows; rgbf32-planar: floats between rows (planes are dstPitch × dstHeight)
  int dstWidth;
  int dstHeight;
  int output;  // OutputKind
};

/** Kr/Kb of BT.601 (default), BT.709 or BT.2020; `full` for JPEG-range sources. */
inline ColorMatrix colorMatrix(float kr, float kb, bool full) {
  ColorMatrix m;
  float kg = 1.0f - kr - kb;
  m.yOffset = full ? 0.0f : 16.0f;
  m.yGain = full ? 1.0f : 255.0f / 219.0f;
  m.cGain = full ? 1.0f : 255.0f / 224.0f;
  m.rCr = 2.0f * (1.0f - kr);
  m.bCb = 2.0f * (1.0f - kb);
  m.gCb = -2.0f * (1.0f - kb) * kb / kg;
  m.gCr = -2.0f * (1.0f - kr) * kr / kg;
  return m;
}

EC_HD float loadSample(const uint8_t* row, int byteOffset, int bytesPerSample) {
  if (bytesPerSample == 1) return static_cast<float>(row[byteOffset]);
  return static_cast<float>(row[byteOffset] | (row[byteOffset + 1] << 8));
}

EC_HD int clampIndex(int i, int n) { return i < 0 ? 0 : (i >= n ? n - 1 : i); }

/**
 * Triangle-filtered sample of one plane at a (fractional) position in that plane's pixels:
 * bilinear when `radius` is 1, and an antialiasing tent as wide as the downscale otherwise
 * (what libswscale's SWS_BILINEAR does when shrinking). Returns 8-bit units.
 */
EC_HD float filtered(const uint8_t* plane, int pitch, int step, int bytesPerSample, int w, int h, float cx, float cy,
                     float rx, float ry, float scale) {
  int x0 = static_cast<int>(cx - rx) + 1 - (cx - rx < 0.0f ? 1 : 0);
  int y0 = static_cast<int>(cy - ry) + 1 - (cy - ry < 0.0f ? 1 : 0);
  float sum = 0.0f;
  float weights = 0.0f;
  for (int y = y0; static_cast<float>(y) < cy + ry; ++y) {
    float d = cy - static_cast<float>(y);
    float wy = 1.0f - (d < 0.0f ? -d : d) / ry;
    if (wy <= 0.0f) continue;
    const uint8_t* row = plane + static_cast<long long>(clampIndex(y, h)) * pitch;
    for (int x = x0; static_cast<float>(x) < cx + rx; ++x) {
      float e = cx - static_cast<float>(x);
      float wx = 1.0f - (e < 0.0f ? -e : e) / rx;
      if (wx <= 0.0f) continue;
      float wgt = wx * wy;
      sum += wgt * loadSample(row, clampIndex(x, w) * step, bytesPerSample);
      weights += wgt;
    }
  }
  return weights > 0.0f ? sum / weights * scale : 0.0f;
}

/** The R, G, B (8-bit units, unclamped) of output pixel (ox, oy). */
EC_HD void convertPixel(const ConvertParams& p, int ox, int oy, float rgb[3]) {
  const YuvImage& s = p.src;
  float sx = static_cast<float>(s.width) / static_cast<float>(p.dstWidth);
  float sy = static_cast<float>(s.height) / static_cast<float>(p.dstHeight);
  // Centre of the output pixel in luma coordinates (pixel centres at integers).
  float cx = (static_cast<float>(ox) + 0.5f) * sx - 0.5f;
  float cy = (static_cast<float>(oy) + 0.5f) * sy - 0.5f;
  float rx = sx > 1.0f ? sx : 1.0f;
  float ry = sy > 1.0f ? sy : 1.0f;
  float luma = filtered(s.y, s.yPitch, s.bytesPerSample, s.bytesPerSample, s.width, s.height, cx, cy, rx, ry, s.scale);
  // MPEG-2/H.264 default siting: chroma co-sited with even luma columns, centred between rows.
  int cw = (s.width + (1 << s.chromaShiftX) - 1) >> s.chromaShiftX;
  int ch = (s.height + (1 << s.chromaShiftY) - 1) >> s.chromaShiftY;
  float fx = static_cast<float>(1 << s.chromaShiftX);
  float fy = static_cast<float>(1 << s.chromaShiftY);
  float ccx = cx / fx;
  float ccy = s.chromaShiftY ? (cy - 0.5f) / fy : cy;
  float crx = rx / fx > 1.0f ? rx / fx : 1.0f;
  float cry = ry / fy > 1.0f ? ry / fy : 1.0f;
  float u = filtered(s.u, s.uvPitch, s.uvStep, s.bytesPerSample, cw, ch, ccx, ccy, crx, cry, s.scale);
  float v = filtered(s.v, s.uvPitch, s.uvStep, s.bytesPerSample, cw, ch, ccx, ccy, crx, cry, s.scale);
  const ColorMatrix& m = p.matrix;
  float yy = (luma - m.yOffset) * m.yGain;
  float cb = (u - 128.0f) * m.cGain;
  float cr = (v - 128.0f) * m.cGain;
  rgb[0] = yy + m.rCr * cr;
  rgb[1] = yy + m.gCb * cb + m.gCr * cr;
  rgb[2] = yy + m.bCb * cb;
}

EC_HD uint8_t toByte(float v) {
  float r = v + 0.5f;
  return r <= 0.0f ? 0 : (r >= 255.0f ? 255 : static_cast<uint8_t>(r));
}

EC_HD float toUnit(float v) {
  float r = v / 255.0f;
  return r <= 0.0f ? 0.0f : (r >= 1.0f ? 1.0f : r);
}

/** Writes output pixel (ox, oy) of a conversion. */
EC_HD void convertAt(const ConvertParams& p, int ox, int oy) {
  float rgb[3];
  convertPixel(p, ox, oy, rgb);
  if (p.output == kRgb24) {
    uint8_t* out = p.dst + static_cast<long long>(oy) * p.dstPitch + 3 * ox;
    out[0] = toByte(rgb[0]);
    out[1] = toByte(rgb[1]);
    out[2] = toByte(rgb[2]);
    return;
  }
  float* planes = reinterpret_cast<float*>(p.dst);
  long long plane = static_cast<long long>(p.dstPitch) * p.dstHeight;
  long long at = static_cast<long long>(oy) * p.dstPitch + ox;
  planes[at] = toUnit(rgb[0]);
  planes[at + plane] = toUnit(rgb[1]);
  planes[at + 2 * plane] = toUnit(rgb[2]);
}

// ---- label statistics: the luma grid every built-in labeler reads (sdk/labels/frame.ts) ----

enum LumaKind { kLuma8 = 0, kLuma16 = 1, kLumaRgb24 = 2, kLumaRgbF32Planar = 3 };

/** Where a frame's luma comes from, as sdk/labels/frame.ts's lumaGrid reads it. */
struct LumaSource {
  const uint8_t* data;
  int pitch;  // bytes between rows (rgbf32-planar: of one plane)
  int width;
  int height;
  int kind;   // LumaKind
  int shift;  // kLuma16: right shift to 8 bits (2 for 10-bit LSB-aligned, 8 for p010/p016)
};

/** The 8-bit luma sample at pixel (x, y), bit-identical to lumaGrid in sdk/labels/frame.ts. */
EC_HD uint8_t lumaAt(const LumaSource& s, int x, int y) {
  const uint8_t* row = s.data + static_cast<long long>(y) * s.pitch;
  if (s.kind == kLuma8) return row[x];
  if (s.kind == kLuma16) {
    int v = (row[2 * x] | (row[2 * x + 1] << 8)) >> s.shift;
    return static_cast<uint8_t>(v > 255 ? 255 : v);
  }
  if (s.kind == kLumaRgb24) {
    const uint8_t* px = row + 3 * x;
    return static_cast<uint8_t>((77 * px[0] + 150 * px[1] + 29 * px[2] + 128) >> 8);
  }
  // Planar float RGB in [0, 1]: the same formula and rounding as frame.ts (double precision).
  const float* r = reinterpret_cast<const float*>(row) + x;
  long long plane = static_cast<long long>(s.pitch / 4) * s.height;
  double v = 255.0 * (0.299 * static_cast<double>(r[0]) + 0.587 * static_cast<double>(r[plane]) +
                      0.114 * static_cast<double>(r[2 * plane]));
  return v <= 0.0 ? 0 : (v >= 255.0 ? 255 : static_cast<uint8_t>(static_cast<int>(v + 0.5)));
}

/**
 * Per-frame integer sums the TypeScript analysis turns into FrameStats (exactly: no rounding
 * happens before TypeScript). One record per frame, in uint32 words, 8-byte aligned:
 * [diff lo, diff hi, histogram[256], rowSums[gridHeight], colSums[gridWidth], (pad)].
 */
struct LumaStatsLayout {
  int gridWidth;
  int gridHeight;
  int step;
  EC_HD int diff() const { return 0; }
  EC_HD int histogram() const { return 2; }
  EC_HD int rowSums() const { return 2 + 256; }
  EC_HD int colSums() const { return 2 + 256 + gridHeight; }
  EC_HD int words() const { return (2 + 256 + gridHeight + gridWidth + 1) / 2 * 2; }
};

EC_HD LumaStatsLayout lumaStatsLayout(int width, int height, int step) {
  LumaStatsLayout l;
  l.step = step;
  l.gridWidth = (width + step - 1) / step;
  l.gridHeight = (height + step - 1) / step;
  return l;
}

}  // namespace ec::kernels

// Host side of the kernels in kernels.cu: describing frames for them, launching them on a
// device, and their host twins (same arithmetic, from pixel-math.h) for machines without one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

extern "C" {
#include <libavutil/pixfmt.h>
}

#include "pixel-math.h"

namespace ec::kernels {

/** Whether this build embeds the compiled kernels; `reason` says why not. */
bool compiled(std::string* reason = nullptr);

/**
 * The YUV layout of a frame's planes (host or device pointers) for a YUV pixel format:
 * planar or semi-planar, 8 to 16 bits. Throws ERR_UNSUPPORTED_FORMAT for anything else.
 */
YuvImage yuvImage(AVPixelFormat format, const uint8_t* const planes[4], const int pitches[4], int width, int height);

/** The conversion matrix libswscale uses for the same frame on the CPU path (BT.601 unless tagged 709/2020). */
ColorMatrix matrixFor(AVColorSpace space, AVColorRange range);

/** Luma source for a frame format the labelers read ("nv12", "p010le", "rgb24", "rgbf32-planar", ...). */
LumaSource lumaSource(const std::string& format, const uint8_t* data, int pitch, int width, int height);

/**
 * A converted frame's packed layout: rgb24 is one plane of width × 3 bytes a row, rgbf32-planar
 * three float planes (R, G, B) back to back. The same for the GPU's output, the host twin's and
 * the frames downloaded from the GPU.
 */
struct OutputLayout {
  int planes;         // 1 or 3
  int pitch;          // bytes a row of each plane
  size_t planeBytes;  // bytes of each plane
  size_t bytes() const { return planeBytes * static_cast<size_t>(planes); }
};

/** Sets p's output fields (kind, size, pitch; not dst) for a `width` × `height` frame and returns its layout. */
OutputLayout setOutput(ConvertParams& p, bool rgb24, int width, int height);

/** Host twin of ec_convert: fills p.dst (host memory). */
void convertOnHost(const ConvertParams& p);

/** One frame's record in a clip's ec_luma_stats records. */
struct LumaRecord {
  LumaStatsLayout layout;
  size_t offset;  // in uint32 words from the first record
  bool compared;  // the difference to the previous frame was taken (same grid size)
};

/**
 * Where each frame's record lies in a clip's records, and whether its difference was taken:
 * the one description the launches, the twin and the JavaScript views all follow.
 */
std::vector<LumaRecord> lumaRecords(const std::vector<LumaSource>& frames, int step);

/** Words of a clip's records: where the last one ends. */
size_t lumaRecordWords(const std::vector<LumaRecord>& records);

/**
 * Host twin of ec_luma_stats over a clip: one record per frame (see lumaRecords), the
 * difference taken against the previous frame when it has the same size.
 */
std::vector<uint32_t> lumaStatsOnHost(const std::vector<LumaSource>& frames, int step);

// A build without CUDA links cuda-stubs.cc for these: they throw ERR_DEVICE_UNAVAILABLE.

/** Runs ec_convert on device `index` (p's pointers are device pointers) and waits for it. */
void convertOnDevice(int index, const ConvertParams& p);

/** Runs ec_luma_stats over a clip of device frames; the records come back to the host. */
std::vector<uint32_t> lumaStatsOnDevice(int index, const std::vector<LumaSource>& frames, int step);

}  // namespace ec::kernels

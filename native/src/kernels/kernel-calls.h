// The kernels called with plain values: parameter checks, the conversion's output frame and
// where each frame's statistics lie in a clip's records. The binding converts JS values to
// these and back, nothing more. Thread-safe: no state of its own.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../decode-types.h"
#include "kernels.h"

namespace ec::kernels {

/** "rgb24" / "rgbf32-planar" → the output format; anything else is Native. */
OutputFormat outputFormatOf(const std::string& name);

/** A checked conversion of a host frame by the host twin of ec_convert (dst not yet set). */
struct ReferenceConversion {
  ConvertParams params;
  OutputLayout layout;
  bool rgb24;
};

/**
 * Checks the frame's YUV layout (ERR_UNSUPPORTED_FORMAT otherwise) and builds the conversion to
 * `output` at `dstWidth` × `dstHeight` (0: the frame's own size) with the matrix of `colorspace`
 * ("bt601", "bt709", "bt2020") and range.
 */
ReferenceConversion referenceConversion(const std::string& format, const uint8_t* const planes[4], const int pitches[4],
                                        int width, int height, OutputFormat output, int dstHeight, int dstWidth,
                                        const std::string& colorspace, bool fullRange);

/** Runs it on the host: one packed frame in a batch of its own. */
HostBatch convertReference(ReferenceConversion conversion);

/** ec_luma_stats over a clip on device `device`, or its host twin where `device` is -1. */
std::vector<uint32_t> lumaStats(int device, const std::vector<LumaSource>& frames, int step);

/** One frame's statistics within a clip's records, in uint32 words from the first. */
struct LumaView {
  int gridWidth;
  int gridHeight;
  size_t histogram;  // 256 words
  size_t rowSums;    // gridHeight words
  size_t colSums;    // gridWidth words
  bool compared;     // absDiff was taken (the previous frame has the same grid)
  double absDiff;
};

/** Where lumaStats(…, frames, step) put each frame's parts, and its difference to the previous. */
std::vector<LumaView> lumaViews(const std::vector<uint32_t>& records, const std::vector<LumaSource>& frames, int step);

}  // namespace ec::kernels

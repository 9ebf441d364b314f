#include "kernel-calls.h"

#include "../errors.h"

extern "C" {
#include <libavutil/pixdesc.h>
}

namespace ec::kernels {

OutputFormat outputFormatOf(const std::string& name) {
  if (name == "rgb24") return OutputFormat::Rgb24;
  if (name == "rgbf32-planar") return OutputFormat::RgbF32Planar;
  return OutputFormat::Native;
}

ReferenceConversion referenceConversion(const std::string& format, const uint8_t* const planes[4], const int pitches[4],
                                        int width, int height, OutputFormat output, int dstHeight, int dstWidth,
                                        const std::string& colorspace, bool fullRange) {
  ReferenceConversion c{};
  c.params.src = yuvImage(av_get_pix_fmt(format.c_str()), planes, pitches, width, height);
  AVColorSpace space = colorspace == "bt709"    ? AVCOL_SPC_BT709
                       : colorspace == "bt2020" ? AVCOL_SPC_BT2020_NCL
                                                : AVCOL_SPC_SMPTE170M;
  c.params.matrix = matrixFor(space, fullRange ? AVCOL_RANGE_JPEG : AVCOL_RANGE_MPEG);
  c.rgb24 = output == OutputFormat::Rgb24;
  c.layout = setOutput(c.params, c.rgb24, dstWidth > 0 ? dstWidth : width, dstHeight > 0 ? dstHeight : height);
  return c;
}

HostBatch convertReference(ReferenceConversion c) {
  HostBatch batch;
  batch.data->resize(c.layout.bytes());
  c.params.dst = batch.data->data();
  convertOnHost(c.params);
  HostFrame frame;
  frame.bytes = c.layout.bytes();
  frame.width = c.params.dstWidth;
  frame.height = c.params.dstHeight;
  frame.format = c.rgb24 ? "rgb24" : "rgbf32-planar";
  for (int p = 0; p < c.layout.planes; ++p) frame.planes.push_back({p * c.layout.planeBytes, c.layout.pitch, c.params.dstHeight});
  batch.frames.push_back(std::move(frame));
  return batch;
}

std::vector<uint32_t> lumaStats(int device, const std::vector<LumaSource>& frames, int step) {
  return device >= 0 ? lumaStatsOnDevice(device, frames, step) : lumaStatsOnHost(frames, step);
}

std::vector<LumaView> lumaViews(const std::vector<uint32_t>& records, const std::vector<LumaSource>& frames, int step) {
  std::vector<LumaRecord> layout = lumaRecords(frames, step);
  std::vector<LumaView> views;
  views.reserve(layout.size());
  for (const LumaRecord& r : layout) {
    const LumaStatsLayout& l = r.layout;
    const uint32_t* words = records.data() + r.offset;
    views.push_back({l.gridWidth, l.gridHeight, r.offset + l.histogram(), r.offset + l.rowSums(), r.offset + l.colSums(),
                     r.compared, r.compared ? words[l.diff()] + words[l.diff() + 1] * 4294967296.0 : 0.0});
  }
  return views;
}

}  // namespace ec::kernels

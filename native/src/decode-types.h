// Plain data that crosses between the binding and the core: no N-API, no FFmpeg state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ffmpeg-handles.h"

namespace ec {

enum class OutputFormat { Native, Rgb24, RgbF32Planar };

struct DecoderOptions {
  std::string codec;  // "h264" | "hevc" | "av1" | "vp9"
  std::vector<uint8_t> extradata;
  int width = 0;
  int height = 0;
  std::string device = "cpu";  // backend name in the registry
  int deviceIndex = 0;
  int threads = 0;  // 0: libavcodec picks
  OutputFormat output = OutputFormat::Native;
  int resizeHeight = 0;  // 0: keep the decoded size
  int resizeWidth = 0;
};

/** One sample in decode order; `data` points into memory the caller keeps alive. */
struct PacketView {
  const uint8_t* data = nullptr;
  size_t size = 0;
  int64_t pts = 0;
  int64_t dts = 0;
  bool keyframe = false;
};

struct PlaneLayout {
  size_t offset = 0;  // from the frame's first byte
  int rowBytes = 0;
  int rows = 0;
};

/** One frame inside a HostBatch's single allocation. */
struct HostFrame {
  int64_t pts = 0;
  size_t offset = 0;  // from the batch's first byte; 16-byte aligned
  size_t bytes = 0;
  int width = 0;
  int height = 0;
  std::string format;  // "yuv420p", "yuv420p10le", "nv12", "rgb24", "rgbf32-planar"...
  std::vector<PlaneLayout> planes;
};

/** Every frame of one decode call in one allocation, handed to JS without a copy. */
struct HostBatch {
  std::unique_ptr<std::vector<uint8_t>> data = std::make_unique<std::vector<uint8_t>>();
  std::vector<HostFrame> frames;
};

/** A frame that stays in device memory; the AVFrame reference keeps the surface alive. */
struct DeviceFrame {
  FramePtr frame;
  int64_t pts = 0;
  int deviceIndex = 0;
};

struct DecodeResult {
  size_t expectedFrames = 0;  // sizing hint: the packet count
  HostBatch host;
  std::vector<DeviceFrame> device;
};

}  // namespace ec

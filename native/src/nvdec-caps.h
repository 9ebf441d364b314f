// Whether a device's NVDEC decodes a codec, asked of the driver (cuvidGetDecoderCaps) rather
// than assumed from FFmpeg having a hwaccel for it: an H100/H200 has no AV1 NVDEC.
// Thread-safe: answers are cached per device and codec under one mutex.
#pragma once

#include <string>

namespace ec {

struct NvdecSupport {
  bool probed = false;  // false: this build cannot ask the driver (no nv-codec-headers), supported is a guess
  bool supported = false;
  std::string reason;  // why not; empty when supported
};

/** 8-bit 4:2:0 decode of `codec` ("h264" | "hevc" | "vp9" | "av1") on CUDA device `index`. */
NvdecSupport nvdecSupport(int index, const std::string& codec);

}  // namespace ec

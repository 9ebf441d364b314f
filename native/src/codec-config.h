// Maps codec names to libavcodec ids and turns an MP4 codec configuration record
// (avcC, hvcC, av1C, vpcC payload) into what the decoder wants as extradata.
#pragma once

#include <string>
#include <vector>

#include "ffmpeg-handles.h"

namespace ec {

struct CodecConfig {
  AVCodecID id = AV_CODEC_ID_NONE;
  std::vector<uint8_t> extradata;  // empty when the decoder takes none (VP8, VP9)
};

/** Throws ERR_UNSUPPORTED_CODEC or ERR_BAD_EXTRADATA. */
CodecConfig resolveCodecConfig(const std::string& codec, const std::vector<uint8_t>& record);

/** The video codec names this build knows, in a stable order (image formats are not listed). */
std::vector<std::string> knownCodecs();

/** Video codecs and the image formats "jpeg", "png", "webp"; throws ERR_UNSUPPORTED_CODEC. */
AVCodecID codecIdFor(const std::string& codec);

}  // namespace ec

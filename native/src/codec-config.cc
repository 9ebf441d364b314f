#include "codec-config.h"

#include <map>

#include "errors.h"

namespace ec {

namespace {

const std::map<std::string, AVCodecID>& codecIds() {
  static const std::map<std::string, AVCodecID> ids = {
      {"av1", AV_CODEC_ID_AV1}, {"h264", AV_CODEC_ID_H264}, {"hevc", AV_CODEC_ID_HEVC}, {"vp9", AV_CODEC_ID_VP9}};
  return ids;
}

[[noreturn]] void badRecord(const std::string& codec, const std::string& why) {
  throw NativeException("ERR_BAD_EXTRADATA", "Invalid " + codec + " codec configuration record: " + why);
}

bool startsWithStartCode(const std::vector<uint8_t>& r) {
  return (r.size() >= 4 && r[0] == 0 && r[1] == 0 && r[2] == 0 && r[3] == 1) ||
         (r.size() >= 3 && r[0] == 0 && r[1] == 0 && r[2] == 1);
}

// The vpcC box is a FullBox; accept its payload with or without the version/flags word.
// It only describes the stream (profile, bit depth): libavcodec's VP9 decoder reads all
// of that from the frame headers, so it is checked and not passed on.
void checkVpcc(const std::vector<uint8_t>& r) {
  if (r.empty()) return;
  bool fullBox = r.size() >= 12 && r[0] == 1 && r[1] == 0 && r[2] == 0 && r[3] == 0;
  size_t base = fullBox ? 4 : 0;
  if (r.size() < base + 8) badRecord("vp9", "vpcC needs at least 8 bytes but has " + std::to_string(r.size() - base));
  int profile = r[base];
  int bitDepth = r[base + 2] >> 4;
  if (profile > 3) badRecord("vp9", "profile " + std::to_string(profile) + " is not 0-3");
  if (bitDepth != 8 && bitDepth != 10 && bitDepth != 12) {
    badRecord("vp9", "bit depth " + std::to_string(bitDepth) + " is not 8, 10 or 12");
  }
}

}  // namespace

AVCodecID codecIdFor(const std::string& codec) {
  auto it = codecIds().find(codec);
  if (it == codecIds().end()) {
    throw NativeException("ERR_UNSUPPORTED_CODEC", "Unsupported codec \"" + codec + "\"; expected h264, hevc, av1 or vp9");
  }
  return it->second;
}

std::vector<std::string> knownCodecs() {
  std::vector<std::string> names;
  for (auto& [name, _] : codecIds()) names.push_back(name);
  return names;
}

CodecConfig resolveCodecConfig(const std::string& codec, const std::vector<uint8_t>& record) {
  CodecConfig config;
  config.id = codecIdFor(codec);
  switch (config.id) {
    case AV_CODEC_ID_H264:
      // avcC (configurationVersion 1) goes in as is; Annex B parameter sets are accepted too.
      if (!startsWithStartCode(record)) {
        if (record.size() < 7) badRecord(codec, "avcC needs at least 7 bytes but has " + std::to_string(record.size()));
        if (record[0] != 1) badRecord(codec, "avcC configurationVersion is " + std::to_string(record[0]) + ", not 1");
      }
      config.extradata = record;
      break;
    case AV_CODEC_ID_HEVC:
      if (!startsWithStartCode(record)) {
        if (record.size() < 23) badRecord(codec, "hvcC needs at least 23 bytes but has " + std::to_string(record.size()));
        if (record[0] != 1) badRecord(codec, "hvcC configurationVersion is " + std::to_string(record[0]) + ", not 1");
      }
      config.extradata = record;
      break;
    case AV_CODEC_ID_AV1:
      // The av1C record is what libdav1d and the native decoder parse (marker bit + version 1).
      if (record.size() < 4) badRecord(codec, "av1C needs at least 4 bytes but has " + std::to_string(record.size()));
      if (record[0] != 0x81) badRecord(codec, "av1C must start with marker/version byte 0x81");
      config.extradata = record;
      break;
    case AV_CODEC_ID_VP9:
      checkVpcc(record);
      break;
    default:
      break;
  }
  return config;
}

}  // namespace ec

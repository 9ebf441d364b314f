#include "codec-config.h"

#include <map>

#include "errors.h"

namespace ec {

namespace {

const std::map<std::string, AVCodecID>& codecIds() {
  static const std::map<std::string, AVCodecID> ids = {
      {"av1", AV_CODEC_ID_AV1}, {"h264", AV_CODEC_ID_H264}, {"hevc", AV_CODEC_ID_HEVC},
      {"vp8", AV_CODEC_ID_VP8}, {"vp9", AV_CODEC_ID_VP9}};
  return ids;
}

// Still images: one packet is the whole file, and the decoder reads everything from it.
const std::map<std::string, AVCodecID>& imageCodecIds() {
  static const std::map<std::string, AVCodecID> ids = {
      {"jpeg", AV_CODEC_ID_MJPEG}, {"png", AV_CODEC_ID_PNG}, {"webp", AV_CODEC_ID_WEBP}};
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
// It only describes the stream (profile, bit depth): libavcodec's VP8 and VP9 decoders read
// all of that from the frame headers, so it is checked and not passed on.
void checkVpcc(const std::string& codec, const std::vector<uint8_t>& r) {
  if (r.empty()) return;
  bool fullBox = r.size() >= 12 && r[0] == 1 && r[1] == 0 && r[2] == 0 && r[3] == 0;
  size_t base = fullBox ? 4 : 0;
  if (r.size() < base + 8) badRecord(codec, "vpcC needs at least 8 bytes but has " + std::to_string(r.size() - base));
  int profile = r[base];
  int bitDepth = r[base + 2] >> 4;
  if (profile > 3) badRecord(codec, "profile " + std::to_string(profile) + " is not 0-3");
  if (bitDepth != 8 && bitDepth != 10 && bitDepth != 12) {
    badRecord(codec, "bit depth " + std::to_string(bitDepth) + " is not 8, 10 or 12");
  }
}

size_t u16(const std::vector<uint8_t>& r, size_t at) { return (static_cast<size_t>(r[at]) << 8) | r[at + 1]; }

// Walks avcC's parameter-set lists: every length must fit and every NAL must be an SPS/PPS,
// so another codec's record (or garbage that starts with 1) is caught here, not mid-clip.
void checkAvcc(const std::vector<uint8_t>& r) {
  if ((r[4] & 0xFC) != 0xFC) badRecord("h264", "avcC reserved bits of lengthSizeMinusOne are not set");
  size_t at = 5;
  for (int list = 0; list < 2; ++list) {
    if (at >= r.size()) badRecord("h264", "avcC ends before its parameter sets");
    size_t count = list == 0 ? (r[at] & 0x1F) : r[at];
    if (list == 0 && count == 0) badRecord("h264", "avcC has no SPS");
    ++at;
    for (size_t i = 0; i < count; ++i) {
      if (at + 2 > r.size()) badRecord("h264", "avcC parameter set length runs past the record");
      size_t len = u16(r, at);
      at += 2;
      if (len == 0 || at + len > r.size()) badRecord("h264", "avcC parameter set runs past the record");
      int type = r[at] & 0x1F;
      if (type != (list == 0 ? 7 : 8)) badRecord("h264", "avcC holds NAL type " + std::to_string(type) + " where an SPS/PPS belongs");
      at += len;
    }
  }
}

void checkHvcc(const std::vector<uint8_t>& r) {
  size_t arrays = r[22];
  size_t at = 23;
  bool sps = false;
  for (size_t a = 0; a < arrays; ++a) {
    if (at + 3 > r.size()) badRecord("hevc", "hvcC ends inside its NAL arrays");
    int type = r[at] & 0x3F;
    size_t count = u16(r, at + 1);
    at += 3;
    for (size_t i = 0; i < count; ++i) {
      if (at + 2 > r.size()) badRecord("hevc", "hvcC NAL length runs past the record");
      size_t len = u16(r, at);
      at += 2;
      if (len < 2 || at + len > r.size()) badRecord("hevc", "hvcC NAL unit runs past the record");
      if (((r[at] >> 1) & 0x3F) != type) badRecord("hevc", "hvcC NAL unit type does not match its array");
      at += len;
    }
    sps = sps || type == 33;
  }
  if (!sps) badRecord("hevc", "hvcC has no SPS");
}

}  // namespace

AVCodecID codecIdFor(const std::string& codec) {
  auto it = codecIds().find(codec);
  if (it != codecIds().end()) return it->second;
  auto image = imageCodecIds().find(codec);
  if (image != imageCodecIds().end()) return image->second;
  throw NativeException("ERR_UNSUPPORTED_CODEC",
                        "Unsupported codec \"" + codec + "\"; expected h264, hevc, av1, vp8, vp9 (video) or jpeg, png, webp (image)");
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
        checkAvcc(record);
      }
      config.extradata = record;
      break;
    case AV_CODEC_ID_HEVC:
      if (!startsWithStartCode(record)) {
        if (record.size() < 23) badRecord(codec, "hvcC needs at least 23 bytes but has " + std::to_string(record.size()));
        if (record[0] != 1) badRecord(codec, "hvcC configurationVersion is " + std::to_string(record[0]) + ", not 1");
        checkHvcc(record);
      }
      config.extradata = record;
      break;
    case AV_CODEC_ID_AV1:
      // The av1C record is what libdav1d and the native decoder parse (marker bit + version 1).
      if (record.size() < 4) badRecord(codec, "av1C needs at least 4 bytes but has " + std::to_string(record.size()));
      if (record[0] != 0x81) badRecord(codec, "av1C must start with marker/version byte 0x81");
      config.extradata = record;
      break;
    case AV_CODEC_ID_VP8:
    case AV_CODEC_ID_VP9:
      checkVpcc(codec, record);
      break;
    default:
      break;
  }
  return config;
}

}  // namespace ec

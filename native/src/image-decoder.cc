#include "image-decoder.h"

#include <memory>
#include <vector>

#include "decoder.h"
#include "errors.h"

namespace ec {

namespace {

bool isDamage(const std::string& code) {
  return code == "ERR_CORRUPT_PACKET" || code == "ERR_CORRUPT_FRAME" || code == "ERR_DECODER_STALLED";
}

}  // namespace

HostBatch decodeImage(const uint8_t* data, size_t size, const ImageOptions& options) {
  // An empty packet would be read as the end-of-stream signal, not as an image.
  if (size == 0) throw NativeException("ERR_CORRUPT_IMAGE", "The " + options.format + " image is empty");
  DecoderOptions d;
  d.codec = options.format;
  d.device = "cpu";
  d.threads = 1;  // one picture: threads only add start-up cost; callers decode images in parallel
  d.output = options.output;
  d.resizeHeight = options.resizeHeight;
  d.resizeWidth = options.resizeWidth;
  std::unique_ptr<Decoder> decoder;
  try {
    decoder = std::make_unique<Decoder>(d);
  } catch (const NativeException& e) {
    if (e.code() == "ERR_UNSUPPORTED_CODEC" || e.code() == "ERR_DECODER_OPEN") {
      throw NativeException("ERR_UNSUPPORTED_IMAGE", e.what());
    }
    throw;
  }
  DecodeResult result;
  try {
    result = decoder->decode({PacketView{data, size, 0, 0, true}}, std::nullopt);
  } catch (const NativeException& e) {
    if (isDamage(e.code())) {
      throw NativeException("ERR_CORRUPT_IMAGE", "The " + options.format + " image is damaged: " + e.what());
    }
    throw;
  }
  if (result.host.frames.size() != 1) {
    throw NativeException("ERR_CORRUPT_IMAGE", "Expected one picture in the " + options.format + " image but the decoder returned " +
                                                   std::to_string(result.host.frames.size()));
  }
  return std::move(result.host);
}

}  // namespace ec

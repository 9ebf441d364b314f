// Still images (JPEG, PNG, WebP): the whole file is one packet through the same Decoder and
// HostConverter as video, so conversion, resize and damage detection are shared.
// Thread-safe: every call opens its own codec context.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "decode-types.h"

namespace ec {

struct ImageOptions {
  std::string format;  // "jpeg" | "png" | "webp"
  OutputFormat output = OutputFormat::Rgb24;
  int resizeHeight = 0;  // 0: keep the decoded size
  int resizeWidth = 0;
};

/**
 * Decodes one image into a one-frame HostBatch. Throws NativeException: ERR_UNSUPPORTED_IMAGE
 * (no decoder for the format), ERR_CORRUPT_IMAGE (empty, damaged or truncated bytes, or no
 * picture in them), ERR_UNSUPPORTED_FORMAT (a pixel format libswscale cannot convert).
 */
HostBatch decodeImage(const uint8_t* data, size_t size, const ImageOptions& options);

}  // namespace ec

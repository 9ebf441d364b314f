// Copies device frames (CUDA surfaces) back to packed host memory, as the CPU path
// would have returned them. Thread-safe for distinct frames.
#pragma once

#include "decode-types.h"

namespace ec {

/** One packed native-format host frame (nv12 / p010 ...) from a hardware frame. */
HostBatch downloadFrame(const AVFrame* frame, int64_t pts);

}  // namespace ec

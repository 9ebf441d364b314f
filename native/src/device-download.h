// Copies device frames back to packed host memory, as the CPU path would have returned
// them: NVDEC surfaces in their native format (nv12 / p010 ...), converted frames as
// rgb24 / rgbf32-planar. Thread-safe for distinct frames.
#pragma once

#include "decode-types.h"

namespace ec {

/** One packed host frame from a device frame. */
HostBatch downloadFrame(const DeviceFrame& frame);

}  // namespace ec

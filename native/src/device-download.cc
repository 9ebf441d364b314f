#include "device-download.h"

extern "C" {
#include <libavutil/hwcontext.h>
}

#include "errors.h"
#include "host-converter.h"

namespace ec {

HostBatch downloadFrame(const AVFrame* frame, int64_t pts) {
  FramePtr host = makeFrame();
  int ret = av_hwframe_transfer_data(host.get(), frame, 0);
  if (ret < 0) throw NativeException("ERR_CUDA", "Cannot copy the frame to host memory: " + avErrorString(ret));
  HostBatch batch;
  HostConverter converter(OutputFormat::Native, 0, 0);
  converter.append(host.get(), pts, batch, 1);
  return batch;
}

}  // namespace ec

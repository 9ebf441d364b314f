#include "device-download.h"

extern "C" {
#include <libavutil/hwcontext.h>
}

#include "errors.h"
#include "host-converter.h"
#ifdef EC_WITH_CUDA
#include "cuda-driver.h"
#endif

namespace ec {

HostBatch downloadFrame(const DeviceFrame& f) {
  HostBatch batch;
  if (f.frame) {
    FramePtr host = makeFrame();
    int ret = av_hwframe_transfer_data(host.get(), f.frame.get(), 0);
    if (ret < 0) throw NativeException("ERR_CUDA", "Cannot copy the frame to host memory: " + avErrorString(ret));
    HostConverter converter(OutputFormat::Native, 0, 0);
    converter.append(host.get(), f.pts, batch, 1);
    return batch;
  }
#ifdef EC_WITH_CUDA
  // A converted frame: packed already (rgb24 rows, or three float planes back to back).
  batch.data->resize(f.bytes);
  cuda::copyDeviceToHost(f.deviceIndex, batch.data->data(), f.planes.at(0).pointer, f.bytes);
  HostFrame info;
  info.pts = f.pts;
  info.bytes = f.bytes;
  info.width = f.width;
  info.height = f.height;
  info.format = f.format;
  size_t plane = f.bytes / f.planes.size();
  for (size_t p = 0; p < f.planes.size(); ++p) info.planes.push_back({p * plane, f.planes[p].pitch, f.height});
  batch.frames.push_back(std::move(info));
  return batch;
#else
  throw NativeException("ERR_DEVICE_UNAVAILABLE", "This build has no CUDA support");
#endif
}

}  // namespace ec

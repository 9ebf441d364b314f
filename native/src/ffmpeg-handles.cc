#include "ffmpeg-handles.h"

#include <string>

#include "errors.h"

extern "C" {
#include <libavutil/error.h>
}

namespace ec {

FramePtr makeFrame() {
  FramePtr frame(av_frame_alloc());
  if (!frame) throw NativeException("ERR_OUT_OF_MEMORY", "av_frame_alloc failed");
  return frame;
}

PacketPtr makePacket() {
  PacketPtr packet(av_packet_alloc());
  if (!packet) throw NativeException("ERR_OUT_OF_MEMORY", "av_packet_alloc failed");
  return packet;
}

std::string avErrorString(int err) {
  char buf[AV_ERROR_MAX_STRING_SIZE] = {0};
  av_strerror(err, buf, sizeof buf);
  return buf;
}

}  // namespace ec

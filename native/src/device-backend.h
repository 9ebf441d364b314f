// The point of variation between decode devices. Each backend registers a factory
// under its device name ("cpu", "cuda"); the Decoder never branches on the kind.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "decode-types.h"

namespace ec {

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;
  /** The libavcodec decoder this device uses for a codec id (hwaccel needs the native one). */
  virtual const AVCodec* findDecoder(AVCodecID id) const = 0;
  /** Called once before avcodec_open2: attach hardware contexts, pick formats. */
  virtual void configure(AVCodecContext* ctx) = 0;
  /** Called at the start of each call, before any packet is sent. */
  virtual void begin(const DecodeResult& out, std::optional<int64_t> dropBefore) {}
  /** Takes one decoded frame (already kept: pts >= dropBefore) into the result. */
  virtual void emit(AVFrame* frame, DecodeResult& out) = 0;
  /** Called once the call's frames are all out (and, on a drained call, the codec flushed). */
  virtual void settle(DecodeResult& out) {}
};

using BackendFactory = std::function<std::unique_ptr<DeviceBackend>(const DecoderOptions&)>;

/** Name → factory. Backends add themselves with a static BackendRegistration. */
std::map<std::string, BackendFactory>& backendRegistry();

struct BackendRegistration {
  BackendRegistration(const std::string& name, BackendFactory factory);
};

std::unique_ptr<DeviceBackend> createBackend(const DecoderOptions& options);
std::vector<std::string> registeredBackends();

}  // namespace ec

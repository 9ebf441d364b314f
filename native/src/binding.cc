// The module's init: registers the functions of the thin N-API layer (binding/*.cc, one file per
// area), which convert arguments (already validated by native/lib/*.ts), run blocking work in
// AsyncWorkers and turn ec::NativeException into errors with a `code`. No decode logic lives here.
#include <napi.h>

#include <cstdlib>

extern "C" {
#include <libavutil/log.h>
}

#include "binding/common.h"
#include "binding/functions.h"

namespace {

using namespace ec::binding;

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  // Failures reach JS as typed errors; FFmpeg's own log lines on stderr would only be noise.
  av_log_set_level(std::getenv("EC_FFMPEG_LOG") ? AV_LOG_INFO : AV_LOG_QUIET);
  Napi::Function decoder = DecoderClass(env);
  env.SetInstanceData(new InstanceData{Napi::Persistent(decoder)});
  exports.Set("Decoder", decoder);
  exports.Set("openDecoder", Napi::Function::New(env, OpenDecoder));
  exports.Set("decodeImage", Napi::Function::New(env, DecodeImage));
  exports.Set("downloadFrame", Napi::Function::New(env, DownloadFrame));
  exports.Set("lumaStats", Napi::Function::New(env, LumaStats));
  exports.Set("convertReference", Napi::Function::New(env, ConvertReference));
  exports.Set("readIntoHost", Napi::Function::New(env, ReadIntoHost));
  exports.Set("readIntoDevice", Napi::Function::New(env, ReadIntoDevice));
  exports.Set("allocDevice", Napi::Function::New(env, AllocDevice));
  exports.Set("copyDeviceToHost", Napi::Function::New(env, CopyDeviceToHost));
  exports.Set("copyDevice2D", Napi::Function::New(env, CopyDevice2D));
  exports.Set("ipcHandle", Napi::Function::New(env, IpcHandle));
  exports.Set("devices", Napi::Function::New(env, Devices));
  exports.Set("mapShared", Napi::Function::New(env, MapShared));
  exports.Set("RangeClient", RangeClientClass(env));
  exports.Set("libcurlStatus", Napi::Function::New(env, LibcurlStatus));
  exports.Set("abiVersion", Napi::Number::New(env, 1));
  return exports;
}

}  // namespace

NODE_API_MODULE(ec_native, Init)

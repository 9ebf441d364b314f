// Still images (JPEG, PNG, ...) decoded off the event loop into one host batch.
#include <memory>

#include "../image-decoder.h"
#include "../kernels/kernel-calls.h"
#include "common.h"
#include "functions.h"

namespace ec::binding {

// decodeImage(data: Uint8Array, format: string, output: string, resizeHeight, resizeWidth) → Promise<{buffer, frames}>
Napi::Value DecodeImage(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto data = info[0].As<Napi::Uint8Array>();
  ec::ImageOptions options;
  options.format = info[1].As<Napi::String>();
  options.output = ec::kernels::outputFormatOf(info[2].As<Napi::String>());
  options.resizeHeight = info[3].As<Napi::Number>().Int32Value();
  options.resizeWidth = info[4].As<Napi::Number>().Int32Value();
  const uint8_t* bytes = data.Data();
  size_t size = data.ByteLength();
  auto batch = std::make_shared<ec::HostBatch>();
  auto* worker = new Worker(
      env, [bytes, size, options, batch] { *batch = ec::decodeImage(bytes, size, options); },
      [batch](Napi::Env env) { return hostBatchToJs(env, *batch); });
  worker->keep(info[0]);  // the file bytes stay alive until the worker is done
  worker->Queue();
  return worker->promise();
}

}  // namespace ec::binding

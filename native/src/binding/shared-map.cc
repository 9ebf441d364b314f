// mapShared(): a slot file as an ArrayBuffer over a MAP_SHARED mapping, unmapped when collected.
#include <string>

#include "../shared-map.h"
#include "common.h"
#include "functions.h"

namespace ec::binding {

// mapShared(fd, bytes): an ArrayBuffer over a MAP_SHARED mapping of the file, unmapped when collected.
Napi::Value MapShared(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = info[0].As<Napi::Number>().Int32Value();
  auto bytes = static_cast<size_t>(info[1].As<Napi::Number>().DoubleValue());
  if (bytes > kMaxExternalBytes) {
    // Node would refuse the ArrayBuffer only after running its finalizer (see kMaxExternalBytes).
    throw toJsError(env, "ERR_INVALID_ARGUMENT", "Expected at most " + std::to_string(kMaxExternalBytes) +
                                                     " bytes to map but received " + std::to_string(bytes));
  }
  void* data = guard(env, [&] { return ec::mapSharedFile(fd, bytes); });
  return Napi::ArrayBuffer::New(
      env, data, bytes, [](Napi::Env, void* p, size_t* size) {
        ec::unmapSharedFile(p, *size);
        delete size;
      },
      new size_t(bytes));
}

}  // namespace ec::binding

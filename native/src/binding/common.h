// What every binding file shares: errors with a `code`, the AsyncWorker that runs core calls off
// the event loop, and host batches as JS values. Holds no decode logic and no state of its own.
#pragma once

#include <napi.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "../decode-types.h"
#include "../errors.h"

namespace ec::binding {

Napi::Error toJsError(Napi::Env env, const std::string& code, const std::string& message);

// Runs a synchronous core call; its NativeException reaches JS as an error with its code.
template <typename F>
auto guard(Napi::Env env, F&& call) -> decltype(call()) {
  try {
    return call();
  } catch (const ec::NativeException& e) {
    throw toJsError(env, e.code(), e.what());
  }
}

// What each instance of the addon (the main thread's, each worker_thread's) keeps: nothing of one
// environment may be reached from another, so no process-wide statics.
struct InstanceData {
  Napi::FunctionReference decoder;
};

// Runs `work` off the event loop; the exception's code reaches JS as error.code.
class Worker : public Napi::AsyncWorker {
 public:
  Worker(Napi::Env env, std::function<void()> work, std::function<Napi::Value(Napi::Env)> done);

  Napi::Promise promise() { return deferred_.Promise(); }
  void keep(Napi::Value value) { kept_.push_back(Napi::Persistent(value)); }

 protected:
  void Execute() override;
  void OnOK() override;
  void OnError(const Napi::Error& e) override;

 private:
  Napi::Promise::Deferred deferred_;
  std::function<void()> work_;
  std::function<Napi::Value(Napi::Env)> done_;
  std::vector<Napi::Reference<Napi::Value>> kept_;
  std::string code_ = "ERR_NATIVE";
};

/**
 * Bytes an ArrayBuffer over external memory may have on every Node this addon loads in (Node
 * before 22 refuses more than 4 GiB on 64-bit). Past it napi_create_external_arraybuffer fails
 * after it has already run (or queued) the finalizer, and node-addon-api's ArrayBuffer::New then
 * deletes the finalizer's data a second time: a double free. So no larger one is ever asked for.
 */
constexpr size_t kMaxExternalBytes = sizeof(void*) >= 8 ? size_t{1} << 32 : (size_t{1} << 30) - 1;

// {buffer, frames}: the batch's bytes as one ArrayBuffer (or each in-place frame as its own; a
// batch past kMaxExternalBytes hands every frame as its own view of the shared allocation).
Napi::Value hostBatchToJs(Napi::Env env, ec::HostBatch& batch);

}  // namespace ec::binding

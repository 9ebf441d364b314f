// Device memory: allocations freed with their JS handle, synchronous copies, CUDA IPC handles, and
// decoded device frames downloaded to the host.
#include <memory>
#include <string>

#include "../device-download.h"
#include "../device-memory.h"
#include "common.h"
#include "functions.h"

namespace ec::binding {

// allocDevice(index, bytes) → { pointer: bigint, handle } (freed when handle is collected)
Napi::Value AllocDevice(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int index = info[0].As<Napi::Number>().Int32Value();
  auto bytes = static_cast<size_t>(info[1].As<Napi::Number>().DoubleValue());
  uint64_t pointer = guard(env, [&] { return ec::cuda::allocDevice(index, bytes); });
  struct Allocation {
    int index;
    uint64_t pointer;
  };
  Napi::Object o = Napi::Object::New(env);
  o.Set("pointer", Napi::BigInt::New(env, pointer));
  o.Set("handle", Napi::External<Allocation>::New(env, new Allocation{index, pointer}, [](Napi::Env, Allocation* a) {
          ec::cuda::freeDevice(a->index, a->pointer);
          delete a;
        }));
  return o;
}

// copyDeviceToHost(index, pointer: bigint, target: Uint8Array) — synchronous, small buffers only.
Napi::Value CopyDeviceToHost(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int index = info[0].As<Napi::Number>().Int32Value();
  bool lossless = false;
  uint64_t pointer = info[1].As<Napi::BigInt>().Uint64Value(&lossless);
  auto target = info[2].As<Napi::Uint8Array>();
  guard(env, [&] { ec::cuda::copyDeviceToHost(index, target.Data(), pointer, target.ByteLength()); });
  return env.Undefined();
}

// copyDevice2D(device, dst: bigint, dstPitch, src: bigint, srcPitch, rowBytes, rows): a synchronous device-to-device copy.
Napi::Value CopyDevice2D(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  bool lossless = false;
  auto size = [&](int i) { return static_cast<size_t>(info[i].As<Napi::Number>().DoubleValue()); };
  guard(env, [&] {
    ec::cuda::copyDevice2D(info[0].As<Napi::Number>().Int32Value(), info[1].As<Napi::BigInt>().Uint64Value(&lossless), size(2),
                           info[3].As<Napi::BigInt>().Uint64Value(&lossless), size(4), size(5), size(6));
  });
  return env.Undefined();
}

// ipcHandle(device, pointer: bigint): the 64-byte CUDA IPC handle of an allocDevice() allocation.
Napi::Value IpcHandle(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  bool lossless = false;
  std::string h = guard(env, [&] {
    return ec::cuda::ipcHandle(info[0].As<Napi::Number>().Int32Value(), info[1].As<Napi::BigInt>().Uint64Value(&lossless));
  });
  return Napi::Buffer<char>::Copy(env, h.data(), h.size());
}

// downloadFrame(handle: External<DeviceFrame>) → Promise<{buffer, frames}>
Napi::Value DownloadFrame(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const ec::DeviceFrame* frame = info[0].As<Napi::External<ec::DeviceFrame>>().Data();
  auto batch = std::make_shared<ec::HostBatch>();
  auto* worker = new Worker(
      env, [frame, batch] { *batch = ec::downloadFrame(*frame); },
      [batch](Napi::Env env) { return hostBatchToJs(env, *batch); });
  worker->keep(info[0]);
  worker->Queue();
  return worker->promise();
}

}  // namespace ec::binding

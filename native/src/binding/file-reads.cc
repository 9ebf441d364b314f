// Ranged file reads into host memory or straight into device memory (cuFile, else pread and a copy).
#include <memory>
#include <string>

#include "../read-into.h"
#include "common.h"
#include "functions.h"

namespace ec::binding {

namespace {

Napi::Value readResultToJs(Napi::Env env, const ec::ReadResult& r) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("bytesRead", Napi::Number::New(env, static_cast<double>(r.bytesRead)));
  o.Set("mode", Napi::String::New(env, r.mode));
  return o;
}

}  // namespace

// readIntoHost(path, offset, length, target: Uint8Array)
Napi::Value ReadIntoHost(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string path = info[0].As<Napi::String>();
  auto offset = static_cast<uint64_t>(info[1].As<Napi::Number>().DoubleValue());
  auto length = static_cast<size_t>(info[2].As<Napi::Number>().DoubleValue());
  uint8_t* target = info[3].As<Napi::Uint8Array>().Data();
  auto result = std::make_shared<ec::ReadResult>();
  auto* worker = new Worker(
      env, [=] { *result = ec::readIntoHost(path, offset, length, target); },
      [result](Napi::Env env) { return readResultToJs(env, *result); });
  worker->keep(info[3]);
  worker->Queue();
  return worker->promise();
}

// readIntoDevice(path, offset, length, deviceIndex, pointer: bigint, owner)
Napi::Value ReadIntoDevice(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string path = info[0].As<Napi::String>();
  auto offset = static_cast<uint64_t>(info[1].As<Napi::Number>().DoubleValue());
  auto length = static_cast<size_t>(info[2].As<Napi::Number>().DoubleValue());
  int device = info[3].As<Napi::Number>().Int32Value();
  bool lossless = false;
  uint64_t pointer = info[4].As<Napi::BigInt>().Uint64Value(&lossless);
  auto result = std::make_shared<ec::ReadResult>();
  auto* worker = new Worker(
      env, [=] { *result = ec::readIntoDevice(path, offset, length, device, pointer); },
      [result](Napi::Env env) { return readResultToJs(env, *result); });
  worker->keep(info[5]);
  worker->Queue();
  return worker->promise();
}

}  // namespace ec::binding

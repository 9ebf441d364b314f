// devices(): what this build and host can decode on, and why not where it cannot.
#include <string>
#include <vector>

#include "../host-report.h"
#include "functions.h"

namespace ec::binding {

Napi::Value Devices(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ec::HostReport r = ec::probeHost();
  auto strings = [&](const std::vector<std::string>& v) {
    Napi::Array a = Napi::Array::New(env, v.size());
    for (size_t i = 0; i < v.size(); ++i) a.Set(i, Napi::String::New(env, v[i]));
    return a;
  };
  Napi::Object o = Napi::Object::New(env);
  o.Set("backends", strings(r.backends));
  Napi::Object cpu = Napi::Object::New(env);
  for (auto& c : r.cpuCodecs) cpu.Set(c.codec, c.decoder.empty() ? env.Null() : Napi::String::New(env, c.decoder));
  o.Set("cpuDecoders", cpu);
  o.Set("cudaCompiled", Napi::Boolean::New(env, r.cudaCompiled));
  o.Set("cudaReason", Napi::String::New(env, r.cudaReason));
  o.Set("kernels", Napi::Boolean::New(env, r.kernels));
  o.Set("kernelsReason", Napi::String::New(env, r.kernelsReason));
  Napi::Array devices = Napi::Array::New(env, r.cudaDevices.size());
  for (size_t i = 0; i < r.cudaDevices.size(); ++i) {
    Napi::Object d = Napi::Object::New(env);
    d.Set("index", Napi::Number::New(env, r.cudaDevices[i].index));
    d.Set("name", Napi::String::New(env, r.cudaDevices[i].name));
    d.Set("memoryBytes", Napi::Number::New(env, static_cast<double>(r.cudaDevices[i].memoryBytes)));
    Napi::Object nvdec = Napi::Object::New(env);
    for (const auto& c : r.cudaDevices[i].nvdec) {
      Napi::Object support = Napi::Object::New(env);
      support.Set("probed", Napi::Boolean::New(env, c.probed));
      support.Set("supported", Napi::Boolean::New(env, c.supported));
      support.Set("reason", Napi::String::New(env, c.reason));
      nvdec.Set(c.codec, support);
    }
    d.Set("nvdec", nvdec);
    devices.Set(i, d);
  }
  o.Set("cudaDevices", devices);
  o.Set("nvdecCodecs", strings(r.nvdecCodecs));
  o.Set("nvdecReason", Napi::String::New(env, r.nvdecReason));
  o.Set("cufile", Napi::Boolean::New(env, r.cufile));
  o.Set("cufileReason", Napi::String::New(env, r.cufileReason));
  o.Set("deviceReadMode", Napi::String::New(env, r.deviceReadMode));
  return o;
}

}  // namespace ec::binding

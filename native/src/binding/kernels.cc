// The frame kernels called with plain values: luma statistics (GPU or its host twin) and the
// conversion's host twin.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "../kernels/kernel-calls.h"
#include "common.h"
#include "functions.h"

namespace ec::binding {

// lumaStats(frames: [{handle, format, width, height, pitch}] | host [{data: Uint8Array, format, width, height, pitch}],
//           step, device: number (-1: the host twin))
//   → Promise<[{gridWidth, gridHeight, histogram, rowSums, colSums, absDiff}]> (views of one buffer of records)
Napi::Value LumaStats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Array list = info[0].As<Napi::Array>();
  int step = info[1].As<Napi::Number>().Int32Value();
  int device = info[2].As<Napi::Number>().Int32Value();
  std::vector<ec::kernels::LumaSource> sources;
  std::vector<Napi::Value> keep;
  for (uint32_t i = 0; i < list.Length(); ++i) {
    Napi::Object f = list.Get(i).As<Napi::Object>();
    const uint8_t* data = nullptr;
    if (device < 0) {
      data = f.Get("data").As<Napi::Uint8Array>().Data();
      keep.push_back(f.Get("data"));
    } else {
      const ec::DeviceFrame* frame = f.Get("handle").As<Napi::External<ec::DeviceFrame>>().Data();
      data = reinterpret_cast<const uint8_t*>(static_cast<uintptr_t>(frame->planes.at(0).pointer));
      keep.push_back(f.Get("handle"));
    }
    sources.push_back(guard(env, [&] {
      return ec::kernels::lumaSource(f.Get("format").As<Napi::String>(), data, f.Get("pitch").As<Napi::Number>().Int32Value(),
                                     f.Get("width").As<Napi::Number>().Int32Value(),
                                     f.Get("height").As<Napi::Number>().Int32Value());
    }));
  }
  auto records = std::make_shared<std::vector<uint32_t>>();
  auto* worker = new Worker(
      env, [sources, step, device, records] { *records = ec::kernels::lumaStats(device, sources, step); },
      [records, sources, step](Napi::Env env) -> Napi::Value {
        // One buffer of records; each frame gets views of its parts.
        auto all = Napi::Uint32Array::New(env, records->size());
        std::copy(records->begin(), records->end(), all.Data());
        auto view = [&](size_t word, size_t words) { return Napi::Uint32Array::New(env, words, all.ArrayBuffer(), word * sizeof(uint32_t)); };
        std::vector<ec::kernels::LumaView> views = ec::kernels::lumaViews(*records, sources, step);
        Napi::Array out = Napi::Array::New(env, views.size());
        for (size_t i = 0; i < views.size(); ++i) {
          const ec::kernels::LumaView& v = views[i];
          Napi::Object o = Napi::Object::New(env);
          o.Set("gridWidth", v.gridWidth);
          o.Set("gridHeight", v.gridHeight);
          o.Set("histogram", view(v.histogram, 256));
          o.Set("rowSums", view(v.rowSums, v.gridHeight));
          o.Set("colSums", view(v.colSums, v.gridWidth));
          o.Set("absDiff", v.compared ? Napi::Value(Napi::Number::New(env, v.absDiff)) : env.Undefined());
          out.Set(i, o);
        }
        return out;
      });
  for (auto& v : keep) worker->keep(v);
  worker->Queue();
  return worker->promise();
}

// convertReference(frame: {data, format, width, height, planes: [{offset, rowBytes}]}, output, height, width,
//                  colorspace: "bt601"|"bt709"|"bt2020", fullRange) → Promise<{buffer, frames}>
// The GPU conversion's host twin over a packed host frame: the same arithmetic as ec_convert.
Napi::Value ConvertReference(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object f = info[0].As<Napi::Object>();
  auto data = f.Get("data").As<Napi::Uint8Array>();
  Napi::Array layout = f.Get("planes").As<Napi::Array>();
  const uint8_t* planes[4] = {nullptr, nullptr, nullptr, nullptr};
  int pitches[4] = {0, 0, 0, 0};
  for (uint32_t p = 0; p < layout.Length() && p < 4; ++p) {
    Napi::Object plane = layout.Get(p).As<Napi::Object>();
    planes[p] = data.Data() + static_cast<size_t>(plane.Get("offset").As<Napi::Number>().DoubleValue());
    pitches[p] = plane.Get("rowBytes").As<Napi::Number>().Int32Value();
  }
  ec::kernels::ReferenceConversion conversion = guard(env, [&] {
    return ec::kernels::referenceConversion(
        f.Get("format").As<Napi::String>(), planes, pitches, f.Get("width").As<Napi::Number>().Int32Value(),
        f.Get("height").As<Napi::Number>().Int32Value(), ec::kernels::outputFormatOf(info[1].As<Napi::String>()),
        info[2].As<Napi::Number>().Int32Value(), info[3].As<Napi::Number>().Int32Value(), info[4].As<Napi::String>(),
        info[5].As<Napi::Boolean>());
  });
  auto batch = std::make_shared<ec::HostBatch>();
  auto* worker = new Worker(
      env, [conversion, batch] { *batch = ec::kernels::convertReference(conversion); },
      [batch](Napi::Env env) { return hostBatchToJs(env, *batch); });
  worker->keep(info[0]);
  worker->Queue();
  return worker->promise();
}

}  // namespace ec::binding

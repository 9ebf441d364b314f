// Video decoders: openDecoder() builds one off the event loop; each Decoder runs one decode() at a time.
#include <atomic>
#include <memory>
#include <optional>
#include <vector>

#include "../decoder.h"
#include "../kernels/kernel-calls.h"
#include "common.h"
#include "functions.h"

namespace ec::binding {

namespace {

Napi::Value deviceFramesToJs(Napi::Env env, std::vector<ec::DeviceFrame>& device) {
  Napi::Array frames = Napi::Array::New(env, device.size());
  for (size_t i = 0; i < device.size(); ++i) {
    auto* frame = new ec::DeviceFrame(std::move(device[i]));
    Napi::Object o = Napi::Object::New(env);
    o.Set("pts", Napi::Number::New(env, static_cast<double>(frame->pts)));
    o.Set("device", Napi::Number::New(env, frame->deviceIndex));
    o.Set("width", Napi::Number::New(env, frame->width));
    o.Set("height", Napi::Number::New(env, frame->height));
    o.Set("format", Napi::String::New(env, frame->format));
    Napi::Array planes = Napi::Array::New(env, frame->planes.size());
    for (uint32_t p = 0; p < frame->planes.size(); ++p) {
      Napi::Object plane = Napi::Object::New(env);
      plane.Set("pointer", Napi::BigInt::New(env, frame->planes[p].pointer));
      plane.Set("pitch", Napi::Number::New(env, frame->planes[p].pitch));
      planes.Set(p, plane);
    }
    o.Set("planes", planes);
    // Converted frames own GPU memory V8 cannot see: count it so collection keeps up with decode.
    auto external = static_cast<int64_t>(frame->memory ? frame->bytes : 0);
    if (external > 0) Napi::MemoryManagement::AdjustExternalMemory(env, external);
    o.Set("handle", Napi::External<ec::DeviceFrame>::New(env, frame, [external](Napi::Env env, ec::DeviceFrame* f) {
            if (external > 0) Napi::MemoryManagement::AdjustExternalMemory(env, -external);
            delete f;
          }));
    frames.Set(i, o);
  }
  Napi::Object result = Napi::Object::New(env);
  result.Set("device", frames);
  return result;
}

class DecoderWrap : public Napi::ObjectWrap<DecoderWrap> {
 public:
  static Napi::Function Init(Napi::Env env) {
    return DefineClass(env, "Decoder", {InstanceMethod("decode", &DecoderWrap::Decode),
                                        InstanceMethod("close", &DecoderWrap::Close)});
  }

  explicit DecoderWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<DecoderWrap>(info) {
    auto external = info[0].As<Napi::External<std::shared_ptr<ec::Decoder>>>();
    decoder_ = *external.Data();
  }

 private:
  // decode(data: Uint8Array, table: Float64Array [offset,size,pts,dts]*, keyframes: Uint8Array, dropBefore: number|null,
  //        drain?: boolean, recovering?: boolean, targetPts?: Float64Array, targets?: Uint8Array[], until?: number|null)
  Napi::Value Decode(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (!decoder_) throw toJsError(env, "ERR_DECODER_CLOSED", "The decoder is closed");
    bool expected = false;
    if (!busy_->compare_exchange_strong(expected, true)) {
      throw toJsError(env, "ERR_DECODER_BUSY", "A decoder runs one decode() at a time; await the previous call");
    }
    auto data = info[0].As<Napi::Uint8Array>();
    auto table = info[1].As<Napi::Float64Array>();
    auto keys = info[2].As<Napi::Uint8Array>();
    std::optional<int64_t> dropBefore;
    if (info[3].IsNumber()) dropBefore = static_cast<int64_t>(info[3].As<Napi::Number>().DoubleValue());
    bool drain = !info[4].IsBoolean() || info[4].As<Napi::Boolean>().Value();
    bool recovering = info[5].IsBoolean() && info[5].As<Napi::Boolean>().Value();
    std::optional<int64_t> until;
    if (info[8].IsNumber()) until = static_cast<int64_t>(info[8].As<Napi::Number>().DoubleValue());
    auto packets = std::make_shared<std::vector<ec::PacketView>>(keys.ElementLength());
    for (size_t i = 0; i < packets->size(); ++i) {
      auto& p = (*packets)[i];
      p.data = data.Data() + static_cast<size_t>(table[i * 4]);
      p.size = static_cast<size_t>(table[i * 4 + 1]);
      p.pts = static_cast<int64_t>(table[i * 4 + 2]);
      p.dts = static_cast<int64_t>(table[i * 4 + 3]);
      p.keyframe = keys[i] != 0;
    }
    auto targets = std::make_shared<std::vector<ec::FrameTarget>>();
    if (info[6].IsTypedArray() && info[7].IsArray()) {
      auto pts = info[6].As<Napi::Float64Array>();
      auto views = info[7].As<Napi::Array>();
      for (uint32_t i = 0; i < views.Length() && i < pts.ElementLength(); ++i) {
        auto view = views.Get(i).As<Napi::Uint8Array>();
        targets->push_back({static_cast<int64_t>(pts[i]), view.Data(), view.ByteLength()});
      }
    }
    auto decoder = decoder_;
    auto busy = busy_;
    auto result = std::make_shared<ec::DecodeResult>();
    auto* worker = new Worker(
        env,
        [decoder, packets, dropBefore, drain, recovering, targets, until, result, busy] {
          struct Release {
            std::atomic<bool>* b;
            ~Release() { b->store(false); }
          } release{busy.get()};
          *result = decoder->decode(*packets, dropBefore, drain, recovering, *targets, until);
        },
        [result](Napi::Env env) -> Napi::Value {
          Napi::Object out = (!result->device.empty() ? deviceFramesToJs(env, result->device) : hostBatchToJs(env, result->host)).As<Napi::Object>();
          out.Set("decoded", Napi::Number::New(env, static_cast<double>(result->decodedFrames)));
          out.Set("fed", Napi::Number::New(env, static_cast<double>(result->packetsFed)));
          out.Set("copied", Napi::Number::New(env, static_cast<double>(result->host.copiedBytes)));
          return out;
        });
    worker->keep(info[0]);  // the packet bytes stay alive until the worker is done
    if (!targets->empty()) worker->keep(info[7]);  // and so does the memory frames are written into
    worker->keep(info.This());
    worker->Queue();
    return worker->promise();
  }

  Napi::Value Close(const Napi::CallbackInfo& info) {
    if (busy_->load()) throw toJsError(info.Env(), "ERR_DECODER_BUSY", "Cannot close a decoder while it decodes");
    decoder_.reset();
    return info.Env().Undefined();
  }

  std::shared_ptr<ec::Decoder> decoder_;
  std::shared_ptr<std::atomic<bool>> busy_ = std::make_shared<std::atomic<bool>>(false);
};

}  // namespace

Napi::Function DecoderClass(Napi::Env env) { return DecoderWrap::Init(env); }

// openDecoder({codec, extradata, width, height, device, deviceIndex, threads, output, resizeHeight, resizeWidth})
Napi::Value OpenDecoder(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object o = info[0].As<Napi::Object>();
  ec::DecoderOptions options;
  options.codec = o.Get("codec").As<Napi::String>();
  auto extradata = o.Get("extradata").As<Napi::Uint8Array>();
  options.extradata.assign(extradata.Data(), extradata.Data() + extradata.ByteLength());
  options.width = o.Get("width").As<Napi::Number>().Int32Value();
  options.height = o.Get("height").As<Napi::Number>().Int32Value();
  options.device = o.Get("device").As<Napi::String>();
  options.deviceIndex = o.Get("deviceIndex").As<Napi::Number>().Int32Value();
  options.threads = o.Get("threads").As<Napi::Number>().Int32Value();
  options.output = ec::kernels::outputFormatOf(o.Get("output").As<Napi::String>());
  options.resizeHeight = o.Get("resizeHeight").As<Napi::Number>().Int32Value();
  options.resizeWidth = o.Get("resizeWidth").As<Napi::Number>().Int32Value();
  auto decoder = std::make_shared<std::shared_ptr<ec::Decoder>>();
  auto* worker = new Worker(
      env, [options, decoder] { *decoder = std::make_shared<ec::Decoder>(options); },
      [decoder](Napi::Env env) -> Napi::Value {
        auto external = Napi::External<std::shared_ptr<ec::Decoder>>::New(env, decoder.get());
        return env.GetInstanceData<InstanceData>()->decoder.New({external});
      });
  worker->Queue();
  return worker->promise();
}

}  // namespace ec::binding

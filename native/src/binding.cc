// The thin N-API layer: converts arguments (already validated by native/lib/*.ts),
// runs blocking work in AsyncWorkers and turns ec::NativeException into errors with a
// `code`. No decode logic lives here.
#include <napi.h>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>

#include <cstdlib>

extern "C" {
#include <libavutil/log.h>
}

#include "decoder.h"
#include "device-download.h"
#include "device-memory.h"
#include "errors.h"
#include "host-converter.h"
#include "host-report.h"
#include "image-decoder.h"
#include "kernels/kernel-calls.h"
#include "read-into.h"
#include "shared-map.h"

namespace {

Napi::Error toJsError(Napi::Env env, const std::string& code, const std::string& message) {
  Napi::Error error = Napi::Error::New(env, message);
  error.Set("code", Napi::String::New(env, code));
  return error;
}

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
  Worker(Napi::Env env, std::function<void()> work, std::function<Napi::Value(Napi::Env)> done)
      : Napi::AsyncWorker(env, "ec:native"), deferred_(Napi::Promise::Deferred::New(env)), work_(std::move(work)),
        done_(std::move(done)) {}

  Napi::Promise promise() { return deferred_.Promise(); }
  void keep(Napi::Value value) { kept_.push_back(Napi::Persistent(value)); }

 protected:
  void Execute() override {
    try {
      work_();
    } catch (const ec::NativeException& e) {
      code_ = e.code();
      SetError(e.what());
    } catch (const std::bad_alloc&) {
      code_ = "ERR_OUT_OF_MEMORY";
      SetError("Out of memory");
    } catch (const std::exception& e) {
      code_ = "ERR_NATIVE";
      SetError(e.what());
    }
  }
  void OnOK() override {
    Napi::Env env = Env();
    try {
      deferred_.Resolve(done_(env));
    } catch (const Napi::Error& e) {
      deferred_.Reject(e.Value());
    }
  }
  void OnError(const Napi::Error& e) override {
    deferred_.Reject(toJsError(Env(), code_, e.Message()).Value());
  }

 private:
  Napi::Promise::Deferred deferred_;
  std::function<void()> work_;
  std::function<Napi::Value(Napi::Env)> done_;
  std::vector<Napi::Reference<Napi::Value>> kept_;
  std::string code_ = "ERR_NATIVE";
};

Napi::Value hostBatchToJs(Napi::Env env, ec::HostBatch& batch) {
  auto* data = batch.data.release();
  Napi::ArrayBuffer buffer;
  if (data->empty()) {
    delete data;
    buffer = Napi::ArrayBuffer::New(env, 0);
  } else {
    // V8 counts an ArrayBuffer's bytes as external memory itself (and collects each time that
    // count has grown 64 MB), so only the allocation's unused tail is reported here: reporting
    // the whole batch again doubled its weight and ran a full collection twice as often.
    int64_t slack = static_cast<int64_t>(data->capacity() - data->size());
    if (slack > 0) Napi::MemoryManagement::AdjustExternalMemory(env, slack);
    buffer = Napi::ArrayBuffer::New(env, data->data(), data->size(), [slack](Napi::Env env, void*, ec::ByteBuffer* v) {
      if (slack > 0) Napi::MemoryManagement::AdjustExternalMemory(env, -slack);
      delete v;
    }, data);
  }
  Napi::Array frames = Napi::Array::New(env, batch.frames.size());
  for (size_t i = 0; i < batch.frames.size(); ++i) {
    const ec::HostFrame& f = batch.frames[i];
    Napi::Object o = Napi::Object::New(env);
    o.Set("pts", Napi::Number::New(env, static_cast<double>(f.pts)));
    o.Set("offset", Napi::Number::New(env, static_cast<double>(f.offset)));
    o.Set("bytes", Napi::Number::New(env, static_cast<double>(f.bytes)));
    o.Set("width", Napi::Number::New(env, f.width));
    o.Set("height", Napi::Number::New(env, f.height));
    o.Set("format", Napi::String::New(env, f.format));
    if (f.target >= 0) o.Set("target", Napi::Number::New(env, f.target));
    if (f.own) {
      // Decoded in place: the frame is its own buffer, freed with the last view of it.
      auto* owner = new std::shared_ptr<AVBufferRef>(f.own);
      o.Set("buffer", Napi::ArrayBuffer::New(env, f.own->data, f.bytes, [](Napi::Env, void*, std::shared_ptr<AVBufferRef>* r) { delete r; }, owner));
    }
    Napi::Array planes = Napi::Array::New(env, f.planes.size());
    for (size_t p = 0; p < f.planes.size(); ++p) {
      Napi::Object plane = Napi::Object::New(env);
      plane.Set("offset", Napi::Number::New(env, static_cast<double>(f.planes[p].offset)));
      plane.Set("rowBytes", Napi::Number::New(env, f.planes[p].rowBytes));
      plane.Set("rows", Napi::Number::New(env, f.planes[p].rows));
      planes.Set(p, plane);
    }
    o.Set("planes", planes);
    frames.Set(i, o);
  }
  Napi::Object result = Napi::Object::New(env);
  result.Set("buffer", buffer);
  result.Set("frames", frames);
  return result;
}

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

using ec::kernels::outputFormatOf;

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
  options.output = outputFormatOf(o.Get("output").As<Napi::String>());
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

// decodeImage(data: Uint8Array, format: string, output: string, resizeHeight, resizeWidth) → Promise<{buffer, frames}>
Napi::Value DecodeImage(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto data = info[0].As<Napi::Uint8Array>();
  ec::ImageOptions options;
  options.format = info[1].As<Napi::String>();
  options.output = outputFormatOf(info[2].As<Napi::String>());
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
        f.Get("height").As<Napi::Number>().Int32Value(), outputFormatOf(info[1].As<Napi::String>()),
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

Napi::Value readResultToJs(Napi::Env env, const ec::ReadResult& r) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("bytesRead", Napi::Number::New(env, static_cast<double>(r.bytesRead)));
  o.Set("mode", Napi::String::New(env, r.mode));
  return o;
}

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

// mapShared(fd, bytes): an ArrayBuffer over a MAP_SHARED mapping of the file, unmapped when collected.
Napi::Value MapShared(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = info[0].As<Napi::Number>().Int32Value();
  auto bytes = static_cast<size_t>(info[1].As<Napi::Number>().DoubleValue());
  void* data = guard(env, [&] { return ec::mapSharedFile(fd, bytes); });
  return Napi::ArrayBuffer::New(
      env, data, bytes, [](Napi::Env, void* p, size_t* size) {
        ec::unmapSharedFile(p, *size);
        delete size;
      },
      new size_t(bytes));
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  // Failures reach JS as typed errors; FFmpeg's own log lines on stderr would only be noise.
  av_log_set_level(std::getenv("EC_FFMPEG_LOG") ? AV_LOG_INFO : AV_LOG_QUIET);
  Napi::Function decoder = DecoderWrap::Init(env);
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
  exports.Set("abiVersion", Napi::Number::New(env, 1));
  return exports;
}

}  // namespace

NODE_API_MODULE(ec_native, Init)

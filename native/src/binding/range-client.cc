// The RangeClient class: ranged GETs on libcurl (../range-client.h) whose events reach JS in
// batches, one call of `onEvents` per batch (see deliver), through a thread-safe function. Arguments are
// checked by origin-cache/upstream/native-origin.ts before they get here.
#include "../range-client.h"

#include <memory>
#include <string>
#include <vector>

#include "common.h"
#include "functions.h"

namespace ec::binding {

namespace {

class RangeClientWrap : public Napi::ObjectWrap<RangeClientWrap> {
 public:
  // new RangeClient({connections, streamsPerConnection, connectTimeoutMs, headersTimeoutMs,
  //   bodyTimeoutMs, ca?, verify}, onEvents(nums: Float64Array, extras: (object | undefined)[]))
  explicit RangeClientWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<RangeClientWrap>(info) {
    Napi::Env env = info.Env();
    Napi::Object o = info[0].As<Napi::Object>();
    net::ClientOptions opts;
    auto num = [&](const char* k, long& slot) {
      Napi::Value v = o.Get(k);
      if (v.IsNumber()) slot = static_cast<long>(v.As<Napi::Number>().Int64Value());
    };
    num("connections", opts.connections);
    num("streamsPerConnection", opts.streamsPerConnection);
    num("connectTimeoutMs", opts.connectTimeoutMs);
    num("headersTimeoutMs", opts.headersTimeoutMs);
    num("bodyTimeoutMs", opts.bodyTimeoutMs);
    if (o.Get("ca").IsString()) opts.ca = o.Get("ca").As<Napi::String>().Utf8Value();
    if (o.Get("verify").IsBoolean()) opts.verify = o.Get("verify").As<Napi::Boolean>().Value();
    tsfn_ = Napi::ThreadSafeFunction::New(env, info[1].As<Napi::Function>(), "ec:range-client", 0, 1);
    tsfn_.Unref(env);
    try {
      core_ = std::make_unique<net::RangeClient>(std::move(opts), [this] {
        tsfn_.NonBlockingCall([this](Napi::Env env, Napi::Function cb) { deliver(env, cb); });
      });
    } catch (const ec::NativeException& e) {
      tsfn_.Release();
      released_ = true;
      throw toJsError(env, e.code(), e.what());
    }
  }

  ~RangeClientWrap() override { shutdown(); }

  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "RangeClient",
                       {InstanceMethod<&RangeClientWrap::Start>("start"),
                        InstanceMethod<&RangeClientWrap::Abort>("abort"),
                        InstanceMethod<&RangeClientWrap::Ref>("ref"), InstanceMethod<&RangeClientWrap::Unref>("unref"),
                        InstanceMethod<&RangeClientWrap::Close>("close")});
  }

 private:
  // start(id, url, headers: string[], dest: Uint8Array | null, from, to, size, etag, notifyEvery, bodyCap)
  Napi::Value Start(const Napi::CallbackInfo& info) {
    if (!core_) return info.Env().Undefined();
    net::Request r;
    r.id = info[0].As<Napi::Number>().Uint32Value();
    r.url = info[1].As<Napi::String>().Utf8Value();
    Napi::Array headers = info[2].As<Napi::Array>();
    for (uint32_t i = 0; i < headers.Length(); i++) r.headers.push_back(headers.Get(i).As<Napi::String>().Utf8Value());
    if (info[3].IsTypedArray()) {
      Napi::Uint8Array dest = info[3].As<Napi::Uint8Array>();
      r.dest = dest.Data();
      r.destLength = dest.ByteLength();
    }
    r.from = info[4].As<Napi::Number>().Int64Value();
    r.to = info[5].As<Napi::Number>().Int64Value();
    r.size = info[6].As<Napi::Number>().Int64Value();
    r.etag = info[7].As<Napi::String>().Utf8Value();
    r.notifyEvery = static_cast<size_t>(info[8].As<Napi::Number>().Int64Value());
    r.bodyCap = static_cast<size_t>(info[9].As<Napi::Number>().Int64Value());
    core_->start(std::move(r));
    return info.Env().Undefined();
  }

  Napi::Value Abort(const Napi::CallbackInfo& info) {
    if (core_) core_->abort(info[0].As<Napi::Number>().Uint32Value());
    return info.Env().Undefined();
  }

  Napi::Value Ref(const Napi::CallbackInfo& info) {
    if (!released_) tsfn_.Ref(info.Env());
    return info.Env().Undefined();
  }

  Napi::Value Unref(const Napi::CallbackInfo& info) {
    if (!released_) tsfn_.Unref(info.Env());
    return info.Env().Undefined();
  }

  Napi::Value Close(const Napi::CallbackInfo& info) {
    shutdown();
    return info.Env().Undefined();
  }

  void shutdown() {
    if (core_) core_->close();
    core_.reset();
    if (!released_) {
      released_ = true;
      tsfn_.Release();
    }
  }

  // One call per batch: four numbers per event in one Float64Array (id, kind, bytes, status and
  // flags) and, beside it, an object for the few events that carry text (headers, a failure, a
  // kept body), so that a progress report costs no JS object.
  void deliver(Napi::Env env, Napi::Function cb) {
    if (!core_ || !cb) return;
    std::vector<net::Event> events = core_->drain();
    if (events.empty()) return;
    Napi::Float64Array nums = Napi::Float64Array::New(env, events.size() * 4);
    double* d = nums.Data();
    Napi::Array extras = Napi::Array::New(env);
    for (size_t i = 0; i < events.size(); i++) {
      net::Event& e = events[i];
      d[4 * i] = e.id;
      d[4 * i + 1] = static_cast<int>(e.kind);
      d[4 * i + 2] = static_cast<double>(e.bytes);
      d[4 * i + 3] = e.status + (e.accepted ? kAccepted : 0) + (e.h2 ? kH2 : 0) + (e.cut ? kCut : 0);
      Napi::Object o;
      auto extra = [&]() -> Napi::Object& {
        if (o.IsEmpty()) {
          o = Napi::Object::New(env);
          extras.Set(static_cast<uint32_t>(i), o);
        }
        return o;
      };
      if (e.kind == net::EventKind::Headers) {
        if (!e.etag.empty()) extra().Set("etag", Napi::String::New(env, e.etag));
        if (!e.contentRange.empty()) extra().Set("contentRange", Napi::String::New(env, e.contentRange));
        if (!e.contentLength.empty()) extra().Set("contentLength", Napi::String::New(env, e.contentLength));
        if (!e.contentType.empty()) extra().Set("contentType", Napi::String::New(env, e.contentType));
      } else if (e.kind == net::EventKind::Done) {
        if (!e.body.empty()) extra().Set("body", Napi::Buffer<char>::Copy(env, e.body.data(), e.body.size()));
        if (!e.error.empty()) {
          extra().Set("error", Napi::String::New(env, e.error));
          extra().Set("message", Napi::String::New(env, e.message));
        }
      }
    }
    cb.Call({nums, extras});
  }

  static constexpr double kAccepted = 1 << 16;
  static constexpr double kH2 = 1 << 17;
  static constexpr double kCut = 1 << 18;

  std::unique_ptr<net::RangeClient> core_;
  Napi::ThreadSafeFunction tsfn_;
  bool released_ = false;
};

}  // namespace

Napi::Function RangeClientClass(Napi::Env env) { return RangeClientWrap::Define(env); }

// libcurlStatus(): {loaded, library, reason?, version?}
Napi::Value LibcurlStatus(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string reason;
  const curl::Api* api = curl::curl(&reason);
  Napi::Object o = Napi::Object::New(env);
  o.Set("loaded", Napi::Boolean::New(env, api != nullptr));
  o.Set("library", Napi::String::New(env, curl::libraryName()));
  if (api)
    o.Set("version", Napi::String::New(env, api->version()));
  else
    o.Set("reason", Napi::String::New(env, reason));
  return o;
}

}  // namespace ec::binding

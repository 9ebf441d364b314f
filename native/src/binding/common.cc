#include "common.h"

#include <cstdint>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <utility>

namespace ec::binding {

Napi::Error toJsError(Napi::Env env, const std::string& code, const std::string& message) {
  Napi::Error error = Napi::Error::New(env, message);
  error.Set("code", Napi::String::New(env, code));
  return error;
}

Worker::Worker(Napi::Env env, std::function<void()> work, std::function<Napi::Value(Napi::Env)> done)
    : Napi::AsyncWorker(env, "ec:native"), deferred_(Napi::Promise::Deferred::New(env)), work_(std::move(work)),
      done_(std::move(done)) {}

void Worker::Execute() {
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

void Worker::OnOK() {
  Napi::Env env = Env();
  try {
    deferred_.Resolve(done_(env));
  } catch (const Napi::Error& e) {
    deferred_.Reject(e.Value());
  }
}

void Worker::OnError(const Napi::Error& e) { deferred_.Reject(toJsError(Env(), code_, e.Message()).Value()); }

namespace {

// A batch too large for one ArrayBuffer: its frames' views share it, and it goes with the last.
struct SharedBatch {
  std::unique_ptr<ec::ByteBuffer> data;
  int64_t slack = 0;  // reported to V8 as external memory until the batch is freed
};

void releaseShared(Napi::Env env, void*, std::shared_ptr<SharedBatch>* ref) {
  // Finalizers run on the JS thread, the only one that holds these references.
  if (ref->use_count() == 1 && (*ref)->slack > 0) Napi::MemoryManagement::AdjustExternalMemory(env, -(*ref)->slack);
  delete ref;
}

}  // namespace

Napi::Value hostBatchToJs(Napi::Env env, ec::HostBatch& batch) {
  std::unique_ptr<ec::ByteBuffer> data = std::move(batch.data);
  for (const ec::HostFrame& f : batch.frames) {
    if (f.bytes > kMaxExternalBytes) {
      throw toJsError(env, "ERR_OUT_OF_MEMORY",
                      "A frame of " + std::to_string(f.bytes) + " bytes is larger than the largest ArrayBuffer (" +
                          std::to_string(kMaxExternalBytes) + " bytes)");
    }
  }
  // V8 counts an ArrayBuffer's bytes as external memory itself (and collects each time that
  // count has grown 64 MB), so only the allocation's unused tail is reported here: reporting
  // the whole batch again doubled its weight and ran a full collection twice as often.
  int64_t slack = data ? static_cast<int64_t>(data->capacity() - data->size()) : 0;
  Napi::ArrayBuffer buffer;
  std::shared_ptr<SharedBatch> shared;  // set when the frames get views of their own
  if (!data || data->empty()) {
    buffer = Napi::ArrayBuffer::New(env, 0);
  } else if (data->size() <= kMaxExternalBytes) {
    if (slack > 0) Napi::MemoryManagement::AdjustExternalMemory(env, slack);
    ec::ByteBuffer* bytes = data.get();
    buffer = Napi::ArrayBuffer::New(env, bytes->data(), bytes->size(), [slack](Napi::Env env, void*, ec::ByteBuffer* v) {
      if (slack > 0) Napi::MemoryManagement::AdjustExternalMemory(env, -slack);
      delete v;
    }, bytes);
    data.release();  // the ArrayBuffer's finalizer owns it now
  } else {
    buffer = Napi::ArrayBuffer::New(env, 0);
    shared = std::make_shared<SharedBatch>();
    shared->data = std::move(data);
    shared->slack = slack;
    if (slack > 0) Napi::MemoryManagement::AdjustExternalMemory(env, slack);
  }
  // One ArrayBuffer per arena (frames decoded in place share one per call, packed-frames.h).
  std::map<void*, Napi::ArrayBuffer> arenas;
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
    if (shared && !f.own && f.target < 0) {
      // Its own view of the shared batch (at most kMaxExternalBytes, checked above).
      auto* owner = new std::shared_ptr<SharedBatch>(shared);
      o.Set("offset", Napi::Number::New(env, 0));
      o.Set("buffer", Napi::ArrayBuffer::New(env, shared->data->data() + f.offset, f.bytes, releaseShared, owner));
    }
    if (f.own && f.arena) {
      auto it = arenas.find(f.arena.get());
      if (it == arenas.end()) {
        auto* owner = new std::shared_ptr<void>(f.arena);
        Napi::ArrayBuffer arena = Napi::ArrayBuffer::New(env, f.arenaBase, f.arenaBytes,
                                                         [](Napi::Env, void*, std::shared_ptr<void>* r) { delete r; }, owner);
        it = arenas.emplace(f.arena.get(), arena).first;
      }
      o.Set("buffer", it->second);
      o.Set("offset", Napi::Number::New(env, static_cast<double>(f.own->data - f.arenaBase)));
    } else if (f.own) {
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

}  // namespace ec::binding

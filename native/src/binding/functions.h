// The JS functions each binding file defines, by area; ../binding.cc registers them on the module.
// Their JS signatures are written beside each definition (and typed in native/lib/binding-types.ts).
#pragma once

#include <napi.h>

namespace ec::binding {

// decoder.cc: the Decoder class and openDecoder
Napi::Function DecoderClass(Napi::Env env);
Napi::Value OpenDecoder(const Napi::CallbackInfo& info);

// image.cc
Napi::Value DecodeImage(const Napi::CallbackInfo& info);

// kernels.cc: frame statistics and the conversion's host twin
Napi::Value LumaStats(const Napi::CallbackInfo& info);
Napi::Value ConvertReference(const Napi::CallbackInfo& info);

// device-memory.cc: allocations, copies, CUDA IPC handles and frame downloads
Napi::Value AllocDevice(const Napi::CallbackInfo& info);
Napi::Value CopyDeviceToHost(const Napi::CallbackInfo& info);
Napi::Value CopyDevice2D(const Napi::CallbackInfo& info);
Napi::Value IpcHandle(const Napi::CallbackInfo& info);
Napi::Value DownloadFrame(const Napi::CallbackInfo& info);

// file-reads.cc
Napi::Value ReadIntoHost(const Napi::CallbackInfo& info);
Napi::Value ReadIntoDevice(const Napi::CallbackInfo& info);

// shared-map.cc
Napi::Value MapShared(const Napi::CallbackInfo& info);

// range-client.cc: ranged GETs on libcurl (the origin-cache's native upstream client)
Napi::Function RangeClientClass(Napi::Env env);
Napi::Value LibcurlStatus(const Napi::CallbackInfo& info);

// devices.cc
Napi::Value Devices(const Napi::CallbackInfo& info);

}  // namespace ec::binding

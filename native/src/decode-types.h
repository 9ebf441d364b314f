// Plain data that crosses between the binding and the core: no N-API, no FFmpeg state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ffmpeg-handles.h"

namespace ec {

enum class OutputFormat { Native, Rgb24, RgbF32Planar };

struct DecoderOptions {
  std::string codec;  // "h264" | "hevc" | "av1" | "vp8" | "vp9"
  std::vector<uint8_t> extradata;
  int width = 0;
  int height = 0;
  std::string device = "cpu";  // backend name in the registry
  int deviceIndex = 0;
  int threads = 0;  // 0: libavcodec picks
  OutputFormat output = OutputFormat::Native;
  int resizeHeight = 0;  // 0: keep the decoded size
  int resizeWidth = 0;
};

/** One sample in decode order; `data` points into memory the caller keeps alive. */
struct PacketView {
  const uint8_t* data = nullptr;
  size_t size = 0;
  int64_t pts = 0;
  int64_t dts = 0;
  bool keyframe = false;
};

struct PlaneLayout {
  size_t offset = 0;  // from the frame's first byte
  int rowBytes = 0;
  int rows = 0;
};

/**
 * Caller memory a kept frame is written into instead of the call's batch allocation (e.g. its
 * place in a batch tensor): by pts; the caller keeps `data` alive and untouched for the call.
 */
struct FrameTarget {
  int64_t pts = 0;
  uint8_t* data = nullptr;
  size_t bytes = 0;
};

/** One frame inside a HostBatch's single allocation, in a buffer of its own (`own`), or in a target. */
struct HostFrame {
  int64_t pts = 0;
  size_t offset = 0;  // from the batch's first byte (or own->data); 16-byte aligned
  size_t bytes = 0;
  // Set when the decoder wrote the frame straight into a packed buffer of ours (no copy): the
  // last reference once the call has flushed the decoder, handed to JS as the frame's buffer.
  std::shared_ptr<AVBufferRef> own;
  // Decoded in place at its coded height (`own`, still shared with the decoder): where each
  // plane starts in `own` until HostConverter::settle moves it to its packed offset.
  std::vector<size_t> movedFrom;
  // Set when `own` is a slot of an arena the call's frames share (packed-frames.h): they reach
  // JS as views of one buffer over [arenaBase, arenaBase + arenaBytes), which this keeps alive.
  std::shared_ptr<void> arena;
  uint8_t* arenaBase = nullptr;
  size_t arenaBytes = 0;
  // Index of the FrameTarget the frame was written into (offset 0 there), else -1.
  int target = -1;
  int width = 0;
  int height = 0;
  std::string format;  // "yuv420p", "yuv420p10le", "nv12", "rgb24", "rgbf32-planar"...
  std::vector<PlaneLayout> planes;
};

/**
 * Batch memory comes from a bounded pool of blocks freed by earlier batches: fresh memory costs
 * one page fault per 4 KiB on first touch, which on a VM is slower than decoding the frame.
 * Thread-safe. EC_NATIVE_POOL_MB caps what the pool keeps (default 512), or two of the largest
 * block allocated so far where that is larger (at most four times the cap), so that batches past
 * the cap are reused by the next calls, not faulted in afresh.
 */
void* allocateBatchMemory(size_t bytes);
void freeBatchMemory(void* p, size_t bytes) noexcept;

/**
 * Leaves new bytes uninitialised (every frame byte is written by the converter anyway) and
 * takes its memory from allocateBatchMemory.
 */
template <typename T>
struct UninitAllocator : std::allocator<T> {
  using value_type = T;
  template <typename U>
  struct rebind {
    using other = UninitAllocator<U>;
  };
  UninitAllocator() = default;
  template <typename U>
  UninitAllocator(const UninitAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(allocateBatchMemory(n * sizeof(T))); }
  void deallocate(T* p, size_t n) noexcept { freeBatchMemory(p, n * sizeof(T)); }
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

using ByteBuffer = std::vector<uint8_t, UninitAllocator<uint8_t>>;

/** Every frame of one decode call in one allocation, handed to JS without a copy. */
struct HostBatch {
  std::unique_ptr<ByteBuffer> data = std::make_unique<ByteBuffer>();
  std::vector<HostFrame> frames;
  // Bytes of native frames copied or moved out of where the decoder wrote them (0 for frames
  // decoded in place): what packing the output cost beyond the decode itself.
  size_t copiedBytes = 0;
};

/** One plane of a frame in device memory. */
struct DevicePlane {
  uint64_t pointer = 0;  // CUdeviceptr
  int pitch = 0;         // bytes between rows
};

/**
 * A frame that stays in device memory: either an NVDEC surface (native output; the AVFrame
 * reference keeps it alive) or a converted frame inside `memory`, which the frames of one
 * decode call share and which is freed with the last of them.
 */
struct DeviceFrame {
  FramePtr frame;                  // native output, else null
  std::shared_ptr<void> memory;    // converted output, else null
  int64_t pts = 0;
  int deviceIndex = 0;
  int width = 0;
  int height = 0;
  std::string format;  // "nv12", "p010le", "rgb24", "rgbf32-planar", ...
  std::vector<DevicePlane> planes;
  size_t bytes = 0;  // converted output: packed size (rgb24: w*h*3, rgbf32-planar: 3*w*h*4)
};

struct DecodeResult {
  size_t expectedFrames = 0;  // sizing hint: the kept frames that have no target
  // Where kept frames go instead of `host`'s allocation, by pts (input; may be empty).
  const std::vector<FrameTarget>* targets = nullptr;
  size_t decodedFrames = 0;   // frames the codec produced, dropped ones included
  size_t packetsFed = 0;      // packets sent to the codec (fewer than given once `until` is out)
  bool reached = false;       // a frame at or past `until` came out
  HostBatch host;
  std::vector<DeviceFrame> device;
};

}  // namespace ec

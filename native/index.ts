/**
 * The native loader: packets → frames on the CPU (libavcodec) or the GPU (NVDEC, frames
 * in device memory), and file reads with cuFile where GPUDirect Storage works.
 * Every argument is checked here before the addon is loaded or called.
 */
export { Decoder, createDecoder, type DecodeOptions, type DecodeRun } from "./lib/decoder.js";
export { devices, type HostDevices, type NvdecSupport } from "./lib/devices.js";
export { DecodeRouter, type DecodeDevice, type DeviceTable, type Route } from "./lib/decode-route.js";
export { NativeArgumentError, NativeError, NativeErrorCode, NativeUnavailableError } from "./lib/errors.js";
export { decodeImage, IMAGE_FORMATS, type ImageDecodeOptions, type ImageFormat } from "./lib/image.js";
export { frameMd5, framemd5Header, framemd5Line } from "./lib/frame-md5.js";
export { frameBytes, type DeviceFrame, type Dtype, type Frame, type HostFrame } from "./lib/frames.js";
export {
  convertReference,
  lumaStatsOnDevice,
  lumaStatsReference,
  type ConvertReferenceOptions,
  type LumaHostFrame,
  type LumaStats,
} from "./lib/kernels.js";
export { CODECS, OUTPUTS, type Codec, type DecoderOptions, type DeviceName, type OutputFormat } from "./lib/options.js";
export { packetsFromTrack, sampleSpan, type Packets, type Sample } from "./lib/packets.js";
export { allocDevice, readInto, type DeviceBuffer, type ReadResult } from "./lib/read-into.js";
export { mapShared } from "./lib/shared-map.js";
export {
  libcurlStatus,
  openRangeClient,
  rangeEvent,
  type RangeClient,
  type RangeClientOptions,
  type RangeEvent,
  type RangeExtra,
} from "./lib/range-client.js";
export { ipcHandle, packDeviceFrame, packedBytes, packedPlanes } from "./lib/device-share.js";
/** Where the addon may be and which build loads: for `ec build-native`, which says what it found. */
export { addonCandidates, findBuild } from "./lib/load.js";

import { EcError, describeReceived } from "../../common/errors.js";

/**
 * Stable codes of the native loader. Callers branch on these, never on messages.
 * Codes from the C++ core reach JS unchanged through the binding.
 */
export const NativeErrorCode = {
  InvalidArgument: "ERR_INVALID_ARGUMENT",
  NativeUnavailable: "ERR_NATIVE_UNAVAILABLE",
  UnsupportedCodec: "ERR_UNSUPPORTED_CODEC",
  UnsupportedOutput: "ERR_UNSUPPORTED_OUTPUT",
  UnsupportedFormat: "ERR_UNSUPPORTED_FORMAT",
  BadExtradata: "ERR_BAD_EXTRADATA",
  DecoderOpen: "ERR_DECODER_OPEN",
  DecoderBusy: "ERR_DECODER_BUSY",
  DecoderClosed: "ERR_DECODER_CLOSED",
  DecoderStalled: "ERR_DECODER_STALLED",
  CorruptPacket: "ERR_CORRUPT_PACKET",
  CorruptImage: "ERR_CORRUPT_IMAGE",
  UnsupportedImage: "ERR_UNSUPPORTED_IMAGE",
  CorruptFrame: "ERR_CORRUPT_FRAME",
  /** A frame of other dimensions than the index gave, or a stream declaring pictures past them (max_pixels). */
  FrameDimensions: "ERR_FRAME_DIMENSIONS",
  PacketOutOfRange: "ERR_PACKET_OUT_OF_RANGE",
  PacketOrder: "ERR_PACKET_ORDER",
  NoKeyframe: "ERR_NO_KEYFRAME",
  DeviceUnavailable: "ERR_DEVICE_UNAVAILABLE",
  NvdecUnsupported: "ERR_NVDEC_UNSUPPORTED",
  Cuda: "ERR_CUDA",
  FileNotFound: "ERR_FILE_NOT_FOUND",
  ReadFailed: "ERR_READ_FAILED",
  OutOfMemory: "ERR_OUT_OF_MEMORY",
  MapFailed: "ERR_MAP_FAILED",
  /** libcurl.so.4 (or the library EC_LIBCURL names) does not load: no native range client here. */
  LibcurlUnavailable: "ERR_LIBCURL_UNAVAILABLE",
  Native: "ERR_NATIVE",
} as const;
export type NativeErrorCode = (typeof NativeErrorCode)[keyof typeof NativeErrorCode];

/** Base error of the native loader: decode, device and read failures. */
export class NativeError extends EcError {
  constructor(code: NativeErrorCode | string, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = "NativeError";
  }
}

/** A bad argument, caught in TS before any native call. */
export class NativeArgumentError extends NativeError {
  constructor(message: string) {
    super(NativeErrorCode.InvalidArgument, message);
    this.name = "NativeArgumentError";
  }
}

/** The addon is not built or cannot load; the message says what to install. */
export class NativeUnavailableError extends NativeError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(NativeErrorCode.NativeUnavailable, message, options);
    this.name = "NativeUnavailableError";
  }
}

/** "Expected a positive integer for width but received -3". */
export function argumentError(expected: string, name: string, received: unknown): NativeArgumentError {
  return new NativeArgumentError(`Expected ${expected} for ${name} but received ${describeReceived(received)}`);
}

/** Wraps whatever the binding threw (an Error with a `code`) as a NativeError. */
export function fromNative(error: unknown): NativeError {
  if (error instanceof NativeError) return error;
  const e = error as { code?: unknown; message?: unknown };
  const code = typeof e?.code === "string" && e.code.startsWith("ERR_") ? e.code : NativeErrorCode.Native;
  const message = typeof e?.message === "string" ? e.message : String(error);
  return new NativeError(code, message, { cause: error });
}

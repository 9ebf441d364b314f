/** The raw shapes the C++ binding takes and returns (native/src/binding/*.cc). Internal. */

export interface RawPlane {
  offset: number;
  rowBytes: number;
  rows: number;
}

export interface RawHostFrame {
  pts: number;
  offset: number;
  bytes: number;
  width: number;
  height: number;
  format: string;
  planes: RawPlane[];
  /**
   * The frame's own buffer (offset 0): decoded in place, or its batch was past the largest
   * ArrayBuffer (4 GiB before Node 22) and each frame got a view of it; absent: it lies in the batch's.
   */
  buffer?: ArrayBuffer;
  /** Index of the target it was written into (offset 0 there); absent: not written into one. */
  target?: number;
}

export interface RawHostBatch {
  buffer: ArrayBuffer;
  frames: RawHostFrame[];
}

export interface RawDeviceFrame {
  pts: number;
  device: number;
  width: number;
  height: number;
  format: string;
  planes: { pointer: bigint; pitch: number }[];
  handle: object;
}

/** A frame for lumaStats: a device frame's handle, or host bytes for the host twin. */
export interface RawLumaFrame {
  handle?: object;
  data?: Uint8Array;
  format: string;
  width: number;
  height: number;
  /** Bytes between rows of the first plane. */
  pitch: number;
}

export interface RawDecoder {
  decode(
    data: Uint8Array,
    table: Float64Array,
    keyframes: Uint8Array,
    dropBefore: number | null,
    drain: boolean,
    recovering: boolean,
    targetPts?: Float64Array,
    targets?: Uint8Array[],
    until?: number | null,
  ): Promise<(RawHostBatch | { device: RawDeviceFrame[] }) & { decoded: number; fed: number; copied: number }>;
  close(): void;
}

export interface RawOpenOptions {
  codec: string;
  extradata: Uint8Array;
  width: number;
  height: number;
  device: string;
  deviceIndex: number;
  threads: number;
  output: string;
  resizeHeight: number;
  resizeWidth: number;
}

export interface RawReadResult {
  bytesRead: number;
  mode: "cufile" | "compat" | "host";
}

export interface RawDevices {
  backends: string[];
  cpuDecoders: Record<string, string | null>;
  cudaCompiled: boolean;
  cudaReason: string;
  kernels: boolean;
  kernelsReason: string;
  cudaDevices: {
    index: number;
    name: string;
    memoryBytes: number;
    nvdec: Record<string, { probed: boolean; supported: boolean; reason: string }>;
  }[];
  nvdecCodecs: string[];
  nvdecReason: string;
  cufile: boolean;
  cufileReason: string;
  deviceReadMode: "cufile" | "compat" | "none";
}

export interface Binding {
  abiVersion: number;
  openDecoder(options: RawOpenOptions): Promise<RawDecoder>;
  decodeImage(
    data: Uint8Array,
    format: string,
    output: string,
    resizeHeight: number,
    resizeWidth: number,
  ): Promise<RawHostBatch>;
  downloadFrame(handle: object): Promise<RawHostBatch>;
  /** Label statistics of a clip, a frame each (views of one buffer of records); device -1 runs the host twin over `data`. */
  lumaStats(frames: RawLumaFrame[], step: number, device: number): Promise<LumaStats[]>;
  /** The GPU conversion's host twin over a packed host frame. */
  convertReference(
    frame: { data: Uint8Array; format: string; width: number; height: number; planes: readonly RawPlane[] },
    output: string,
    resizeHeight: number,
    resizeWidth: number,
    colorspace: "bt601" | "bt709" | "bt2020",
    fullRange: boolean,
  ): Promise<RawHostBatch>;
  readIntoHost(path: string, offset: number, length: number, target: Uint8Array): Promise<RawReadResult>;
  readIntoDevice(
    path: string,
    offset: number,
    length: number,
    device: number,
    pointer: bigint,
    owner: object,
  ): Promise<RawReadResult>;
  allocDevice(device: number, bytes: number): { pointer: bigint; handle: object };
  copyDeviceToHost(device: number, pointer: bigint, target: Uint8Array): void;
  copyDevice2D(
    device: number,
    dst: bigint,
    dstPitch: number,
    src: bigint,
    srcPitch: number,
    rowBytes: number,
    rows: number,
  ): void;
  ipcHandle(device: number, pointer: bigint): Uint8Array;
  /** A MAP_SHARED mapping of the file's first `bytes`, unmapped when the buffer is collected. */
  mapShared(fd: number, bytes: number): ArrayBuffer;
  devices(): RawDevices;
  /** Ranged GETs on libcurl, on a thread of their own (src/range-client.h). */
  RangeClient: new (
    options: RawRangeClientOptions,
    onEvents: (nums: Float64Array, extras: (RawRangeExtra | undefined)[]) => void,
  ) => RawRangeClient;
  /** Whether libcurl loads here (EC_LIBCURL names another library than libcurl.so.4). */
  libcurlStatus(): { loaded: boolean; library: string; reason?: string; version?: string };
}

export interface RawRangeClientOptions {
  connections: number;
  streamsPerConnection: number;
  connectTimeoutMs: number;
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
  /** PEM; absent: the system's CAs. */
  ca?: string;
  verify: boolean;
}

export interface RawRangeClient {
  /**
   * GET `url` with `headers` ("name: value"). The body goes into `dest` where the answer is a 206
   * of bytes from-to (inclusive) of an object of `size` bytes (-1: any) or a 200 of all of it (from
   * 0, to size - 1), with an ETag weakly equal to `etag` or none; else its first `bodyCap` bytes are kept.
   */
  start(
    id: number,
    url: string,
    headers: string[],
    dest: Uint8Array | null,
    from: number,
    to: number,
    size: number,
    etag: string,
    notifyEvery: number,
    bodyCap: number,
  ): void;
  /** Nothing more is written into the request's dest once this returns; its done event follows. */
  abort(id: number): void;
  /** Keep the process alive while requests are in flight (the client starts unreferenced). */
  ref(): void;
  unref(): void;
  /** Ends every request (no events for them) and the client's thread. */
  close(): void;
}

/**
 * A batch of events: four numbers each in `nums` (id, kind, bytes, status + RANGE_FLAGS) and, at
 * the same index of `extras`, the text of a headers or done event that has some.
 */
export interface RawRangeExtra {
  etag?: string;
  contentRange?: string;
  contentLength?: string;
  contentType?: string;
  body?: Buffer;
  error?: string;
  message?: string;
}

/** Bits above the status in an event's fourth number. */
export const RANGE_FLAGS = { accepted: 1 << 16, h2: 1 << 17, cut: 1 << 18 } as const;

/** One event, decoded. kind 0: headers; 1: progress (`bytes` in dest, final); 2: done. */
export interface RawRangeEvent {
  id: number;
  kind: 0 | 1 | 2;
  bytes: number;
  status?: number;
  /** The body goes (went) into dest. */
  accepted?: boolean;
  h2?: boolean;
  etag?: string;
  contentRange?: string;
  contentLength?: string;
  contentType?: string;
  body?: Buffer;
  /** The kept body was longer than bodyCap. */
  cut?: boolean;
  /** Why the request failed: aborted, overflow, connect, connect-timeout, headers-timeout, body-timeout, timeout, reset, resolve, tls, other. */
  error?: string;
  message?: string;
}

/** The integer sums of one frame's luma grid, as ec_luma_stats computes them. */
export interface LumaStats {
  readonly gridWidth: number;
  readonly gridHeight: number;
  /** 256-bin histogram of the grid's 8-bit luma. */
  readonly histogram: Uint32Array;
  /** Sum of each grid row (top to bottom) and column (left to right). */
  readonly rowSums: Uint32Array;
  readonly colSums: Uint32Array;
  /** Sum of absolute differences to the previous frame's grid; undefined for a first frame or a size change. */
  readonly absDiff: number | undefined;
}

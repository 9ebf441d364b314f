import { loadBinding } from "./load.js";

/** Whether one device's NVDEC decodes one codec. */
export interface NvdecSupport {
  readonly supported: boolean;
  /** The driver was asked; false: this build cannot ask, and `supported` assumes FFmpeg's hwaccel works. */
  readonly probed: boolean;
  /** Why not; absent when supported. */
  readonly reason?: string;
}

export interface HostDevices {
  cpu: {
    /** codec → the libavcodec decoder the CPU path uses (null: none in this FFmpeg). */
    decoders: Record<string, string | null>;
  };
  cuda: {
    /** Whether this build has the CUDA backend (CUDA headers found at build time). */
    compiled: boolean;
    /**
     * Whether this build embeds the CUDA kernels (nvcc found at build time): rgb24 /
     * rgbf32-planar output and resize on cuda devices, and label statistics on the GPU.
     */
    kernels: { compiled: boolean; reason?: string };
    available: boolean;
    /** Why no CUDA device is usable; absent when one is. */
    reason?: string;
    /**
     * `nvdec`: per codec with a CUDA hwaccel in this FFmpeg, whether this device's NVDEC decodes it
     * (8-bit 4:2:0), as the driver says (`probed`; cuvidGetDecoderCaps, asked once per device and
     * codec); an H100/H200 has no AV1 NVDEC. Device "auto" decodes a codec NVDEC lacks on the CPU.
     */
    devices: { index: number; name: string; memoryBytes: number; nvdec: Record<string, NvdecSupport> }[];
    nvdec: { available: boolean; codecs: string[]; reason?: string };
  };
  cufile: { available: boolean; reason?: string };
  /** Which mode readInto() runs for each kind of target on this host. */
  readMode: { host: "host"; device: "cufile" | "compat" | "none" };
}

/**
 * What this host has — CUDA devices, NVDEC codecs, cuFile — and which path each
 * operation will take. Never throws for a missing GPU; says why instead.
 *
 * @example
 * const d = devices();
 * const device = d.cuda.available ? "cuda:0" : "cpu";
 */
export function devices(): HostDevices {
  const r = loadBinding().devices();
  const cudaAvailable = r.cudaDevices.length > 0;
  const nvdecAvailable = r.nvdecCodecs.length > 0;
  return {
    cpu: { decoders: r.cpuDecoders },
    cuda: {
      compiled: r.cudaCompiled,
      kernels: { compiled: r.kernels, ...(r.kernels ? {} : { reason: r.kernelsReason }) },
      available: cudaAvailable,
      ...(cudaAvailable ? {} : { reason: r.cudaReason }),
      devices: r.cudaDevices.map((d) => ({
        ...d,
        nvdec: Object.fromEntries(
          Object.entries(d.nvdec).map(([codec, n]) => [
            codec,
            { supported: n.supported, probed: n.probed, ...(n.supported ? {} : { reason: n.reason }) },
          ]),
        ),
      })),
      nvdec: { available: nvdecAvailable, codecs: r.nvdecCodecs, ...(nvdecAvailable ? {} : { reason: r.nvdecReason }) },
    },
    cufile: { available: r.cufile, ...(r.cufile ? {} : { reason: r.cufileReason }) },
    readMode: { host: "host", device: r.deviceReadMode },
  };
}

import { devices, type HostDevices } from "./devices.js";

/** A device a decoder opens on. */
export type DecodeDevice = "cpu" | `cuda:${number}`;

/** Where one codec decodes, and why not on the CUDA device asked for where it does not. */
export interface Route {
  readonly device: DecodeDevice;
  /** Set when a CUDA device was wanted but its NVDEC does not decode the codec: the CPU decodes it instead. */
  readonly fallback?: { readonly codec: string; readonly reason: string };
}

/** The part of devices() routing reads: tests give a capability table of their own. */
export type DeviceTable = {
  readonly cuda: Pick<HostDevices["cuda"], "available" | "devices"> & {
    readonly nvdec: Pick<HostDevices["cuda"]["nvdec"], "available">;
  };
};

/**
 * Routes decodes to a device by what each device's NVDEC decodes (devices(), asked of the driver
 * once per device and codec): "auto" is the first CUDA device where one with NVDEC is, else the
 * CPU; a codec that device's NVDEC lacks (AV1 on an H100/H200), or that this FFmpeg has no NVDEC
 * hwaccel for, decodes on the CPU (libavcodec, libdav1d) as a fallback instead of failing. An
 * explicit "cuda:N" falls back the same way; a device that is not there is left to the decoder
 * to report (ERR_DEVICE_UNAVAILABLE). Not thread-bound; the table is read once.
 *
 * @example
 * const router = new DecodeRouter();
 * const { device, fallback } = router.route("auto", track.codec); // { device: "cpu", fallback: { codec: "av1", … } } on an H200
 */
export class DecodeRouter {
  #table: DeviceTable | undefined;

  constructor(private readonly probe: () => DeviceTable = devices) {}

  route(device: string, codec: string): Route {
    if (device === "cpu") return { device: "cpu" };
    const table = this.#read();
    let index: number;
    if (device === "auto") {
      const first = table.cuda.devices[0];
      if (!table.cuda.available || !table.cuda.nvdec.available || !first) return { device: "cpu" };
      index = first.index;
    } else {
      index = device === "cuda" ? 0 : Number(device.slice("cuda:".length));
    }
    const cuda = `cuda:${index}` as const;
    const found = table.cuda.devices.find((d) => d.index === index);
    if (!found) return { device: cuda };
    const support = found.nvdec[codec];
    if (support?.supported) return { device: cuda };
    const reason = support?.reason ?? `this FFmpeg has no NVDEC hwaccel for ${codec}`;
    return {
      device: "cpu",
      fallback: { codec, reason: `${cuda} cannot decode ${codec} (${reason}); decoded on the CPU` },
    };
  }

  #read(): DeviceTable {
    if (!this.#table) {
      try {
        this.#table = this.probe();
      } catch {
        // No addon or no driver answer: nothing to route to but the CPU.
        this.#table = { cuda: { available: false, devices: [], nvdec: { available: false } } };
      }
    }
    return this.#table;
  }
}

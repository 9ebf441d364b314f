/**
 * The engine behind a client in another language: one dataset per process, requests and events
 * as JSON lines (protocol.ts), batches written into a shared-memory ring the client maps. The
 * client's stdin closing (its process died, even by kill -9) ends the engine: no orphans.
 */
import { createInterface } from "node:readline";
import type { Readable, Writable } from "node:stream";
import { EcError } from "../../common/errors.js";
import { open, type Dataset } from "../open.js";
import type { OpenOptions } from "../options.js";
import { mergeCheckpoints, type Checkpoint } from "../state/checkpoint.js";
import type { StreamStats } from "../stats.js";
import type { DeviceFrame } from "../../native/index.js";
import { packedBytes } from "../../native/lib/device-share.js";
import type { DecodedClip } from "../pipeline/decode.js";
import { PROTOCOL_VERSION, Request, type Event } from "./protocol.js";
import { SlotRing } from "./slot-ring.js";

/** What the client can ask of a batch it has been handed: the checkpoint and counters as of then. */
interface Snapshot {
  readonly state: Checkpoint;
  readonly stats: StreamStats;
}

/** Every frame of the batch still on one GPU, or undefined (CPU decode, e.g. AV1 without an AV1 NVDEC): those go through host memory. */
function deviceFramesOf(clips: readonly DecodedClip[]): DeviceFrame[] | undefined {
  const frames = clips.flatMap((c) => (c.gpuFrames && c.gpuFrames.length === c.frames.length ? [...c.gpuFrames] : []));
  const total = clips.reduce((n, c) => n + c.frames.length, 0);
  return frames.length === total && frames.length > 0 && frames.every((f) => f.device === frames[0]!.device) ? frames : undefined;
}

function errorOf(err: unknown, fallback: string): { code: string; message: string } {
  return { code: err instanceof EcError ? err.code : fallback, message: err instanceof Error ? err.message : String(err) };
}

export class EngineSession {
  private ds: Dataset | undefined;
  private ring: SlotRing | undefined;
  /** Snapshots by sequence number from the client's last acknowledged one on. */
  private readonly snapshots = new Map<number, Snapshot>();
  private acked = 0;
  private closed = false;
  private readonly done: Promise<void>;
  private finish!: () => void;

  constructor(private readonly input: Readable, private readonly output: Writable) {
    this.done = new Promise((resolve) => (this.finish = resolve));
  }

  /** Serves requests until the client says close or its end of the pipe goes away. */
  async run(): Promise<void> {
    const lines = createInterface({ input: this.input, crlfDelay: Infinity });
    lines.on("line", (line) => {
      if (line.trim() === "") return;
      let req: Request;
      try {
        req = Request.parse(JSON.parse(line));
      } catch (err) {
        this.fail({ code: "ERR_PROTOCOL", message: `Expected one request as a JSON line but received ${JSON.stringify(line.slice(0, 200))}: ${(err as Error).message}` });
        return;
      }
      try {
        this.handle(req);
      } catch (err) {
        this.fail(errorOf(err, "ERR_PROTOCOL"));
      }
    });
    lines.on("close", () => void this.shutdown());
    await this.done;
  }

  private send(ev: Event): void {
    if (!this.closed) this.output.write(`${JSON.stringify(ev)}\n`);
  }

  private fail(err: { code: string; message: string }): void {
    this.send({ event: "failed", ...err });
    void this.shutdown();
  }

  private handle(req: Request): void {
    switch (req.op) {
      case "open":
        void this.open(req.url, req.options as OpenOptions, req.slots, req.dir, req.ipc);
        return;
      case "mapped":
        this.ring?.unlink();
        return;
      case "ack":
        for (const s of req.release) this.ring?.release(s);
        for (const k of this.snapshots.keys()) if (k < req.seq) this.snapshots.delete(k);
        this.acked = Math.max(this.acked, req.seq);
        return;
      case "state":
      case "stats": {
        const snap = this.snapshots.get(req.seq);
        if (!this.ds || !snap) {
          this.send({ event: "reply", id: req.id, error: { code: "ERR_PROTOCOL", message: `Expected an open dataset and a batch at or after ${this.acked} but received ${req.seq}` } });
          return;
        }
        // Counters of what the client has been handed; wall time and errors as of now.
        const now = this.ds.stats();
        const value = req.op === "state" ? snap.state : { ...now, clips: snap.stats.clips, frames: snap.stats.frames, bytes_delivered: snap.stats.bytes_delivered };
        this.send({ event: "reply", id: req.id, value });
        return;
      }
      case "merge":
        try {
          this.send({ event: "reply", id: req.id, value: mergeCheckpoints(req.checkpoints.map((c) => c as Checkpoint)) });
        } catch (err) {
          this.send({ event: "reply", id: req.id, error: errorOf(err, "ERR_RESUME_INVALID") });
        }
        return;
      case "close":
        void this.shutdown();
        return;
    }
  }

  private async open(url: string, options: OpenOptions, slots: number, dir: string, ipc: boolean): Promise<void> {
    if (this.ds) return this.fail({ code: "ERR_PROTOCOL", message: "Expected one open per engine but received a second" });
    try {
      this.ds = await open(url, {
        ...options,
        onError: (err, clip) => this.send({ event: "error", code: err.code, message: err.message, clip: clip ? { key: clip.key, start: clip.start } : null }),
      });
      this.ring = new SlotRing(dir, slots);
    } catch (err) {
      return this.fail(errorOf(err, "ERR_OPEN_FAILED"));
    }
    this.snapshots.set(0, { state: this.ds.state(), stats: this.ds.stats() });
    this.send({ event: "opened", protocol: PROTOCOL_VERSION, clips: this.ds.clipCount, total: this.ds.totalClips, slots: this.ring.files });
    void this.stream(this.ds, this.ring, ipc);
  }

  private async stream(ds: Dataset, ring: SlotRing, ipc: boolean): Promise<void> {
    let seq = 0;
    try {
      for await (const batch of ds) {
        if (this.closed) return;
        this.snapshots.set(++seq, { state: ds.state(), stats: ds.stats() });
        const slot = await ring.acquire(() => this.send({ event: "full" }));
        if (this.closed) return;
        const { layout } = batch;
        const gpuFrames = ipc ? deviceFramesOf(batch.decoded) : undefined;
        const frameBytes = gpuFrames ? packedBytes(gpuFrames[0]!) : 0;
        const placed = gpuFrames
          ? await ring.writeDevice(slot, gpuFrames, frameBytes * gpuFrames.length)
          : { capacity: ring.write(slot, layout.frames, layout.byteLength), handle: undefined };
        // NVDEC's native surfaces (nv12, p010) are packed plane by plane: [B, T, bytes per frame].
        const shape = gpuFrames && gpuFrames[0]!.format !== "rgb24" ? [layout.shape[0]!, layout.shape[1]!, frameBytes] : [...layout.shape];
        this.send({
          event: "batch",
          seq,
          slot,
          capacity: placed.capacity,
          bytes: gpuFrames ? frameBytes * gpuFrames.length : layout.byteLength,
          shape,
          dtype: layout.dtype,
          pixel_format: gpuFrames ? gpuFrames[0]!.format : layout.pixelFormat,
          device: gpuFrames ? gpuFrames[0]!.device : "cpu",
          ...(placed.handle ? { ipc: placed.handle } : {}),
          clips: batch.clips.map((c) => ({ ...c })),
        });
      }
      this.snapshots.set(++seq, { state: ds.state(), stats: ds.stats() });
      this.send({ event: "end", seq });
    } catch (err) {
      if (!this.closed) this.fail(errorOf(err, "ERR_STREAM_FAILED"));
    }
  }

  private async shutdown(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.ring?.close();
    try {
      await this.ds?.close();
    } catch {
      // Closing is best effort: the process ends next.
    }
    this.finish();
  }
}


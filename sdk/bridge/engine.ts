/**
 * The engine behind a client in another language: one dataset at a time (a client reuses the
 * process from epoch to epoch), requests and events as JSON lines (protocol.ts), batches written
 * into a shared-memory ring the client maps. The client's stdin closing (its process died, even
 * by kill -9) ends the engine: no orphans.
 */
import { createInterface } from "node:readline";
import type { Readable, Writable } from "node:stream";
import { EcError } from "../../common/errors.js";
import { open, type Dataset } from "../open.js";
import type { OpenOptions } from "../options.js";
import { mergeCheckpoints, type Checkpoint } from "../state/checkpoint.js";
import type { StreamStats } from "../stats.js";
import { type DeviceFrame, packedBytes } from "../../native/index.js";
import type { DecodedClip } from "../pipeline/decode.js";
import { PROTOCOL_VERSION, Request, type Event } from "./protocol.js";
import { SlotPool } from "./slot-pool.js";
import { ringSlots, SlotRing } from "./slot-ring.js";

/** What the client can ask of a batch it has been handed: the checkpoint and counters as of then. */
interface Snapshot {
  readonly state: Checkpoint;
  readonly stats: StreamStats;
}

/** Every frame of the batch still on one GPU, or undefined (CPU decode, e.g. AV1 without an AV1 NVDEC): those go through host memory. */
function deviceFramesOf(clips: readonly DecodedClip[]): DeviceFrame[] | undefined {
  const frames = clips.flatMap((c) => (c.gpuFrames && c.gpuFrames.length === c.frames.length ? [...c.gpuFrames] : []));
  const total = clips.reduce((n, c) => n + c.frames.length, 0);
  return frames.length === total && frames.length > 0 && frames.every((f) => f.device === frames[0]!.device)
    ? frames
    : undefined;
}

function errorOf(err: unknown, fallback: string): { code: string; message: string } {
  return {
    code: err instanceof EcError ? err.code : fallback,
    message: err instanceof Error ? err.message : String(err),
  };
}

/** One opened dataset of the session and what the client has been handed of it. */
interface Current {
  readonly id: number;
  readonly ds: Dataset;
  readonly ring: SlotRing;
  /** Snapshots by sequence number from the client's last acknowledged one on. */
  readonly snapshots: Map<number, Snapshot>;
  acked: number;
  stopped: boolean;
  /** The stream loop, settled once it has stopped handing out batches. */
  streaming: Promise<void>;
}

/** How long a stopped dataset's stream may take to wind down before its ring is freed rather than kept. */
const WIND_DOWN_MS = 2000;

export class EngineSession {
  private current: Current | undefined;
  /**
   * The last dataset's ring, kept for the next open of the same slot count (the next epoch): its
   * tmpfs pages are faulted in once per process, not once per dataset. At most one ring is held.
   */
  private kept: SlotRing | undefined;
  /** The dataset being opened: requests about it wait for the open to end. */
  private opening: Promise<void> = Promise.resolve();
  private closed = false;
  private readonly done: Promise<void>;
  private finish!: () => void;

  constructor(
    private readonly input: Readable,
    private readonly output: Writable,
  ) {
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
        this.fatal({
          code: "ERR_PROTOCOL",
          message: `Expected one request as a JSON line but received ${JSON.stringify(line.slice(0, 200))}: ${(err as Error).message}`,
        });
        return;
      }
      try {
        this.handle(req);
      } catch (err) {
        this.fatal(errorOf(err, "ERR_PROTOCOL"));
      }
    });
    lines.on("close", () => void this.shutdown());
    await this.done;
  }

  private send(ev: Event, ds?: number): void {
    if (!this.closed) this.output.write(`${JSON.stringify(ds === undefined ? ev : { ...ev, ds })}\n`);
  }

  /** The client broke the protocol: say so and end. */
  private fatal(err: { code: string; message: string }): void {
    this.send({ event: "failed", ...err });
    void this.shutdown();
  }

  private handle(req: Request): void {
    const cur = this.current;
    switch (req.op) {
      case "open":
        this.opening = this.opening.then(() =>
          this.open(req.ds, req.url, req.options as OpenOptions, req.dir, req.ipc, req.keep),
        );
        return;
      case "reset":
        this.opening = this.opening.then(() => this.stop());
        return;
      case "mapped":
        if (cur?.id === req.ds) cur.ring.unlink();
        return;
      case "ack":
        if (cur?.id !== req.ds) return; // about a dataset already replaced
        for (const s of req.release) cur.ring.release(s);
        for (const k of cur.snapshots.keys()) if (k < req.seq) cur.snapshots.delete(k);
        cur.acked = Math.max(cur.acked, req.seq);
        cur.ring.poke();
        return;
      case "state":
      case "stats": {
        const snap = cur?.id === req.ds ? cur.snapshots.get(req.seq) : undefined;
        if (!cur || !snap) {
          this.send({
            event: "reply",
            id: req.id,
            error: {
              code: "ERR_PROTOCOL",
              message: `Expected dataset ${req.ds} open and a batch at or after ${cur?.acked ?? 0} but received ${req.seq}`,
            },
          });
          return;
        }
        // Counters of what the client has been handed; wall time and errors as of now.
        const now = cur.ds.stats();
        const value =
          req.op === "state"
            ? snap.state
            : {
                ...now,
                clips: snap.stats.clips,
                frames: snap.stats.frames,
                bytes_delivered: snap.stats.bytes_delivered,
                // Batch bytes copied into the slots (pwritev), and handed over where they were decoded.
                slot_bytes_copied: cur.ring.bytesCopied,
                slot_bytes_in_place: cur.ring.bytesPlaced,
              };
        this.send({ event: "reply", id: req.id, value });
        return;
      }
      case "merge":
        try {
          this.send({
            event: "reply",
            id: req.id,
            value: mergeCheckpoints(req.checkpoints.map((c) => c as Checkpoint)),
          });
        } catch (err) {
          this.send({ event: "reply", id: req.id, error: errorOf(err, "ERR_RESUME_INVALID") });
        }
        return;
      case "close":
        void this.shutdown();
        return;
    }
  }

  private async open(
    id: number,
    url: string,
    options: OpenOptions,
    dir: string,
    ipc: boolean,
    keep: boolean,
  ): Promise<void> {
    await this.stop();
    let ds: Dataset | undefined;
    let ring: SlotRing | undefined;
    let kept = this.kept;
    this.kept = undefined;
    let reuse = false;
    try {
      ds = await open(
        url,
        {
          ...options,
          onError: (err, clip) =>
            this.send(
              {
                event: "error",
                code: err.code,
                message: err.message,
                clip: clip ? { key: clip.key, start: clip.start } : null,
              },
              id,
            ),
        },
        // Host batches are decoded into the slots the client maps (the pool is made when the stream
        // starts, after the ring below); GPU ones stay in device memory.
        ipc ? {} : { batchPool: (maxFree) => new SlotPool(ring!, maxFree) },
      );
      // The ring's size follows the options as the engine resolved them: one place decides it.
      const slots = ringSlots(ds.options);
      reuse = keep && !ipc && kept?.fits(dir, slots) === true;
      if (!reuse) kept?.close();
      ring = reuse ? kept! : new SlotRing(dir, slots);
      kept = undefined;
      // A batch the client kept from the last dataset keeps its memory; its slot gets a new file.
      if (reuse) ring.renewHeld();
    } catch (err) {
      kept?.close();
      ring?.close();
      await ds?.close().catch(() => undefined);
      // The dataset failed, not the engine: the client may open another.
      this.send({ event: "failed", ...errorOf(err, "ERR_OPEN_FAILED") }, id);
      return;
    }
    const cur: Current = {
      id,
      ds,
      ring,
      snapshots: new Map([[0, { state: ds.state(), stats: ds.stats() }]]),
      acked: 0,
      stopped: false,
      streaming: Promise.resolve(),
    };
    this.current = cur;
    this.send(
      {
        event: "opened",
        protocol: PROTOCOL_VERSION,
        // Unknown until the epoch's end over table pages read lazily (Infinity): null, said so, not left to JSON.
        clips: Number.isFinite(ds.clipCount) ? ds.clipCount : null,
        total: Number.isFinite(ds.totalClips) ? ds.totalClips : null,
        slots: ring.files,
        ...(reuse ? { kept: true } : {}),
      },
      id,
    );
    cur.streaming = this.stream(cur, ipc);
  }

  private async stream(cur: Current, ipc: boolean): Promise<void> {
    const { ds, ring, id } = cur;
    let seq = 0;
    try {
      for await (const batch of ds) {
        if (cur.stopped) return;
        cur.snapshots.set(++seq, { state: ds.state(), stats: ds.stats() });
        const { layout } = batch;
        const gpuFrames = ipc ? deviceFramesOf(batch.decoded) : undefined;
        const frameBytes = gpuFrames ? packedBytes(gpuFrames[0]!) : 0;
        // Decoded in order into a lent slot: handed over as it lies, and let go when the client releases it.
        const inPlace = gpuFrames ? undefined : ring.handOver(layout.frames, layout.byteLength, () => batch.release());
        const slot = inPlace ?? (await ring.acquire(() => this.send({ event: "full", lent: ring.lentCount }, id)));
        if (cur.stopped || slot < 0) return;
        let placed: { capacity: number; handle?: string };
        if (inPlace !== undefined) placed = { capacity: ring.capacityOf(slot) };
        else {
          placed = gpuFrames
            ? await ring.writeDevice(slot, gpuFrames, frameBytes * gpuFrames.length)
            : { capacity: ring.write(slot, layout.frames, layout.byteLength) };
          // The frames are in the slot now: their memory carries the clips decoded next.
          batch.release();
        }
        // NVDEC's native surfaces (nv12, p010) are packed plane by plane: [B, T, bytes per frame].
        const shape =
          gpuFrames && gpuFrames[0]!.format !== "rgb24"
            ? [layout.shape[0]!, layout.shape[1]!, frameBytes]
            : [...layout.shape];
        this.send(
          {
            event: "batch",
            seq,
            slot,
            capacity: placed.capacity,
            bytes: gpuFrames ? frameBytes * gpuFrames.length : layout.byteLength,
            shape,
            dtype: layout.dtype,
            pixel_format: gpuFrames ? gpuFrames[0]!.format : layout.pixelFormat,
            // Where the clips were decoded, as batch.decoded says (a GPU's batch may come through host memory).
            device: gpuFrames ? gpuFrames[0]!.device : (batch.decoded[0]?.device ?? "cpu"),
            ...(placed.handle ? { ipc: placed.handle } : {}),
            clips: batch.clips.map((c) => ({ ...c })),
          },
          id,
        );
        // The next batch is pulled once a slot is free for the clips it starts decoding (or the
        // client, holding all it has, waits for it): a pipeline run ahead of the client would
        // decode into heap memory and copy.
        if (!gpuFrames) while (!cur.stopped && !ring.hasFree && cur.acked < seq) await ring.changed();
      }
      cur.snapshots.set(++seq, { state: ds.state(), stats: ds.stats() });
      this.send({ event: "end", seq }, id);
    } catch (err) {
      if (!cur.stopped) this.send({ event: "failed", ...errorOf(err, "ERR_STREAM_FAILED") }, id);
    }
  }

  /**
   * Closes the current dataset, if any. Its ring is kept for the next open once the stream has
   * wound down with every lent slot back (a decoder may still write into one that is not); else freed.
   */
  private async stop(): Promise<void> {
    const cur = this.current;
    this.current = undefined;
    if (!cur) return;
    cur.stopped = true;
    // Ending for good (the client is gone or said close): nothing is kept, nothing waited for.
    if (this.closed) cur.ring.close();
    else cur.ring.detach();
    try {
      await cur.ds.close();
    } catch {
      // Closing is best effort.
    }
    if (this.closed) return;
    let timer: NodeJS.Timeout | undefined;
    const ended = await Promise.race([
      cur.streaming.then(() => true),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), WIND_DOWN_MS))),
    ]);
    clearTimeout(timer);
    if (ended && !this.closed && cur.ring.fits(cur.ring.dir, cur.ring.files.length)) this.kept = cur.ring;
    else cur.ring.close();
  }

  private async shutdown(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.stop();
    this.kept?.close();
    this.kept = undefined;
    this.finish();
  }
}

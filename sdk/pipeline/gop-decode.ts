/**
 * GOP-coherent decode: clips of one GOP (exact starts, overlapping hops) are cut from one
 * pass of a decoder over that GOP instead of each decoding again from the keyframe.
 *
 * A run is one decoder positioned inside an object: it was fed samples from a keyframe up to
 * `next` (decode order) and holds the frames it already produced that a later clip of the run
 * may still need. A clip joins a run whose decoded range covers its keyframe and whose last
 * clip started before it; the run feeds only the samples the clip still lacks. Anything else
 * (another GOP, an earlier start after a resume, a failed run) starts a new run at the clip's
 * keyframe, so the frames are the same as a decode from the keyframe.
 */
import type { SampleTableV1, VideoTrackV1 } from "../../common/schema/index.js";
import type { DeviceFrame } from "../../native/index.js";
import { ClipError } from "../errors.js";
import type { DecodeSpan, FrameOrder } from "../sampler/frame-order.js";
import type { DecodedClip, DecodedFrame, Packet } from "./decode.js";
import type { Limiter } from "../../common/limiter.js";
import type { FrameTarget, SlotHold } from "./clip-slots.js";
import { releaseRead } from "../../common/read-pool.js";

/** The decoder settings a run is opened with. */
export interface RunConfig {
  readonly track: VideoTrackV1;
  readonly format: "rgb24" | "native";
  readonly size: readonly [number, number] | undefined;
  readonly device: string;
  readonly threads: number;
}

/** A decoded frame, with its GPU twin when the decode ran on a CUDA device. */
export interface RunFrame {
  readonly frame: DecodedFrame;
  readonly gpu?: DeviceFrame;
}

/** A decoder that continues one run of packets across calls. */
export interface RunDecoder {
  /** Where it decodes, e.g. "cpu" or "cuda:0". */
  readonly device: string;
  /** Set when it decodes on the CPU because the CUDA device asked for has no NVDEC for the codec. */
  readonly fallback?: DecodedClip["fallback"];
  /**
   * Feeds packets (decode order; the first of a run is a keyframe). Frames with pts below
   * `dropBefore` are decoded but not converted. `drain`: flush every frame out and end the run.
   * `recovering` (a run's first call only): the run starts at an H.264 recovery point, not an IDR.
   * `until` (not with `drain`): stop sending packets once a frame with pts ≥ it is out; `fed`
   * says how many went in (the rest are sent again by the next call).
   */
  feed(
    data: Uint8Array,
    packets: readonly Packet[],
    o: {
      dropBefore: number;
      drain: boolean;
      recovering?: boolean;
      into?: ReadonlyMap<number, Uint8Array>;
      until?: number;
    },
  ): Promise<{ frames: RunFrame[]; decoded: number; fed: number }>;
  /** Ends the decoder's use by this run: drained ones may be reused, others are closed. */
  release(drained: boolean): void;
}

export type OpenRunDecoder = (config: RunConfig) => Promise<RunDecoder>;

/** One clip to cut: which object, the frames it shows and the span it needs. */
export interface GopClipRequest {
  readonly object: number;
  readonly key: string;
  readonly config: RunConfig;
  readonly order: FrameOrder;
  /** Presentation indices of the clip's frames. */
  readonly frames: readonly number[];
  readonly span: DecodeSpan;
  /** The span's first sample is an H.264 recovery point, not an IDR (a run started there tolerates its leading pictures). */
  readonly recovering: boolean;
  /** Reads `length` bytes of the object at `offset`. */
  readonly read: (offset: number, length: number) => Promise<Uint8Array>;
  /** Later clips of the object start at least this many frames after this one (the plan's hop): earlier frames are not kept for them. */
  readonly hop?: number;
  /** Where each of the clip's frames (same order as `frames`) should be written; absent: wherever the decoder puts it. */
  readonly into?: readonly FrameTarget[];
  /** The clip's place in the delivery order: feeds wait for a decoder in this order (Limiter turns). */
  readonly turn?: number;
}

/**
 * Samples offered past a clip's last one, so frames still being reordered come out in the same
 * call; the decoder stops taking them once the last frame waited for is out (`until`).
 */
export const REORDER_SLACK = 2;

/** One past the last sample a run's feed from `next` for a clip ending at `endSample` offers (of `total`). */
function feedEnd(total: number, endSample: number, next: number): number {
  return Math.min(total, Math.max(endSample, next + 1) + REORDER_SLACK);
}

/** The byte range covering samples `from .. to - 1` (decode order), as one read. */
function sampleRange(samples: SampleTableV1, from: number, to: number): { offset: number; length: number } {
  let lo = Infinity;
  let hi = 0;
  for (let d = from; d < to; d++) {
    lo = Math.min(lo, samples.offset[d]!);
    hi = Math.max(hi, samples.offset[d]! + samples.size[d]!);
  }
  return to > from ? { offset: lo, length: hi - lo } : { offset: 0, length: 0 };
}

/**
 * The bytes a GOP run reads for a clip of `span`: its samples and the REORDER_SLACK ones past
 * them (a run's later clip reads from where the run is, inside this too). What the plan asks the
 * cache for, so that its prefetch, the local plane's batched locate and the reads cover the same
 * bytes.
 *
 * @example
 * const { offset, length } = runSpan(track.samples, decodeSpan(track.samples, order, frames));
 */
export function runSpan(samples: SampleTableV1, span: DecodeSpan): { offset: number; length: number } {
  return sampleRange(samples, span.firstSample, feedEnd(samples.pts.length, span.endSample, span.firstSample));
}

interface Run {
  readonly object: number;
  readonly configKey: string;
  readonly decoderKey: string;
  /** The keyframe (decode order) the run started at. */
  first: number;
  /** One past the last sample the run's clips so far need (their spans' ends). */
  plannedEnd: number;
  /** Presentation index of the last clip assigned: later clips start after it. */
  lastStart: number;
  /** Clips assigned and not yet served: the run's decode calls happen one at a time, in order. */
  lane: Promise<unknown>;
  lastUse: number;
  state: RunState | undefined;
  /** Where frames of the clips assigned and not yet served go, by pts (the first clip to ask for a pts wins). */
  readonly targets: Map<number, FrameTarget>;
}

/** A frame the run keeps, and the slot group it lies in (held while the run keeps it). */
interface HeldFrame {
  readonly frame: RunFrame;
  readonly group: SlotHold | undefined;
}

interface RunState {
  /** Absent once drained: the run's last frames are all held. */
  decoder: RunDecoder | undefined;
  readonly device: string;
  readonly fallback: DecodedClip["fallback"];
  /** Next sample (decode order) to feed. */
  next: number;
  /** The first feed still to come starts at a recovery point. */
  recovering: boolean;
  drained: boolean;
  /** Frames come out in presentation order: none at or below this pts will come out again. */
  outputUpTo: number;
  /** Frames produced and not yet known to be unneeded, by pts. */
  readonly held: Map<number, HeldFrame>;
}

/** Lets go of a frame the run no longer keeps. */
function unhold(h: HeldFrame | undefined): void {
  h?.group?.release();
}

/** Drops a run's decoder state: every frame it keeps is let go. */
function dropHeld(st: RunState | undefined): void {
  if (!st) return;
  for (const h of st.held.values()) unhold(h);
  st.held.clear();
}

function configKey(c: RunConfig): string {
  return [c.track.codec, c.track.width, c.track.height, c.format, c.size?.join("x") ?? "", c.device, c.threads].join(
    "|",
  );
}

/** What a decoder is opened with: a drained one serves any run of the same key (extradata included). */
function decoderKey(c: RunConfig): string {
  return `${configKey(c)}|${Buffer.from(c.track.extradata).toString("base64")}`;
}

/**
 * Serves clips from GOP runs, at most `maxRuns` at once (the least recently used one is
 * closed for a new one). Memory: per run, one decoder's reference frames plus the frames it
 * holds for later clips of the run, at most one clip span plus the reorder slack at output size.
 *
 * @example
 * const gops = new GopDecoder(openRun, slots, 16, (n) => (decodedFrames += n));
 * const clip = await gops.clip({ object, key, config, order, frames, span, recovering: false, read });
 */
export class GopDecoder {
  private readonly runs: Run[] = [];
  private uses = 0;
  /**
   * Decoders of retired runs, drained (undefined: the drain failed), by decoder key, oldest
   * first: the next run of that key takes one instead of opening a codec (a new run usually
   * starts the moment an old one is retired, before the pool has the old one's decoder back).
   */
  private readonly spares = new Map<string, Promise<RunDecoder | undefined>[]>();
  private spareCount = 0;

  constructor(
    private readonly open: OpenRunDecoder,
    private readonly slots: Limiter,
    private readonly maxRuns: number,
    private readonly onDecoded: (frames: number, bytes: number) => void,
  ) {}

  /** Decodes one clip; assignment to a run happens now, so calls are served in call order. */
  clip(req: GopClipRequest): Promise<DecodedClip> {
    const run = this.assign(req);
    const mine = this.target(run, req);
    const served = run.lane
      .then(() => this.serve(run, req))
      .finally(() => {
        // Its slot may be reused once the clip settles: no later feed may write there.
        for (const [pts, t] of mine) if (run.targets.get(pts) === t) run.targets.delete(pts);
      });
    run.lane = served.catch(() => undefined);
    return served;
  }

  /** Registers where the clip's frames go, for every feed of the run from now on; returns what it registered. */
  private target(run: Run, req: GopClipRequest): Map<number, FrameTarget> {
    const mine = new Map<number, FrameTarget>();
    if (!req.into) return mine;
    const { samples } = req.config.track;
    req.frames.forEach((f, i) => {
      const pts = samples.pts[req.order.decodeOf[f]!]!;
      const t = req.into![i];
      if (t && !run.targets.has(pts)) {
        run.targets.set(pts, t);
        mine.set(pts, t);
      }
    });
    return mine;
  }

  private assign(req: GopClipRequest): Run {
    const key = configKey(req.config);
    const start = req.frames[0]!;
    const { firstSample, endSample } = req.span;
    // Of the runs that can serve it, the one furthest along has the fewest samples left to feed.
    let run: Run | undefined;
    for (const r of this.runs) {
      if (
        r.object !== req.object ||
        r.configKey !== key ||
        r.first > firstSample ||
        firstSample >= r.plannedEnd ||
        start <= r.lastStart
      )
        continue;
      if (!run || r.plannedEnd > run.plannedEnd) run = r;
    }
    if (!run) {
      if (this.runs.length >= this.maxRuns) {
        let lru = 0;
        for (let i = 1; i < this.runs.length; i++) if (this.runs[i]!.lastUse < this.runs[lru]!.lastUse) lru = i;
        const [old] = this.runs.splice(lru, 1);
        this.spare(
          old!.decoderKey,
          old!.lane.then(() => this.retire(old!)),
        );
      }
      run = {
        object: req.object,
        configKey: key,
        decoderKey: decoderKey(req.config),
        first: firstSample,
        plannedEnd: endSample,
        lastStart: -1,
        lane: Promise.resolve(),
        lastUse: 0,
        state: undefined,
        targets: new Map(),
      };
      this.runs.push(run);
    }
    run.plannedEnd = Math.max(run.plannedEnd, endSample);
    run.lastStart = start;
    run.lastUse = ++this.uses;
    return run;
  }

  /** Closes every run once its clips are served (the stream ended). */
  async close(): Promise<void> {
    const runs = this.runs.splice(0);
    const spares = [...this.spares.values()].flat();
    this.spares.clear();
    this.spareCount = 0;
    const drained = await Promise.all([...spares, ...runs.map((r) => r.lane.then(() => this.retire(r)))]);
    for (const d of drained) d?.release(true);
  }

  /**
   * Ends a run: its decoder is drained (frames dropped unconverted, but decoded: they count);
   * resolves to it, or undefined.
   */
  private retire(run: Run): Promise<RunDecoder | undefined> {
    const decoder = run.state?.decoder;
    dropHeld(run.state);
    run.state = undefined;
    if (!decoder) return Promise.resolve(undefined);
    // Ahead of every clip: the run that replaces this one may wait for its decoder.
    return this.slots
      .run(
        () => decoder.feed(new Uint8Array(0), [], { dropBefore: Number.MAX_SAFE_INTEGER, drain: true }),
        Number.NEGATIVE_INFINITY,
      )
      .then(
        (out) => {
          this.onDecoded(out.decoded, 0);
          return decoder;
        },
        () => {
          decoder.release(false);
          return undefined;
        },
      );
  }

  /**
   * Keeps a retired run's decoder for the next run of its key, registered now (before the run's
   * last clip is served) so the run that replaces it finds it; beyond `maxRuns` spares the
   * oldest goes back to the pool.
   */
  private spare(key: string, decoder: Promise<RunDecoder | undefined>): void {
    const list = this.spares.get(key) ?? [];
    list.push(decoder);
    this.spares.set(key, list);
    if (++this.spareCount > this.maxRuns) this.dropOldestSpare();
  }

  private dropOldestSpare(): void {
    const [key, list] = this.spares.entries().next().value!;
    void list.shift()!.then((d) => d?.release(true));
    if (list.length === 0) this.spares.delete(key);
    this.spareCount--;
  }

  /** A retired run's drained decoder of this key, else a newly opened one. */
  private async decoderFor(config: RunConfig, key: string): Promise<RunDecoder> {
    const list = this.spares.get(key);
    while (list && list.length > 0) {
      const spare = list.shift()!;
      this.spareCount--;
      if (list.length === 0) this.spares.delete(key);
      const d = await spare;
      if (d) return d;
    }
    return this.open(config);
  }

  private async serve(run: Run, req: GopClipRequest): Promise<DecodedClip> {
    const samples = req.config.track.samples;
    const total = samples.pts.length;
    const keep = req.frames.map((f) => samples.pts[req.order.decodeOf[f]!]!);
    const dropBefore = Math.min(...keep);
    try {
      let st = run.state;
      // A run that cannot give every frame any more (drained, or already past one) restarts at the keyframe.
      if (st && keep.some((p) => !st!.held.has(p) && (st!.drained || p <= st!.outputUpTo))) {
        this.spare(run.decoderKey, this.retire(run));
        st = undefined;
      }
      if (!st) {
        const decoder = await this.decoderFor(req.config, run.decoderKey);
        st = {
          decoder,
          device: decoder.device,
          fallback: decoder.fallback,
          next: req.span.firstSample,
          recovering: req.recovering,
          drained: false,
          outputUpTo: -Infinity,
          held: new Map(),
        };
        run.state = st;
        run.first = req.span.firstSample;
      }
      while (keep.some((p) => !st!.held.has(p))) {
        if (st.drained)
          throw new ClipError(
            "ERR_DECODE_SHORT",
            req.key,
            `Expected ${keep.length} frames from ${req.frames[0]} but the decoder returned ${keep.filter((p) => st!.held.has(p)).length}`,
          );
        const to = feedEnd(total, req.span.endSample, st.next);
        await this.feed(run, st, req, to, dropBefore, Math.max(...keep));
      }
      const held = keep.map((p, i) => this.intoSlot(st!, p, req.into?.[i]));
      const frames = held.map((h) => h.frame);
      // The clip holds every group its frames lie in until it is done with (its own slot's, or another clip's).
      const holds = [...new Set(held.flatMap((h) => (h.group ? [h.group] : [])))];
      for (const g of holds) g.hold();
      // Later clips of the run start after this one, `hop` frames on at least: nothing before that is needed again
      // (and the slots those frames lie in are free to be reused once their batches are released).
      const next = req.frames[0]! + (req.hop ?? 1);
      const cut = next < total ? samples.pts[req.order.decodeOf[next]!]! : Infinity;
      for (const [pts, h] of st.held)
        if (pts <= dropBefore || pts < cut) {
          st.held.delete(pts);
          unhold(h);
        }
      const gpuFrames = frames.flatMap((f) => (f.gpu ? [f.gpu] : []));
      return {
        frames: frames.map((f) => f.frame),
        ...(holds.length > 0 ? { holds } : {}),
        device: st.device,
        ...(gpuFrames.length > 0 ? { gpuFrames } : {}),
        ...(st.fallback ? { fallback: st.fallback } : {}),
      };
    } catch (err) {
      // The decoder's state is unknown after a failure: the next clip of the run starts afresh.
      run.state?.decoder?.release(false);
      dropHeld(run.state);
      run.state = undefined;
      throw err;
    }
  }

  /**
   * The held frame at `pts`, moved into the clip's slot `t` when it came out before the clip was
   * assigned (the reorder slack of an earlier clip's feed): one copy, so the batch stays a view.
   */
  private intoSlot(st: RunState, pts: number, t: FrameTarget | undefined): HeldFrame {
    const h = st.held.get(pts)!;
    const d = h.frame.frame.data;
    if (!t || h.group || h.frame.gpu || d.byteLength !== t.view.byteLength) return h;
    t.view.set(d);
    t.group.hold();
    const moved: HeldFrame = { frame: { frame: { ...h.frame.frame, data: t.view } }, group: t.group };
    st.held.set(pts, moved);
    unhold(h);
    return moved;
  }

  /**
   * Feeds samples `next .. to - 1`, stopping once the frame at pts `until` (the highest the run's
   * clips so far wait for) is out, so no sample past it is decoded before a clip needs it; at
   * the track's end the decoder is drained.
   */
  private async feed(
    run: Run,
    st: RunState,
    req: GopClipRequest,
    to: number,
    dropBefore: number,
    until: number,
  ): Promise<void> {
    const samples = req.config.track.samples;
    const total = samples.pts.length;
    const { offset: lo, length } = sampleRange(samples, st.next, to);
    const data = to > st.next ? await req.read(lo, length) : new Uint8Array(0);
    if (data.length !== length)
      throw new ClipError("ERR_SHORT_READ", req.key, `Expected ${length} bytes at ${lo} but received ${data.length}`);
    const packets: Packet[] = [];
    for (let d = st.next; d < to; d++) {
      packets.push({
        offset: samples.offset[d]! - lo,
        size: samples.size[d]!,
        pts: samples.pts[d]!,
        dts: samples.dts[d]!,
        keyframe: samples.keyframe[d] === 1,
      });
    }
    const drain = to >= total;
    const decoder = st.decoder!;
    const recovering = st.recovering;
    st.recovering = false;
    // Frames of the run's waiting clips go straight to their slots (none already held is decoded
    // again), up to the last one this clip waits for: a later clip's slot memory is taken when that
    // clip's feed comes, not while it waits behind this one (its frames the reorder slack shows
    // now are held and copied in then, a frame or two).
    const targets = new Map<number, FrameTarget>();
    // Frames the run's waiting clips want may come out in this call too, straight into their slots.
    let stop = until;
    for (const [pts, t] of run.targets) {
      if (pts < dropBefore || st.held.has(pts)) continue;
      stop = Math.max(stop, pts);
      if (pts <= until) targets.set(pts, t);
    }
    // The decoder copies every packet in: once the feed settles nothing points into `data`.
    const out = await this.slots
      .run(
        () =>
          decoder.feed(data, packets, {
            dropBefore,
            drain,
            recovering,
            // Read once a decoder is free: runs waiting for one take no slot memory yet.
            ...(targets.size > 0 ? { into: new Map([...targets].map(([pts, t]) => [pts, t.view] as const)) } : {}),
            ...(drain ? {} : { until: stop }),
          }),
        req.turn,
      )
      .finally(() => releaseRead(data));
    let bytes = 0;
    for (let d = st.next; d < st.next + out.fed; d++) bytes += samples.size[d]!;
    st.next += out.fed;
    if (drain) {
      // Every frame is out: the decoder can serve another run while this one lives on its held frames.
      this.spare(run.decoderKey, Promise.resolve(decoder));
      st.decoder = undefined;
      st.drained = true;
    }
    // Frames below dropBefore came out dropped; later ones are kept.
    st.outputUpTo = Math.max(st.outputUpTo, dropBefore - 1);
    for (const f of out.frames) {
      const t = targets.get(f.frame.pts);
      const d = f.frame.data;
      // In its slot only where the decoder could use the region (same size, a host frame).
      const group = t && d.buffer === t.view.buffer && d.byteOffset === t.view.byteOffset ? t.group : undefined;
      group?.hold();
      unhold(st.held.get(f.frame.pts));
      st.held.set(f.frame.pts, { frame: f, group });
      st.outputUpTo = Math.max(st.outputUpTo, f.frame.pts);
    }
    this.onDecoded(out.decoded, bytes);
  }
}

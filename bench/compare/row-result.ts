/** What a row's child process prints as its last stdout line, and the clip list rows share. */

/** One clip as every row addresses it: the object, where it starts, how many frames. */
export interface ClipRef {
  readonly key: string;
  /** Presentation index of the first frame. */
  readonly start: number;
  /** Presentation time of the first frame, in seconds (what seeking decoders take). */
  readonly startSeconds: number;
  readonly frames: number;
  readonly stride: number;
}

/** A row child's own account of its run. */
export interface ChildReport {
  readonly clips: number;
  readonly frames: number;
  /** Wall seconds from the loader's creation to its last batch (imports and process start excluded). */
  readonly seconds: number;
  /** Wall seconds from the loader's creation to its first batch. */
  readonly firstBatchSeconds: number;
  /** Time the consumer waited for batches over `seconds`. */
  readonly stallRatio: number;
  /** Bytes the loader says it fetched; rows that cannot tell leave it out and the WAN counter is used. */
  readonly bytesFetched?: number;
  /** Bytes of GOPs the clips needed (keyframe to last sample), as ec's stats count them. */
  readonly bytesNeeded?: number;
  /** CPU seconds of the process and the children it waited for, from the loader's creation (imports excluded). */
  readonly cpuSeconds: number;
  /** Minor page faults of the process and its waited-for children over the same span as `cpuSeconds`. */
  readonly minorFaults?: number;
  /** The clips delivered, in order (rows that decode ec's clip list echo it). */
  readonly clipList?: readonly ClipRef[];
  readonly device?: string;
  /** CPU seconds the Python client itself spent (the ec from PyTorch row): the bridge's cost, the engine's excluded. */
  readonly bridgeCpuSeconds?: number;
  readonly errors?: Readonly<Record<string, number>>;
}

/** Writes the report as the last stdout line. */
export function emitReport(report: ChildReport): void {
  process.stdout.write(`\n${JSON.stringify(report)}\n`);
}

/** Reads a child's last non-empty stdout line as its report. */
export function parseReport(stdout: string): ChildReport {
  const line = stdout.trimEnd().split("\n").pop() ?? "";
  return JSON.parse(line) as ChildReport;
}

/**
 * Times a consumer loop the way ec's stats do: wait time is from asking for a batch to
 * getting it; `stepMs` of simulated training (a sleep: GPU work leaves the CPU free) follows each.
 */
export class ConsumerClock {
  readonly t0 = performance.now();
  private waited = 0;
  private asked = 0;
  first: number | undefined;

  ask(): void {
    this.asked = performance.now();
  }
  got(): void {
    const now = performance.now();
    this.waited += now - this.asked;
    this.first ??= now - this.t0;
  }
  done(): { seconds: number; firstBatchSeconds: number; stallRatio: number } {
    const wall = performance.now() - this.t0;
    return {
      seconds: wall / 1000,
      firstBatchSeconds: (this.first ?? wall) / 1000,
      stallRatio: wall > 0 ? Math.min(1, this.waited / wall) : 0,
    };
  }
}

/**
 * What both `ec push` commands (to the edge, push.ts; to a bucket, push-s3.ts) share: the check
 * of DIR and the summary printed at the end.
 */
import { stat } from "node:fs/promises";
import { describeReceived } from "../../common/errors.js";
import { InvalidOptionError } from "../errors.js";

/** Refuses a DIR that is not a directory, before any upload. */
export async function expectDirectory(dir: string): Promise<void> {
  const info = await stat(dir).catch(() => undefined);
  if (!info?.isDirectory())
    throw new InvalidOptionError(`Expected a directory for DIR but received ${describeReceived(dir)}`);
}

/** What a push's summary holds, to the edge or to a bucket. */
interface PushedSummary {
  readonly bytes: number;
  readonly seconds: number;
  readonly failed: number;
  readonly pushed: readonly unknown[];
  readonly errors: readonly { key: string; code: string; message: string }[];
}

/**
 * Prints a push's summary on stdout: one JSON line without the per-file list, or each failure
 * on stderr and one sentence, `pushed FILES, … MB to TARGET in … s (… MB/s)`. Returns the exit
 * status: 1 where a file failed.
 *
 * @example
 * return reportPush(summary, values.json, `${summary.files} files`, summary.target);
 */
export function reportPush(summary: PushedSummary, json: boolean, files: string, target: string): number {
  if (json) {
    const { pushed: _pushed, ...line } = summary;
    process.stdout.write(`${JSON.stringify(line)}\n`);
  } else {
    for (const e of summary.errors) process.stderr.write(`failed ${e.key}: [${e.code}] ${e.message}\n`);
    const rate = summary.seconds > 0 ? summary.bytes / 1e6 / summary.seconds : 0;
    process.stdout.write(
      `pushed ${files}, ${(summary.bytes / 1e6).toFixed(1)} MB to ${target} in ${summary.seconds.toFixed(2)} s (${rate.toFixed(1)} MB/s)` +
        (summary.failed ? `; ${summary.failed} failed` : "") +
        "\n",
    );
  }
  return summary.failed > 0 ? 1 : 0;
}

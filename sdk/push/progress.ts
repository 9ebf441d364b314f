/** The progress bar of `ec push` (drawn only on a terminal). */
import cliProgress from "cli-progress";
import type { PushHooks } from "./run-push.js";

/** A progress bar over the bytes of a push (drawn only on a terminal). */
export function pushProgress(
  totalBytes: number,
  totalFiles: number,
): {
  onProgress: NonNullable<PushHooks["onProgress"]>;
  stop(): void;
} {
  const bar = new cliProgress.SingleBar(
    {
      stream: process.stderr,
      format: "push |{bar}| {percentage}% | {mb}/{totalMb} MB | {files}/{totalFiles} files",
      hideCursor: true,
    },
    cliProgress.Presets.shades_classic,
  );
  let bytes = 0;
  let files = 0;
  const mb = (n: number) => (n / 1e6).toFixed(1);
  const payload = () => ({ mb: mb(bytes), totalMb: mb(totalBytes), files, totalFiles });
  bar.start(Math.max(1, totalBytes), 0, payload());
  return {
    onProgress(event) {
      if ("bytes" in event) bytes += event.bytes;
      else files++;
      bar.update(bytes, payload());
    },
    stop: () => bar.stop(),
  };
}

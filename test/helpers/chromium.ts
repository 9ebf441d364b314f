import { execFile, spawnSync } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/** Debian's chromium, installed here when missing and we are root; undefined when it cannot be had. */
export function findChromium(): string | undefined {
  const has = () => spawnSync("sh", ["-c", "command -v chromium"], { encoding: "utf8" }).stdout.trim() || undefined;
  if (has()) return has();
  if (process.getuid?.() !== 0) return undefined;
  spawnSync("apt-get", ["install", "-y", "-qq", "chromium"], {
    stdio: "ignore",
    env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
    timeout: 600_000,
  });
  return has();
}

/**
 * Loads a local HTML file in headless Chromium (no network, a profile under `dir`) and returns
 * the DOM as it stands after the page loaded, with Chromium's log.
 *
 * @example
 * const { stdout } = await dumpDom(chromium, report, dir);
 */
export async function dumpDom(
  chromium: string,
  file: string,
  dir: string,
): Promise<{ stdout: string; stderr: string }> {
  return run(
    chromium,
    [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
      "--enable-logging=stderr",
      "--v=0",
      `--user-data-dir=${join(dir, "chrome")}`,
      "--dump-dom",
      `file://${file}`,
    ],
    { timeout: 90_000, maxBuffer: 16 << 20 },
  );
}

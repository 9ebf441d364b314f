import { vi } from "vitest";

/**
 * Runs an in-process CLI `main` with stdout and stderr captured, restoring both afterwards.
 *
 * @example
 * const { code, out } = await captureOutput(() => main([url, "--json"]));
 */
export async function captureOutput(run: () => Promise<number>): Promise<{ code: number; out: string; err: string }> {
  let out = "";
  let err = "";
  const o = vi
    .spyOn(process.stdout, "write")
    .mockImplementation((c: string | Uint8Array) => ((out += String(c)), true));
  const e = vi
    .spyOn(process.stderr, "write")
    .mockImplementation((c: string | Uint8Array) => ((err += String(c)), true));
  try {
    return { code: await run(), out, err };
  } finally {
    o.mockRestore();
    e.mockRestore();
  }
}

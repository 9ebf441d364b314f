import { open } from "node:fs/promises";
import type { RangeReader } from "../../common/media-index/index.js";

/** A RangeReader over a local file that records every range it was asked for. */
export async function fileReader(path: string): Promise<RangeReader & { requests: { offset: number; length: number }[]; close(): Promise<void> }> {
  const handle = await open(path, "r");
  const { size } = await handle.stat();
  const requests: { offset: number; length: number }[] = [];
  return {
    size,
    requests,
    async read(offset, length) {
      requests.push({ offset, length });
      const buf = new Uint8Array(length);
      const { bytesRead } = await handle.read(buf, 0, length, offset);
      return buf.subarray(0, bytesRead);
    },
    close: () => handle.close(),
  };
}

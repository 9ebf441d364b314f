import { open } from "node:fs/promises";
import { buildIndex, type RangeReader } from "../../common/media-index/index.js";
import type { IndexV1 } from "../../common/schema/index.js";

/** A RangeReader over a local file that records every range it was asked for. */
export async function fileReader(
  path: string,
): Promise<RangeReader & { requests: { offset: number; length: number }[]; close(): Promise<void> }> {
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

/**
 * The index of a local file as the edge would build it, and the ranges that cost.
 *
 * @example
 * const { index, requests } = await indexLocalFile("/tmp/a.mkv", "a.mkv");
 */
export async function indexLocalFile(
  path: string,
  key: string,
): Promise<{ index: IndexV1; requests: { offset: number; length: number }[] }> {
  const reader = await fileReader(path);
  try {
    return { index: await buildIndex(reader, { key, etag: "e" }), requests: reader.requests };
  } finally {
    await reader.close();
  }
}

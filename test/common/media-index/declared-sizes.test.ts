/**
 * Declared sizes never size a read or a table past the memory of one index build
 * (INDEX_MEMORY_BYTES): crafted files, written by the test, whose element sizes, header
 * lengths, access units and sample counts lie. Each is an error record, and no read is larger
 * than a quarter of the budget.
 */
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildIndex, bytesReader, INDEX_MEMORY_BYTES, type RangeReader } from "../../../common/media-index/index.js";
import { npyLongHeader, tsEndlessAccessUnit, webmHugeTimestamp, webmTinyBlocks } from "../../helpers/hostile-media.js";

const MAX_READ = INDEX_MEMORY_BYTES / 4;

/** A reader over `bytes` that remembers its largest read. */
function recording(bytes: Uint8Array): RangeReader & { largest: number } {
  const inner = bytesReader(bytes);
  const r = {
    size: inner.size,
    largest: 0,
    read: (offset: number, length: number) => {
      r.largest = Math.max(r.largest, length);
      return inner.read(offset, length);
    },
  };
  return r;
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-declared-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("declared sizes are bounded before anything is read or allocated", () => {
  it("a Matroska Cluster Timestamp declaring 20 MiB is corrupt, and never read", async () => {
    const reader = recording(webmHugeTimestamp(20 << 20, 21 << 20));
    const index = await buildIndex(reader, { key: "t.webm", etag: "x" });
    expect(index).toMatchObject({ kind: "error", error: { code: "ERR_CORRUPT_MEDIA" } });
    expect(index.error!.message).toMatch(/Timestamp at byte \d+ of 20971520 bytes/);
    expect(reader.largest).toBeLessThanOrEqual(MAX_READ);
  });

  it("an MPEG-TS access unit with no next PES start is ERR_INDEX_MEMORY_LIMIT, not the object held whole", async () => {
    const reader = recording(tsEndlessAccessUnit(12 << 20));
    const index = await buildIndex(reader, { key: "a.ts", etag: "x" });
    expect(index).toMatchObject({ kind: "error", error: { code: "ERR_INDEX_MEMORY_LIMIT" } });
    expect(index.error!.message).toMatch(/access unit at byte 376 of PID 256 runs past 4194304 bytes/);
    expect(reader.largest).toBeLessThanOrEqual(MAX_READ);
  });

  it("an .npy v2 header length of 20 MiB is corrupt, and never read", async () => {
    const reader = recording(npyLongHeader(20 << 20));
    const index = await buildIndex(reader, { key: "a.npy", etag: "x" });
    expect(index).toMatchObject({ kind: "error", error: { code: "ERR_CORRUPT_MEDIA" } });
    expect(index.error!.message).toMatch(/header declares 20971520 bytes/);
    expect(reader.largest).toBeLessThan(1 << 20);
  });

  it("a read past a quarter of the budget is refused whatever the format asks (an MP4 moov of 9 MiB)", async () => {
    // ftyp, then a moov box whose header declares 9 MiB: the walk finds it, the read of it is refused.
    const size = 9 << 20;
    const bytes = new Uint8Array(16 + size);
    bytes.set([0, 0, 0, 16, ...new TextEncoder().encode("ftypisom"), 0, 0, 2, 0], 0);
    new DataView(bytes.buffer).setUint32(16, size);
    bytes.set(new TextEncoder().encode("moov"), 20);
    const reader = recording(bytes);
    const index = await buildIndex(reader, { key: "a.mp4", etag: "x" });
    expect(index).toMatchObject({ kind: "error", error: { code: "ERR_INDEX_MEMORY_LIMIT" } });
    expect(reader.largest).toBeLessThanOrEqual(MAX_READ);
  });
});

describe("the samples one build holds are bounded by its memory, whatever the file counts", () => {
  it("a WebM of 200,000 one-byte blocks (1.4 MB) is ERR_INDEX_MEMORY_LIMIT at 32 MiB, indexed with more", async () => {
    const bytes = webmTinyBlocks(200_000);
    const index = await buildIndex(bytesReader(bytes), { key: "tiny.webm", etag: "x" });
    expect(index).toMatchObject({ kind: "error", error: { code: "ERR_INDEX_MEMORY_LIMIT" } });
    expect(index.error!.message).toMatch(/more than 174762 video blocks, past the 32 MiB one index build may hold/);
    const roomy = await buildIndex(bytesReader(bytes), { key: "tiny.webm", etag: "x", memoryBytes: 64 << 20 });
    expect(roomy.video?.frameCount).toBe(200_000);
  });

  it("an MP4 of 90,000 samples is ERR_INDEX_MEMORY_LIMIT at 32 MiB (mp4box holds an object per sample)", async () => {
    const file = join(dir, "long.mp4");
    await promisify(execFile)("ffmpeg", [
      ...["-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "color=c=gray:s=16x16:r=1000"],
      ...["-t", "90", "-c:v", "libx264", "-preset", "ultrafast", "-g", "1000", file],
    ]);
    const bytes = new Uint8Array(await readFile(file));
    const index = await buildIndex(bytesReader(bytes), { key: "long.mp4", etag: "x" });
    expect(index).toMatchObject({ kind: "error", error: { code: "ERR_INDEX_MEMORY_LIMIT" } });
    expect(index.error!.message).toMatch(/stsz declares 90000 samples after 0 in this file; at most 87381/);
    const roomy = await buildIndex(bytesReader(bytes), { key: "long.mp4", etag: "x", memoryBytes: 64 << 20 });
    expect(roomy.video?.frameCount).toBe(90_000);
  });
});

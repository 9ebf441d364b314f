/**
 * The direct-bucket source builds indexes with the edge's cap on range reads: an MP4 of many
 * tiny top-level boxes past the head read costs one ranged GET per box, and without the cap
 * open() effectively hangs on it.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_INDEX_READS } from "../../../../common/media-index/index.js";
import { openS3Source } from "../../../../sdk/source/s3/index.js";
import { listedObjects } from "../../../../sdk/source/source.js";
import { makeVideo } from "../../../helpers/make-video.js";
import { startS3Server, type S3TestServer } from "../../../helpers/s3-server.js";

let s3: S3TestServer;
let dir: string;

/** An ISO BMFF `free` box of `size` bytes. */
function free(size: number): Uint8Array {
  const box = new Uint8Array(size);
  new DataView(box.buffer).setUint32(0, size);
  box.set(new TextEncoder().encode("free"), 4);
  return box;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-s3-reads-"));
  s3 = await startS3Server();
  const video = await readFile(
    await makeVideo(dir, { codec: "h264", width: 64, height: 48, frames: 12, faststart: true }),
  );
  // The video, a box that steps past the 64 KiB head read, then 2,000 eight-byte boxes.
  const parts = [video, free(70_000), ...Array.from({ length: 2000 }, () => free(8))];
  await s3.put("boxes/many.mp4", Buffer.concat(parts));
});

afterAll(async () => {
  await s3?.close();
  await rm(dir, { recursive: true, force: true });
});

describe("S3Source index builds", () => {
  it("stop at the edge's cap of range reads: an ERR_HEADER_TOO_LARGE record, not 2,000 GETs", async () => {
    const source = await openS3Source(
      new URL(`s3://${s3.bucket}/boxes`),
      {
        endpoint: s3.endpoint,
        region: s3.region,
        credentials: s3.credentials,
        indexCacheDir: join(dir, "index-cache"),
      },
      {},
    );
    try {
      const [object] = listedObjects((await source.list()).objects);
      const index = await source.index(object!);
      expect(index).toMatchObject({ kind: "error", error: { code: "ERR_HEADER_TOO_LARGE" } });
      expect(source.counters().indexRequests).toBeLessThanOrEqual(MAX_INDEX_READS);
    } finally {
      await source.close();
    }
  });
});

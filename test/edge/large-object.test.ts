import { describe, expect, it } from "vitest";
import { get, put } from "./helpers.js";

const MiB = 1024 * 1024;
const SIZE = 65 * MiB + 12_345; // over 64 MiB, and not a whole number of chunks
const CHUNK = MiB;

/** Chunk `i` of the generated object: cheap to recompute, different at every offset. */
function chunkAt(i: number): Uint8Array {
  const n = Math.min(CHUNK, SIZE - i * CHUNK);
  const out = new Uint8Array(n);
  const words = new Uint32Array(out.buffer, 0, n >>> 2);
  for (let w = 0; w < words.length; w++) words[w] = (i * CHUNK + w * 4) ^ 0x9e3779b9;
  for (let b = words.length * 4; b < n; b++) out[b] = b & 0xff;
  return out;
}

function hex(buf: ArrayBuffer): string {
  return [...new Uint8Array(buf)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** The object as a stream, hashed as it is generated; only one chunk exists at a time. */
function generated(): { stream: ReadableStream<Uint8Array>; sha256: Promise<string> } {
  const digest = new crypto.DigestStream("SHA-256");
  const writer = digest.getWriter();
  let i = 0;
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (i * CHUNK >= SIZE) {
        await writer.close();
        controller.close();
        return;
      }
      const chunk = chunkAt(i++);
      await writer.write(chunk.slice());
      controller.enqueue(chunk);
    },
  });
  return { stream, sha256: digest.digest.then(hex) };
}

async function sha256Of(body: ReadableStream<Uint8Array>): Promise<string> {
  const digest = new crypto.DigestStream("SHA-256");
  await body.pipeTo(digest);
  return hex(await digest.digest);
}

describe("an object over 64 MiB", () => {
  it("streams through PUT and GET byte-exact, and its tail range is exact", { timeout: 120_000 }, async () => {
    const { stream, sha256 } = generated();
    const fixed = new FixedLengthStream(SIZE);
    const pump = stream.pipeTo(fixed.writable);
    const res = await put("large/65mib.bin", fixed.readable);
    await pump;
    expect(res.status).toBe(201);
    expect(((await res.json()) as { size: number }).size).toBe(SIZE);

    const full = await get("large/65mib.bin");
    expect(full.status).toBe(200);
    expect(full.headers.get("content-length")).toBe(String(SIZE));
    expect(await sha256Of(full.body!)).toBe(await sha256);

    // The last 1000 bytes straddle nothing but the partial last chunk; compare them exactly.
    const tail = await get("large/65mib.bin", { range: "bytes=-1000" });
    expect(tail.status).toBe(206);
    expect(tail.headers.get("content-range")).toBe(`bytes ${SIZE - 1000}-${SIZE - 1}/${SIZE}`);
    const last = chunkAt(Math.floor((SIZE - 1) / CHUNK));
    expect(new Uint8Array(await tail.arrayBuffer())).toEqual(last.slice(last.byteLength - 1000));

    // A range across a chunk boundary, deep in the object.
    const at = 40 * CHUNK - 10;
    const mid = await get("large/65mib.bin", { range: `bytes=${at}-${at + 19}` });
    const expected = new Uint8Array([...chunkAt(39).slice(CHUNK - 10), ...chunkAt(40).slice(0, 10)]);
    expect(new Uint8Array(await mid.arrayBuffer())).toEqual(expected);
  });
});

import { copyFile, mkdtemp, readFile, rm, stat, truncate, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildIndex, decodeIndex, encodeIndex, type RangeReader } from "../../../common/media-index/index.js";
import type { IndexV1 } from "../../../common/schema/index.js";
import { fileReader } from "../../helpers/file-reader.js";
import { makeImage, makeNpy, makeVideo, probePackets, type MakeVideoOptions } from "../../helpers/make-video.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-index-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function indexFile(path: string, key = path.slice(path.lastIndexOf("/") + 1)) {
  const reader = await fileReader(path);
  try {
    const index = await buildIndex(reader, { key, etag: "e1" });
    return { index, requests: reader.requests };
  } finally {
    await reader.close();
  }
}

async function expectMatchesFfprobe(path: string, index: IndexV1) {
  const packets = await probePackets(path);
  expect(index.kind).toBe("video");
  const s = index.video!.samples;
  expect(s.offset.length).toBe(packets.length);
  expect(Array.from(s.offset)).toEqual(packets.map((p) => p.pos));
  expect(Array.from(s.size)).toEqual(packets.map((p) => p.size));
  expect(Array.from(s.keyframe, (k) => k === 1)).toEqual(packets.map((p) => p.keyframe));
  expect(Array.from(s.pts)).toEqual(packets.map((p) => p.pts));
  expect(Array.from(s.dts)).toEqual(packets.map((p) => p.dts));
  // The encoded form carries the same table.
  const decoded = decodeIndex(encodeIndex(index));
  expect(Array.from(decoded.video!.samples.offset)).toEqual(Array.from(s.offset));
  expect(Array.from(decoded.video!.extradata)).toEqual(Array.from(index.video!.extradata));
}

const cases: [string, MakeVideoOptions, { codec: string; configBytes?: number }][] = [
  [
    "h264 with B-frames, moov at the end",
    { codec: "h264", width: 160, height: 96, frames: 30, bframes: 2 },
    { codec: "h264" },
  ],
  ["h264 faststart", { codec: "h264", width: 160, height: 96, frames: 30, faststart: true }, { codec: "h264" }],
  ["hevc with B-frames", { codec: "hevc", width: 160, height: 96, frames: 30, bframes: 2 }, { codec: "hevc" }],
  ["av1", { codec: "av1", width: 160, height: 96, frames: 20 }, { codec: "av1" }],
  ["vp9 in mp4", { codec: "vp9", width: 160, height: 96, frames: 20 }, { codec: "vp9" }],
  [
    "odd resolution 321x181",
    { codec: "h264", width: 321, height: 181, frames: 15, pixFmt: "yuv444p" },
    { codec: "h264" },
  ],
  [
    "interleaved aac audio",
    { codec: "h264", width: 160, height: 96, frames: 30, audio: true, bframes: 2 },
    { codec: "h264" },
  ],
  ["fragmented MP4", { codec: "h264", width: 160, height: 96, frames: 30, fragmented: true }, { codec: "h264" }],
  [
    "fragmented MP4 with B-frames and audio",
    { codec: "h264", width: 160, height: 96, frames: 30, fragmented: true, bframes: 2, audio: true },
    { codec: "h264" },
  ],
  ["fragmented hevc", { codec: "hevc", width: 160, height: 96, frames: 24, fragmented: true }, { codec: "hevc" }],
];

describe("video samples equal ffprobe -show_packets", () => {
  for (const [name, opts, want] of cases) {
    it(name, async () => {
      const file = await makeVideo(dir, opts);
      const { index } = await indexFile(file);
      expect(index.error).toBeUndefined();
      expect(index.video!.codec).toBe(want.codec);
      expect(index.video!.width).toBe(opts.width);
      expect(index.video!.height).toBe(opts.height);
      expect(index.video!.frameCount).toBe(opts.frames);
      expect(index.video!.fps).toBeCloseTo(25, 6);
      expect(index.video!.duration).toBeCloseTo(opts.frames / 25, 6);
      expect(index.video!.extradata.length).toBeGreaterThan(0);
      await expectMatchesFfprobe(file, index);
    });
  }

  it("extradata is the avcC record that ffprobe reports as extradata", async () => {
    const file = await makeVideo(dir, { codec: "h264", width: 160, height: 96, frames: 5, name: "xd.mp4" });
    const { index } = await indexFile(file);
    // avcC starts with configurationVersion 1, then profile/compat/level from the SPS.
    expect(index.video!.extradata[0]).toBe(1);
    expect(index.video!.codecString).toMatch(/^avc1\.[0-9a-f]{6}$/);
  });
});

/** Over 256 KiB, so a read of its mdat would show in the bytes read. */
const BIG: MakeVideoOptions = { codec: "h264", width: 640, height: 360, frames: 50, gop: 10 };

describe("range reads only", () => {
  it("moov at the end is found without reading the mdat", async () => {
    const file = await makeVideo(dir, { ...BIG, name: "big-tail.mp4" });
    const { size } = await stat(file);
    const { index, requests } = await indexFile(file);
    expect(index.kind).toBe("video");
    const read = requests.reduce((a, r) => a + r.length, 0);
    expect(size).toBeGreaterThan(256 * 1024);
    // The 64 KiB head, a box header or two and the moov: a small fraction of the file.
    expect(read).toBeLessThan(64 * 1024 + 16 * 4 + 16 * 1024);
    expect(requests.at(-1)!.offset + requests.at(-1)!.length).toBe(size);
    // Requests: the head, the box headers past it, the moov (read once).
    expect(requests.length).toBeLessThanOrEqual(4);
  });
});

describe("range reads only (fragmented)", () => {
  it("a fragmented file is indexed from its moov and moofs, stepping over every mdat", async () => {
    const file = await makeVideo(dir, { ...BIG, fragmented: true, name: "big-frag.mp4" });
    const { size } = await stat(file);
    const { index, requests } = await indexFile(file);
    expect(index.video!.frameCount).toBe(50);
    await expectMatchesFfprobe(file, index);
    expect(size).toBeGreaterThan(256 * 1024);
    const read = requests.reduce((a, r) => a + r.length, 0);
    expect(read).toBeLessThan(64 * 1024 + 8 * 1024);
    // One request per top-level box header past the head, one per moof: bounded by the fragments.
    const moofs = index.video!.samples.keyframe.reduce((a, k) => a + k, 0);
    expect(requests.length).toBeLessThanOrEqual(1 + 2 * (moofs + 1) + 2);
  });

  it("a cap on range reads turns a file that needs more into an ERR_HEADER_TOO_LARGE record", async () => {
    const file = join(dir, "big-frag.mp4");
    const reader = await fileReader(file);
    try {
      const capped = await buildIndex(reader, { key: "big-frag.mp4", etag: "e", maxReads: 3 });
      expect(capped).toMatchObject({ kind: "error", error: { code: "ERR_HEADER_TOO_LARGE" } });
      const uncapped = await buildIndex(reader, { key: "big-frag.mp4", etag: "e", maxReads: 100 });
      expect(uncapped.kind).toBe("video");
    } finally {
      await reader.close();
    }
  });
});

const SMALL = { codec: "h264", width: 160, height: 96 } as const;

describe("bad objects become error records, never exceptions", () => {
  const truncated: [string, MakeVideoOptions, (size: number) => number][] = [
    ["truncated moov-at-end file", { ...SMALL, frames: 30, name: "trunc-tail.mp4" }, (size) => Math.floor(size / 2)],
    [
      "truncated faststart file",
      { ...SMALL, frames: 30, faststart: true, name: "trunc-fast.mp4" },
      (size) => size - 1000,
    ],
  ];
  for (const [name, opts, cut] of truncated) {
    it(name, async () => {
      const file = await makeVideo(dir, opts);
      await truncate(file, cut((await stat(file)).size));
      const { index } = await indexFile(file);
      expect(index).toMatchObject({ kind: "error", error: { code: "ERR_TRUNCATED" } });
    });
  }

  it("zero-byte .mp4 and zero-byte unknown file", async () => {
    await writeFile(join(dir, "empty.mp4"), "");
    await writeFile(join(dir, "empty.bin"), "");
    expect((await indexFile(join(dir, "empty.mp4"))).index).toMatchObject({
      kind: "error",
      error: { code: "ERR_EMPTY_OBJECT" },
    });
    expect((await indexFile(join(dir, "empty.bin"))).index).toMatchObject({
      kind: "error",
      size: 0,
      error: { code: "ERR_EMPTY_OBJECT" },
    });
  });

  it("non-media with a video extension, and plain text", async () => {
    await writeFile(join(dir, "fake.mp4"), "this is not a video, just some text\n".repeat(10));
    await writeFile(join(dir, "notes.txt"), "hello\n");
    expect((await indexFile(join(dir, "fake.mp4"))).index).toMatchObject({
      kind: "error",
      error: { code: "ERR_UNRECOGNIZED_FORMAT" },
    });
    const other = (await indexFile(join(dir, "notes.txt"))).index;
    expect(other.kind).toBe("other");
    expect(other.error).toBeUndefined();
  });

  it("fragments without their moov (a bare media segment) are reported with their own code", async () => {
    const file = await makeVideo(dir, {
      codec: "h264",
      width: 64,
      height: 64,
      frames: 30,
      fragmented: true,
      name: "segment.mp4",
    });
    const bytes = await readFile(file);
    const moov = bytes.indexOf("moov");
    // Drop ftyp+moov: what is left starts at the first moof.
    const tail = bytes.subarray(moov - 4 + bytes.readUInt32BE(moov - 4));
    expect(tail.subarray(4, 8).toString()).toBe("moof");
    await writeFile(file, tail);
    expect((await indexFile(file)).index).toMatchObject({ kind: "error", error: { code: "ERR_FRAGMENTED_MP4" } });
  });

  it("garbage inside the moov", async () => {
    const file = await makeVideo(dir, { ...SMALL, frames: 10, faststart: true, name: "garbled.mp4" });
    const bytes = await readFile(file);
    for (let i = 40; i < 400; i++) bytes[i] = 0xff;
    await writeFile(file, bytes);
    const { index } = await indexFile(file);
    expect(index.kind).toBe("error");
    expect(index.error!.code).toMatch(/^ERR_/);
  });

  it("a failing reader throws ERR_READ_FAILED instead of caching an error record", async () => {
    const reader: RangeReader = {
      size: 1000,
      read: async () => {
        throw new Error("connection reset");
      },
    };
    await expect(buildIndex(reader, { key: "a.mp4", etag: "e" })).rejects.toMatchObject({ code: "ERR_READ_FAILED" });
  });
});

describe("images and arrays from headers", () => {
  it("jpeg", async () => {
    const { index } = await indexFile(await makeImage(dir, { format: "jpeg", width: 64, height: 48 }));
    expect(index).toMatchObject({ kind: "image", image: { format: "jpeg", width: 64, height: 48, channels: 3 } });
  });
  it("grayscale png", async () => {
    const { index } = await indexFile(await makeImage(dir, { format: "png", width: 33, height: 17, gray: true }));
    expect(index).toMatchObject({ kind: "image", image: { format: "png", width: 33, height: 17, channels: 1 } });
  });
  it("png with alpha, odd size", async () => {
    const { index } = await indexFile(await makeImage(dir, { format: "png", width: 63, height: 47, alpha: true }));
    expect(index).toMatchObject({ kind: "image", image: { format: "png", width: 63, height: 47, channels: 4 } });
  });
  it("webp (lossy, lossy with alpha, lossless with alpha)", async () => {
    expect(
      (await indexFile(await makeImage(dir, { format: "webp", width: 53, height: 43, alpha: true, lossless: true })))
        .index,
    ).toMatchObject({ kind: "image", image: { format: "webp", width: 53, height: 43, channels: 4 } });
    expect((await indexFile(await makeImage(dir, { format: "webp", width: 50, height: 40 }))).index).toMatchObject({
      kind: "image",
      image: { format: "webp", width: 50, height: 40, channels: 3 },
    });
    expect(
      (await indexFile(await makeImage(dir, { format: "webp", width: 51, height: 41, alpha: true }))).index,
    ).toMatchObject({ kind: "image", image: { format: "webp", width: 51, height: 41, channels: 4 } });
  });
  it("npy", async () => {
    const { index } = await indexFile(await makeNpy(dir, { dtype: "<f4", shape: [2, 3, 5] }));
    expect(index).toMatchObject({ kind: "array", array: { dtype: "<f4", shape: [2, 3, 5], fortranOrder: false } });
    // numpy aligns the data to 64 bytes, and the data runs to the end of the file.
    expect(index.array!.dataOffset % 64).toBe(0);
    expect(index.array!.dataOffset + 2 * 3 * 5 * 4).toBe(index.size);
  });
  it("truncated npy", async () => {
    const file = await makeNpy(dir, { dtype: "<i8", shape: [100], name: "t.npy" });
    await truncate(file, 100);
    expect((await indexFile(file)).index).toMatchObject({ kind: "error", error: { code: "ERR_TRUNCATED" } });
  });
  it("a jpeg named .png is still indexed as what its bytes are", async () => {
    const jpg = await makeImage(dir, { format: "jpeg", width: 20, height: 10, name: "misnamed.jpg" });
    await copyFile(jpg, join(dir, "misnamed.png"));
    expect((await indexFile(join(dir, "misnamed.png"))).index).toMatchObject({
      kind: "image",
      image: { format: "jpeg" },
    });
  });
});

import { generateKeyPairSync, randomBytes } from "node:crypto";
import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { sha256 } from "../../../common/dataset-table/digest.js";
import { buildGeneration } from "../../../common/dataset-table/generation.js";
import { manifestSigner, publicKeys, signJson } from "../../../common/manifest-sign.js";
import type { TableEntryV1 } from "../../../common/schema/index.js";
import { readTable, type TableStore } from "../../../common/table-client.js";
import { inflatePage, pageDigest } from "../../../sdk/source/page-check.js";

const entry = (i: number): TableEntryV1 => ({
  key: `d/o-${String(i).padStart(4, "0")}.mp4`,
  size: 100 + i,
  etag: `"e${i}"`,
  kind: "video",
  frames: 24,
  keyframes: [0, 6, 12, 18],
});

/** A signed generation of 12 entries in pages of 4, read as EdgeSource reads it; `tamper` changes a page's bytes. */
async function read(tamper: boolean) {
  const signer = await manifestSigner(
    generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "der" }).toString("base64"),
  );
  const entries = Array.from({ length: 12 }, (_, i) => entry(i));
  const { head, pages } = await buildGeneration(undefined, new Map(entries.map((e) => [e.key, e])), async () => [], {
    root: "d",
    shardBytes: 1 << 20,
    now: 0,
    pageTarget: 4,
  });
  const signed = await signJson(head, signer);
  const gz = new Map(pages.map((p) => [p.name, p.gz]));
  const store: TableStore = {
    head: async () => signed,
    page: async (name) => {
      const bytes = await inflatePage(gz.get(name)!);
      if (tamper && name === pages[1]!.name) bytes[bytes.length - 1]! ^= 1;
      return bytes;
    },
  };
  const digested: number[] = [];
  const digest = (bytes: Uint8Array) => (digested.push(bytes.length), pageDigest(bytes));
  return {
    entries,
    pages: pages.length,
    digested,
    read: () => readTable(store, Promise.resolve(publicKeys([signer])), "d", undefined, digest),
  };
}

describe("the SDK's synchronous page inflate and digest", () => {
  it("digests as the head's WebCrypto SHA-256 (base64url, unpadded) for every length mod 3", async () => {
    for (const n of [0, 1, 2, 3, 31, 32, 33, 4096, 80_001]) {
      const bytes = new Uint8Array(randomBytes(n));
      expect(pageDigest(bytes)).toBe(await sha256(bytes));
    }
  });

  it("inflates a gzip page to its bytes", async () => {
    const bytes = new Uint8Array(randomBytes(70_000));
    expect(await inflatePage(gzipSync(bytes))).toEqual(bytes);
  });

  it("reads a signed table with them, entries as listed", async () => {
    const { entries, pages, digested, read: readIt } = await read(false);
    expect((await readIt())!.entries.entries()).toEqual(entries);
    // Every page was checked with the digest given, not the default.
    expect(digested).toHaveLength(pages);
  });

  it("refuses a page whose bytes are not the ones its signed head names", async () => {
    const { read: readIt } = await read(true);
    await expect(readIt()).rejects.toMatchObject({ code: "ERR_MANIFEST_SIGNATURE" });
  });
});

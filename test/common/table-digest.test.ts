import { generateKeyPairSync } from "node:crypto";
import { describe, expect, it } from "vitest";
import { decodeDirectory } from "../../common/dataset-table/directory.js";
import { buildGeneration } from "../../common/dataset-table/generation.js";
import { SetDigest } from "../../common/dataset-table/set-digest.js";
import { manifestSigner, publicKeys, signJson } from "../../common/manifest-sign.js";
import type { TableEntryV1, TableHeadV1 } from "../../common/schema/index.js";
import { readTable, type TableStore } from "../../common/table-client.js";

const entry = (key: string, i: number): TableEntryV1 => ({
  key,
  size: 100 + i,
  etag: `"e${i}"`,
  kind: "video",
  frames: 10,
  keyframes: [0, 5],
});

/** A signed generation of `entries` in pages of `pageTarget`, read back as the SDK reads it; `strip` drops the page summaries. */
async function readBack(entries: TableEntryV1[], prefix: string, strip: boolean) {
  const signer = await manifestSigner(
    generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "der" }).toString("base64"),
  );
  const { head, pages } = await buildGeneration(undefined, new Map(entries.map((e) => [e.key, e])), async () => [], {
    root: "d",
    shardBytes: 1 << 20,
    now: 0,
    pageTarget: 3,
  });
  const bodies = new Map(
    await Promise.all(
      pages.map(async (p) => {
        const raw = new Response(
          new Blob([p.gz as Uint8Array<ArrayBuffer>]).stream().pipeThrough(new DecompressionStream("gzip")),
        );
        return [p.name, new Uint8Array(await raw.arrayBuffer())] as const;
      }),
    ),
  );
  // A format-1 head (every page listed) written before page summaries.
  const { directories, version, ...rest } = head;
  const old: TableHeadV1 = {
    ...rest,
    version: 1,
    pages: directories
      .flatMap((d) => decodeDirectory(bodies.get(d.name)!))
      .map(({ digest, frames, keyframes, errors, shards, ...ref }) => ref),
  };
  const signed = await signJson(strip ? old : head, signer);
  const store: TableStore = { head: async () => signed, page: async (name) => bodies.get(name)! };
  return (await readTable(store, Promise.resolve(publicKeys([signer])), prefix))!;
}

describe("a table's listing digest", () => {
  const entries = ["d/a", "d/b", "d/s/c", "d/s/d", "d/s/e", "d/s/f", "d/s/g", "d/t", "d/u"].map(entry);
  const digestOf = (list: readonly TableEntryV1[]) =>
    list.reduce((d, e) => d.add(e.key, e.etag), new SetDigest()).toString();

  it("is the same from the head's page summaries as from the entries of a head written before them", async () => {
    for (const prefix of ["d", "d/s"]) {
      const listed = entries.filter((e) => e.key.startsWith(`${prefix}/`));
      const summed = await readBack(entries, prefix, false);
      const hashed = await readBack(entries, prefix, true);
      expect(summed.entries.entries()).toEqual(listed);
      expect(summed.digest).toBe(digestOf(listed));
      expect(hashed.digest).toBe(summed.digest);
    }
  });

  it("adds up over any split of the objects, and changes with an etag", () => {
    const whole = digestOf(entries);
    const parts = new SetDigest().addDigest(digestOf(entries.slice(4)), 5);
    for (const e of entries.slice(0, 4).reverse()) parts.add(e.key, e.etag);
    expect(parts.toString()).toBe(whole);
    expect(parts.count).toBe(entries.length);
    expect(digestOf([...entries.slice(1), { ...entries[0]!, etag: '"x"' }])).not.toBe(whole);
  });
});

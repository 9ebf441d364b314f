import { mkdtemp, rename, rm, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openUnder } from "../../helpers/open-fds.js";
import { EcError } from "../../../common/errors.js";
import { LocalDirSource } from "../../../sdk/source/index.js";

let dir: string;
const FILES = 40;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ec-local-handles-"));
  for (let i = 0; i < FILES; i++) await writeFile(join(dir, `f${String(i).padStart(2, "0")}.bin`), `file ${i} body`);
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe("LocalDirSource file handles", () => {
  it("keeps at most maxOpenFiles open over many files, and reuses them", async () => {
    const source = new LocalDirSource(dir, { maxOpenFiles: 4 });
    const { objects } = await source.list();
    expect(objects).toHaveLength(FILES);
    let most = 0;
    for (let round = 0; round < 2; round++) {
      for (const object of objects) {
        const bytes = await source.read(object, 0, object.size);
        expect(new TextDecoder().decode(bytes)).toBe(`file ${Number(object.key.slice(1, 3))} body`);
        most = Math.max(most, await openUnder(dir));
      }
    }
    expect(most).toBe(4);
    // Reads of a held file open nothing more.
    for (let i = 0; i < 10; i++) await source.read(objects[FILES - 1]!, 5, 2);
    expect(await openUnder(dir)).toBe(4);
    await source.close();
  });

  it("bounds the handles of concurrent reads too", async () => {
    const source = new LocalDirSource(dir, { maxOpenFiles: 3 });
    const { objects } = await source.list();
    await Promise.all(objects.map((o) => source.read(o, 0, o.size)));
    expect(await openUnder(dir)).toBeLessThanOrEqual(3);
    await source.close();
  });

  it("reads a replaced file fresh and never the old version under the new etag", async () => {
    const path = join(dir, "replaced.bin");
    await writeFile(path, "old contents");
    const source = new LocalDirSource(dir, { maxOpenFiles: 8 });
    const before = (await source.list()).objects.find((o) => o.key === "replaced.bin")!;
    expect(new TextDecoder().decode(await source.read(before, 0, before.size))).toBe("old contents");

    // Replaced by a rename, as writers that never expose half a file do: the held handle is the old inode.
    await writeFile(`${path}.tmp`, "new contents!");
    await utimes(`${path}.tmp`, new Date(), new Date(Date.now() + 5_000));
    await rename(`${path}.tmp`, path);
    const after = (await source.list()).objects.find((o) => o.key === "replaced.bin")!;
    expect(after.etag).not.toBe(before.etag);
    expect(new TextDecoder().decode(await source.read(after, 0, after.size))).toBe("new contents!");

    // The old version is gone from disk: asking for it is a typed error, not the new bytes.
    const err = await source.read(before, 0, before.size).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EcError);
    expect((err as EcError).code).toBe("ERR_ETAG_CHANGED");
    await source.close();
    await rm(path);
  });

  it("close releases every handle", async () => {
    const source = new LocalDirSource(dir, { maxOpenFiles: 16 });
    const { objects } = await source.list();
    for (const o of objects) await source.read(o, 0, 4);
    expect(await openUnder(dir)).toBe(16);
    await source.close();
    expect(await openUnder(dir)).toBe(0);
  });

  it("rejects a bound that is no positive integer", () => {
    expect(() => new LocalDirSource(dir, { maxOpenFiles: 0 })).toThrow(
      "Expected a positive integer for maxOpenFiles but received 0",
    );
  });
});

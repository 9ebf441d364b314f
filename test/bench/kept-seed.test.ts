import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { keptSeed } from "../../bench/open-scale/kept-seed.js";

describe("open-scale --keep on a directory a killed seed left", () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "kept-seed-"));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("says it reseeds, what it found and how many objects, when seeded.json is missing", async () => {
    await mkdir(join(dir, "r2"));
    await writeFile(join(dir, ".dev.vars"), "");
    const kept = await keptSeed(dir, 50000, 2);
    expect(kept.kind).toBe("reseed");
    if (kept.kind === "reuse") return;
    expect(kept.notice).toContain("but no seeded.json (a seed that did not finish)");
    expect(kept.notice).toContain(".dev.vars, r2");
    expect(kept.notice).toContain("seeding 50,000 objects again");
  });

  it("says so for a seeded.json that is not JSON or records another size", async () => {
    await writeFile(join(dir, "seeded.json"), "{");
    expect(await keptSeed(dir, 1000, 2)).toMatchObject({
      kind: "reseed",
      notice: expect.stringContaining("is not JSON"),
    });
    await writeFile(join(dir, "seeded.json"), JSON.stringify({ objects: 10000, seconds: 5, pageFormat: 2 }));
    expect(await keptSeed(dir, 1000, 2)).toMatchObject({
      kind: "reseed",
      notice: expect.stringContaining("records 10000 objects, not 1000"),
    });
  });

  it("rewrites only the table for another page format, and reuses a finished seed silently", async () => {
    await writeFile(join(dir, "seeded.json"), JSON.stringify({ objects: 1000, seconds: 5 }));
    expect(await keptSeed(dir, 1000, 2)).toMatchObject({
      kind: "retable",
      notice: expect.stringContaining("page format 1, not 2"),
    });
    await writeFile(join(dir, "seeded.json"), JSON.stringify({ objects: 1000, seconds: 5, pageFormat: 2 }));
    expect(await keptSeed(dir, 1000, 2)).toEqual({ kind: "reuse", mark: { objects: 1000, seconds: 5, pageFormat: 2 } });
  });

  it("says a missing directory is seeded from nothing", async () => {
    const kept = await keptSeed(join(dir, "absent"), 1000, 2);
    expect(kept).toMatchObject({ kind: "reseed", notice: expect.stringContaining("does not exist") });
  });
});

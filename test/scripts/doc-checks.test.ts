/**
 * The two checks `npm run docs:check` adds to `npm run checks`: a doc that names a missing path
 * fails, and so does a part that imports another part's internals. Each is run on a file made
 * for the test inside the repository (removed after), as the checks read the git tree.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { afterEach, describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "..", "..");
const made: string[] = [];
afterEach(() => {
  for (const p of made.splice(0)) rmSync(p, { recursive: true, force: true });
});

function run(script: string, ...args: string[]) {
  return spawnSync(process.execPath, [join(root, "scripts", script), ...args], { cwd: root, encoding: "utf8" });
}

describe("check-doc-paths", () => {
  it("fails on a doc naming a missing file, a missing folder-relative source or a dead link", () => {
    const dir = mkdtempSync(join(root, "docs", "tmp-"));
    made.push(dir);
    const doc = join(dir, "bad.md");
    writeFileSync(
      doc,
      "See `sdk/no-such-file.ts`, `single-flight.ts` and [the guide](../no-such-guide.md).\n" +
        "```sh\nnode `not/checked/in/a/fence.ts`\n```\n",
    );
    const r = run("check-doc-paths.mjs", relative(root, doc));
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("sdk/no-such-file.ts: no such file or folder");
    expect(r.stderr).toContain("single-flight.ts: no tracked file has this name");
    expect(r.stderr).toContain("../no-such-guide.md: link to a missing file");
    expect(r.stderr).not.toContain("fence.ts");
  });

  it("passes on paths that exist, placeholders, URLs and ignored build outputs", () => {
    const dir = mkdtempSync(join(root, "docs", "tmp-"));
    made.push(dir);
    const doc = join(dir, "good.md");
    writeFileSync(
      doc,
      "`sdk/open.ts`, `store/block-id.ts`, `origin-cache/`, `/v1/objects/{key}`, `dist/sdk/index.js`, " +
        "`<cuda.h>`, [README](../../README.md), [web](https://example.com/x.ts)\n",
    );
    const r = run("check-doc-paths.mjs", relative(root, doc));
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
  });
});

describe("check-part-imports", () => {
  it("fails on a part importing a file behind another part's index.ts", () => {
    const file = join(root, "sdk", "tmp-reach-in.ts");
    made.push(file);
    writeFileSync(file, 'export { mapShared } from "../native/lib/shared-map.js";\n');
    const r = run("check-part-imports.mjs");
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("sdk/tmp-reach-in.ts: imports ../native/lib/shared-map.js (inside native/)");
  });

  it("passes the tree as it is", () => {
    const r = run("check-part-imports.mjs");
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
  });
});

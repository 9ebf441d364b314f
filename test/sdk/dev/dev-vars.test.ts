import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPrivateKey } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { devToken, ensureDevVars, parseDevVars } from "../../../sdk/dev/dev-vars.js";

describe("ensureDevVars", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "ec-devvars-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("creates a 0600 file with random secrets and a usable Ed25519 key", () => {
    const a = ensureDevVars(dir);
    expect(statSync(join(dir, ".dev.vars")).mode & 0o777).toBe(0o600);
    const key = createPrivateKey({ key: Buffer.from(a.EC_MANIFEST_KEY, "base64"), format: "der", type: "pkcs8" });
    expect(key.asymmetricKeyType).toBe("ed25519");
    const other = mkdtempSync(join(tmpdir(), "ec-devvars-"));
    const b = ensureDevVars(other);
    rmSync(other, { recursive: true, force: true });
    expect(b.EC_SIGNING_KEY).not.toBe(a.EC_SIGNING_KEY);
    expect(devToken(b)).not.toBe(devToken(a));
  });

  it("never overwrites what is there, and appends only what is missing", () => {
    writeFileSync(join(dir, ".dev.vars"), 'EC_API_TOKENS="mine,yours"\n# a comment\nEC_SIGNING_KEY=kept\n');
    const vars = ensureDevVars(dir);
    expect(vars.EC_API_TOKENS).toBe("mine,yours");
    expect(vars.EC_SIGNING_KEY).toBe("kept");
    expect(devToken(vars)).toBe("mine");
    const again = parseDevVars(readFileSync(join(dir, ".dev.vars"), "utf8"));
    expect(again.EC_MANIFEST_KEY).toBe(vars.EC_MANIFEST_KEY);
    expect(ensureDevVars(dir)).toEqual(vars);
  });

  it("gives every caller the same secrets", () => {
    const all = Array.from({ length: 5 }, () => ensureDevVars(dir));
    for (const v of all) expect(v).toEqual(all[0]);
  });
});

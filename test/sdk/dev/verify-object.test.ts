import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rangesFor, rng, verifyObject } from "../../../sdk/dev/verify-object.js";

// A real server that serves `served` with honest or broken range handling.
describe("verifyObject", () => {
  let server: Server;
  let base: string;
  let dir: string;
  const local = Buffer.from(Array.from({ length: 5000 }, (_, i) => (i * 31) & 0xff));
  let served = local;
  let offByOne = false;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "ec-verify-"));
    writeFileSync(join(dir, "obj.bin"), local);
    server = createServer((req, res) => {
      const m = /^bytes=(\d*)-(\d*)$/.exec(req.headers.range ?? "");
      if (!m) return res.writeHead(200).end(served);
      const size = served.length;
      let start = m[1] === "" ? size - Number(m[2]) : Number(m[1]);
      const end = m[1] === "" || m[2] === "" ? size - 1 : Math.min(Number(m[2]), size - 1);
      if (offByOne && start > 0) start -= 1;
      res.writeHead(206, { "content-range": `bytes ${start}-${end}/${size}` }).end(served.subarray(start, end + 1));
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await new Promise((r) => server.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  const ranges = rangesFor(local.length, 6, rng(3));

  it("passes an honest server", async () => {
    served = local;
    offByOne = false;
    const r = await verifyObject("k", `${base}/obj`, join(dir, "obj.bin"), ranges);
    expect(r.mismatches).toEqual([]);
    expect(r.reads).toBe(ranges.length + 1);
  });

  it("catches one flipped byte and an off-by-one range", async () => {
    served = Buffer.from(local);
    served[4999] = served[4999]! ^ 1;
    const flipped = await verifyObject("k", `${base}/obj`, join(dir, "obj.bin"), ranges);
    expect(flipped.mismatches.some((m) => m.includes("whole body differs"))).toBe(true);
    served = local;
    offByOne = true;
    const shifted = await verifyObject("k", `${base}/obj`, join(dir, "obj.bin"), ranges);
    expect(shifted.mismatches.length).toBeGreaterThan(0);
  });

  it("ranges include the first and last byte and stay inside the object", () => {
    expect(ranges.slice(0, 2)).toEqual(["bytes=0-0", "bytes=4999-"]);
    for (const r of ranges) {
      const m = /^bytes=(\d*)-(\d*)$/.exec(r)!;
      if (m[1] !== "") expect(Number(m[1])).toBeLessThan(local.length);
      if (m[2] !== "" && m[1] !== "") expect(Number(m[2])).toBeGreaterThanOrEqual(Number(m[1]));
    }
  });
});

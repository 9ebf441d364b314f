import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { putFile } from "../../bench/compare/seed.js";
import { spawnGroup, type ChildGroup } from "../../sdk/dev/child-group.js";

type Answer = "503" | "reset" | "400" | "201";

/** A loopback server that answers each PUT as the next entry of `answers` (the last one repeats) and keeps what came. */
async function startServer(answers: readonly Answer[]): Promise<{ url: string; puts: Buffer[]; server: Server }> {
  const puts: Buffer[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const answer = answers[Math.min(puts.length, answers.length - 1)]!;
    const chunks: Buffer[] = [];
    const index = puts.push(Buffer.alloc(0)) - 1;
    if (answer === "reset") {
      // The way workerd's restart drops an upload: mid-body, no answer.
      req.once("data", () => req.socket.destroy());
      return;
    }
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      puts[index] = Buffer.concat(chunks);
      if (answer === "503") {
        res.writeHead(503, { "retry-after": "0" }).end("Your worker restarted mid-request.");
      } else if (answer === "400") {
        res.writeHead(400, { "content-type": "application/json" }).end('{"code":"ERR_BAD_KEY"}');
      } else {
        res.writeHead(201).end("{}");
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, puts, server };
}

describe("putFile (the bench's seeding PUT)", () => {
  let dir: string;
  let file: string;
  const bytes = Buffer.alloc(3 * 1024 * 1024);
  for (let i = 0; i < bytes.length; i += 4) bytes.writeUInt32LE(Math.imul(i, 2654435761) >>> 0, i);
  let server: Server | undefined;
  let group: ChildGroup | undefined;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "ec-seed-"));
    file = join(dir, "video.mp4");
    writeFileSync(file, bytes);
  });
  afterEach(async () => {
    await new Promise((r) => (server ? server.close(r) : r(undefined)));
    server = undefined;
    await group?.stop();
    group = undefined;
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("sends the same bytes again after 503s and resets, and succeeds", async () => {
    const s = await startServer(["503", "reset", "503", "201"]);
    server = s.server;
    await putFile({ url: s.url, token: "t" }, "bench/video.mp4", file, { backoffMs: 5 });
    expect(s.puts.length).toBe(4);
    expect(s.puts[0]!.equals(bytes)).toBe(true);
    expect(s.puts[3]!.equals(bytes)).toBe(true);
  });

  it("fails with the last cause once the tries are spent", async () => {
    const s = await startServer(["503"]);
    server = s.server;
    const put = putFile({ url: s.url, token: "t" }, "bench/video.mp4", file, { attempts: 3, backoffMs: 5 });
    await expect(put).rejects.toThrow(/received 503: Your worker restarted mid-request\. \(after 3 tries\)/);
    expect(s.puts.length).toBe(3);
  });

  it("sends again after a 503 but not after any other answer", async () => {
    const s = await startServer(["503", "400", "201"]);
    server = s.server;
    await expect(putFile({ url: s.url, token: "t" }, "bench/video.mp4", file, { backoffMs: 5 })).rejects.toThrow(
      /received 400: \{"code":"ERR_BAD_KEY"\}/,
    );
    expect(s.puts.length).toBe(2);
  });

  it("reports an edge whose process died with its last output, not the bare reset", async () => {
    // A real process standing in for wrangler: it dies on the first PUT, saying why on stderr.
    const script = `
      const server = require("node:http").createServer((req) => {
        process.stderr.write("fatal: the runtime is gone\\n");
        req.socket.destroy();
        process.exit(3);
      });
      server.listen(0, "127.0.0.1", () => console.log("port " + server.address().port));`;
    group = spawnGroup(process.execPath, ["-e", script], { echo: false });
    let status: number | string | undefined;
    void group.exited.then((code) => (status = code));
    let port: string | undefined;
    for (let i = 0; i < 200 && !port; i++, await sleep(25)) port = /port (\d+)/.exec(group.output())?.[1];
    expect(port).toBeDefined();
    const g = group;
    const edge = { url: `http://127.0.0.1:${port}`, token: "t", exitStatus: () => status, output: () => g.output() };
    const put = putFile(edge, "bench/video.mp4", file, { backoffMs: 200 });
    await expect(put).rejects.toThrow(
      /The local edge exited \(3\) during PUT bench\/video\.mp4[\s\S]*fatal: the runtime is gone/,
    );
  });
});

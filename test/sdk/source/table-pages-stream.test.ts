import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { frameHeader } from "../../../common/dataset-table/page-frames.js";
import { publicKeys, signJson } from "../../../common/manifest-sign.js";
import { fetchTable } from "../../../common/table-client.js";
import { edgeFetch } from "../../../sdk/source/edge-fetch.js";
import { inflatePage, pageDigest } from "../../../sdk/source/page-check.js";
import { tableGeneration, videoEntry } from "../../helpers/signed-table.js";

const entries = Array.from({ length: 12 }, (_, i) => videoEntry(i));

let server: Server;
let base: string;
/** Resolved when the client has checked the first page of a several-page body. */
let firstChecked: () => void = () => {};
/** Whether the client checked the first page while the rest of the body was still held back. */
let checkedEarly: boolean | undefined;

beforeAll(async () => {
  const { signer, head, pages } = await tableGeneration(entries, 4);
  const signed = JSON.stringify(await signJson(head, signer));
  const gz = new Map(pages.map((p) => [p.name, p.gz]));
  server = createServer((req, res) => {
    const url = new URL(req.url!, "http://x");
    if (url.pathname === "/v1/keys") return res.end(JSON.stringify(publicKeys([signer])));
    if (url.pathname === "/v1/datasets/d/table") return res.end(signed);
    if (url.pathname !== "/v1/datasets/d/table/pages") return res.writeHead(404).end();
    const [first, ...rest] = url.searchParams
      .get("names")!
      .split(",")
      .map((n) => gz.get(n)!);
    res.writeHead(200, { "content-type": "application/octet-stream" });
    res.write(frameHeader(first!.byteLength));
    res.write(first);
    // The rest only once the client has checked the first page, or after 2 s (a client that waits for the whole body).
    const early = new Promise<boolean>((resolve) => {
      firstChecked = () => resolve(true);
      setTimeout(() => resolve(false), 2000);
    });
    void early.then((yes) => {
      checkedEarly = yes;
      for (const p of rest) res.write(Buffer.concat([frameHeader(p.byteLength), p]));
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe("table pages of one response", () => {
  it("are checked as they arrive, the first before the last is sent", async () => {
    const control = edgeFetch();
    let digests = 0;
    try {
      const table = await fetchTable(`${base}/v1/datasets/d`, {
        fetch: control.fetch,
        inflate: inflatePage,
        digest: (bytes) => {
          if (digests++ === 0) firstChecked();
          return pageDigest(bytes);
        },
      });
      expect(table!.entries.entries()).toEqual(entries);
      expect(digests).toBe(3);
      expect(checkedEarly).toBe(true);
    } finally {
      await control.close();
    }
  });
});

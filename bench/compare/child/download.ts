/** The download step users run today: whole objects, a few at a time, onto local disk. */
import { createWriteStream } from "node:fs";
import { mkdir } from "node:fs/promises";
import { dirname, join } from "node:path";
import { Agent, request } from "undici";

export interface DownloadPlan {
  /** Signed object URLs with the keys to store them under. */
  readonly objects: readonly { readonly key: string; readonly url: string }[];
  readonly concurrency: number;
}

/**
 * Fetches every object in full into `dir` (HTTP/2 where offered; the emulator's CA comes from
 * NODE_EXTRA_CA_CERTS) and returns the bytes fetched.
 *
 * @example
 * const bytes = await downloadAll({ objects: [{ key: "a.mp4", url }], concurrency: 8 }, "/tmp/data");
 */
export async function downloadAll(plan: DownloadPlan, dir: string): Promise<number> {
  const agent = new Agent({ allowH2: true, connections: plan.concurrency });
  let bytes = 0;
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < plan.objects.length) {
      const o = plan.objects[next++]!;
      const path = join(dir, ...o.key.split("/"));
      await mkdir(dirname(path), { recursive: true });
      const res = await request(o.url, { dispatcher: agent });
      if (res.statusCode !== 200) throw new Error(`Expected 200 for ${o.key} but received ${res.statusCode}`);
      const sink = createWriteStream(path);
      for await (const chunk of res.body as AsyncIterable<Buffer>) {
        bytes += chunk.length;
        if (!sink.write(chunk)) await new Promise<void>((r) => sink.once("drain", () => r()));
      }
      await new Promise<void>((resolve, reject) => sink.end((err?: Error | null) => (err ? reject(err) : resolve())));
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(plan.concurrency, plan.objects.length) }, worker));
  } finally {
    await agent.close();
  }
  return bytes;
}

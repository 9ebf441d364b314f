/**
 * The remote side every remote row shares: the edge Worker running locally (wrangler dev, a
 * persisted local R2) holding the videos, and the WAN emulator (TLS + HTTP/2, RTT, bandwidth
 * cap) in front of it. The Worker is told the emulator's origin is its own, so the manifest's
 * signed URLs lead through the WAN.
 */
import { writeFile } from "node:fs/promises";
import { basename, join } from "node:path";
import { request } from "undici";
import { ManifestV1, SignedManifestV1 } from "../../common/schema/index.js";
import { freePort } from "../../sdk/dev/free-port.js";
import { startLocalEdge, type LocalEdge } from "../../sdk/dev/index.js";
import { startWanEmulator, type WanEmulator } from "../../test/helpers/wan-emulator.js";
import { putFile } from "./seed.js";

export interface RemoteObject {
  readonly key: string;
  readonly size: number;
  /** Signed URL of the object through the emulator. */
  readonly url: string;
}

export interface Testbed {
  readonly edge: LocalEdge;
  readonly wan: WanEmulator;
  /** PEM file of the emulator's certificate (for NODE_EXTRA_CA_CERTS). */
  readonly caFile: string;
  /** Dataset URL through the emulator. */
  readonly datasetUrl: string;
  /** Dataset URL of the same videos under `warmupPrefix` (other keys, so other cache blocks); undefined without one. */
  readonly warmupUrl: string | undefined;
  readonly objects: readonly RemoteObject[];
  close(): Promise<void>;
}

export interface TestbedOptions {
  readonly files: readonly string[];
  readonly prefix: string;
  /** A second prefix the files are uploaded under too, for warming the origin-cache up unmeasured. */
  readonly warmupPrefix?: string;
  readonly workDir: string;
  readonly rttMs: number;
  readonly bandwidthBytesPerSec: number;
}

async function manifest(edge: LocalEdge, prefix: string): Promise<ManifestV1["objects"]> {
  const objects: ManifestV1["objects"] = [];
  let cursor: string | null = null;
  do {
    const q: string = cursor === null ? "" : `?cursor=${encodeURIComponent(cursor)}`;
    const res = await request(`${edge.url}/v1/datasets/${encodeURIComponent(prefix)}/manifest${q}`, {
      headers: { authorization: `Bearer ${edge.token}` },
    });
    const body = await res.body.json();
    if (res.statusCode !== 200)
      throw new Error(`Expected 200 for the manifest but received ${res.statusCode}: ${JSON.stringify(body)}`);
    const page = ManifestV1.parse(JSON.parse(SignedManifestV1.parse(body).payload));
    objects.push(...page.objects);
    cursor = page.cursor;
  } while (cursor !== null);
  return objects;
}

/**
 * Starts the edge, uploads `files` under `prefix`, has the edge build each index (in production
 * that happens long before a training run), and puts the emulator in front.
 *
 * @example
 * const bed = await startTestbed({ files, prefix: "bench", workDir, rttMs: 50, bandwidthBytesPerSec: 12.5e6 });
 */
export async function startTestbed(o: TestbedOptions): Promise<Testbed> {
  // A port found free can be taken (by the emulator's own listener, or anyone) before wrangler binds it.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(o);
    } catch (err) {
      if (attempt >= 3 || !/EADDRINUSE|already in use/i.test((err as Error).message)) throw err;
    }
  }
}

async function startOnce(o: TestbedOptions): Promise<Testbed> {
  const port = await freePort();
  const wan = await startWanEmulator({
    target: `http://127.0.0.1:${port}`,
    rttMs: o.rttMs,
    bandwidthBytesPerSec: o.bandwidthBytesPerSec,
  });
  let edge: LocalEdge | undefined;
  // This run's edge has fresh manifest keys: remember them for this run, not in the user's known-edges.json.
  process.env.EC_KNOWN_EDGES ??= join(o.workDir, "known-edges.json");
  try {
    edge = await startLocalEdge({
      port,
      quiet: true,
      varsDir: o.workDir,
      persistDir: join(o.workDir, "r2"),
      publicOrigin: wan.url,
    });
    const prefixes = o.warmupPrefix === undefined ? [o.prefix] : [o.prefix, o.warmupPrefix];
    for (const prefix of prefixes) for (const file of o.files) await putFile(edge, `${prefix}/${basename(file)}`, file);
    const listed = await manifest(edge, o.prefix);
    const warmup = o.warmupPrefix === undefined ? [] : await manifest(edge, o.warmupPrefix);
    // Set-up, not measured: straight to the edge, not through the WAN.
    const direct = (url: string): string => {
      const u = new URL(url);
      return `${edge!.url}${u.pathname}${u.search}`;
    };
    for (const obj of [...listed, ...warmup]) {
      const res = await request(direct(obj.indexUrl));
      await res.body.dump();
      if (res.statusCode !== 200)
        throw new Error(`Expected 200 for the index of ${obj.key} but received ${res.statusCode}`);
    }
    const caFile = join(o.workDir, "wan-ca.pem");
    await writeFile(caFile, wan.ca);
    const e = edge;
    return {
      edge: e,
      wan,
      caFile,
      datasetUrl: `${wan.url}/v1/datasets/${encodeURIComponent(o.prefix)}`,
      warmupUrl:
        o.warmupPrefix === undefined ? undefined : `${wan.url}/v1/datasets/${encodeURIComponent(o.warmupPrefix)}`,
      objects: listed.map((obj) => ({ key: obj.key, size: obj.size, url: obj.url })),
      close: async () => {
        await wan.close();
        await e.stop();
      },
    };
  } catch (err) {
    await wan.close();
    await edge?.stop();
    throw err;
  }
}

import { readFile } from "node:fs/promises";
import { expect } from "vitest";
import type { LocalEdge } from "../../sdk/dev/index.js";

/**
 * PUTs one object to a local edge under `key` with its bearer token, expecting 201.
 *
 * @example
 * await uploadBytes(edge, "ds/broken.mp4", bytes.slice(0, 3000));
 */
export async function uploadBytes(edge: LocalEdge, key: string, body: Uint8Array<ArrayBuffer> | string): Promise<void> {
  const res = await fetch(`${edge.url}/v1/objects/${key}`, {
    method: "PUT",
    body,
    headers: { authorization: `Bearer ${edge.token}` },
  });
  expect(res.status, key).toBe(201);
}

/**
 * PUTs local files to a local edge under the given keys, expecting 201 for each.
 *
 * @example
 * await uploadFiles(edge, new Map([["ds/a.mp4", "/tmp/a.mp4"]]));
 */
export async function uploadFiles(edge: LocalEdge, files: Iterable<readonly [string, string]>): Promise<void> {
  for (const [key, file] of files) await uploadBytes(edge, key, new Uint8Array(await readFile(file)));
}

import { readFile } from "node:fs/promises";
import { expect } from "vitest";
import type { LocalEdge } from "../../sdk/dev/index.js";

/**
 * PUTs local files to a local edge under the given keys, expecting 201 for each.
 *
 * @example
 * await uploadFiles(edge, new Map([["ds/a.mp4", "/tmp/a.mp4"]]));
 */
export async function uploadFiles(edge: LocalEdge, files: Iterable<readonly [string, string]>): Promise<void> {
  for (const [key, file] of files) {
    const res = await fetch(`${edge.url}/v1/objects/${key}`, {
      method: "PUT",
      body: new Uint8Array(await readFile(file)),
      headers: { authorization: `Bearer ${edge.token}` },
    });
    expect(res.status, key).toBe(201);
  }
}

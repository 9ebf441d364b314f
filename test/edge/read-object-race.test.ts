import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ObjectChangingError } from "../../edge/errors.js";
import { readObject } from "../../edge/objects/read-object.js";
import { pattern } from "./helpers.js";

/**
 * The real local R2, with an overwrite slipped in after each head() for the first `times`
 * reads: the race a busy bucket produces, made deterministic.
 */
function overwritingAfterHead(key: string, times: number): Env {
  let left = times;
  const bucket = new Proxy(env.BUCKET, {
    get(target, prop) {
      if (prop === "head") {
        return async (k: string) => {
          const meta = await target.head(k);
          if (k === key && left-- > 0) await target.put(k, pattern(5000, 1000 + left));
          return meta;
        };
      }
      const value = Reflect.get(target, prop) as unknown;
      return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { ...env, BUCKET: bucket };
}

describe("readObject when the object changes between head and get", () => {
  it("reads again and answers with one consistent version (headers match the body)", async () => {
    await env.BUCKET.put("race/once.bin", pattern(5000, 1));
    const res = await readObject(overwritingAfterHead("race/once.bin", 1), {
      key: "race/once.bin",
      headers: new Headers({ range: "bytes=0-99" }),
      head: false,
    });
    expect(res.status).toBe(206);
    const current = await env.BUCKET.head("race/once.bin");
    expect(res.headers.get("etag")).toBe(current!.httpEtag);
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(pattern(5000, 1000).slice(0, 100));
  });

  it("gives up with 503 ERR_OBJECT_CHANGING when it never holds still", async () => {
    await env.BUCKET.put("race/always.bin", pattern(5000, 2));
    const err = await readObject(overwritingAfterHead("race/always.bin", 100), {
      key: "race/always.bin",
      headers: new Headers(),
      head: false,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ObjectChangingError);
    expect((err as ObjectChangingError).status).toBe(503);
    expect((err as ObjectChangingError).code).toBe("ERR_OBJECT_CHANGING");
  });
});

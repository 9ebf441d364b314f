import { describe, expect, it } from "vitest";
import { resolveOptions } from "../../sdk/options.js";
import { InvalidOptionError } from "../../sdk/errors.js";

describe("resolveOptions", () => {
  it("fills defaults and freezes the result", () => {
    const o = resolveOptions({}, {});
    expect(o).toMatchObject({
      frames: 16,
      stride: 1,
      align: "exact",
      rank: 0,
      world: 1,
      batch: 1,
      seed: 0,
      epoch: 0,
      format: "rgb24",
      rotate: "none",
      track: 0,
    });
    expect(Object.isFrozen(o)).toBe(true);
  });

  it.each([
    [{ frames: -3 }, "Expected a positive integer for frames but received -3"],
    [{ frames: 1.5 }, "Expected a positive integer for frames but received 1.5"],
    [{ batch: "8" }, 'Expected a positive integer for batch but received "8"'],
    [{ seed: -1 }, "Expected a non-negative integer for seed but received -1"],
    [{ size: [224] }, "Expected [height, width] for size but received an array of length 1"],
    [{ size: [224, 0] }, "Expected a positive integer for size[1] but received 0"],
    [{ device: "gpu" }, 'Expected "cpu", "auto" or "cuda:N" for device but received "gpu"'],
    [{ align: "middle" }, 'Expected "keyframe" or "exact" for align but received "middle"'],
    [{ rank: 2, world: 2 }, "Expected rank below world (2) but received 2"],
    [{ rotate: "yes" }, 'Expected "none" or "auto" for rotate but received "yes"'],
    [{ track: -1 }, "Expected a non-negative integer for track but received -1"],
    [{ onError: 3 }, "Expected a function for onError but received 3"],
    [{ frame: 3 }, 'Expected only known options but received "frame"'],
    [{ cache: "not a url" }, 'Expected an http(s) URL for cache but received "not a url"'],
  ])("rejects %j with a message that says what was expected and what came", (input, message) => {
    let thrown: unknown;
    try {
      resolveOptions(input as never, {});
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(InvalidOptionError);
    expect((thrown as InvalidOptionError).code).toBe("ERR_INVALID_OPTION");
    expect((thrown as Error).message).toBe(message);
  });

  it("takes rank and world from RANK and WORLD_SIZE unless given", () => {
    expect(resolveOptions({}, { RANK: "3", WORLD_SIZE: "4" })).toMatchObject({ rank: 3, world: 4 });
    expect(resolveOptions({ rank: 0, world: 2 }, { RANK: "3", WORLD_SIZE: "4" })).toMatchObject({ rank: 0, world: 2 });
    expect(() => resolveOptions({}, { RANK: "x" })).toThrow(
      'Expected a non-negative integer for RANK but received "x"',
    );
  });

  it("takes the token from EC_TOKEN", () => {
    expect(resolveOptions({}, { EC_TOKEN: "t" }).token).toBe("t");
  });

  it("turns the local data plane off for EC_CACHE_LOCAL=0 unless cacheLocal is given", () => {
    expect(resolveOptions({}, { EC_CACHE_LOCAL: "0" }).cacheLocal).toBe(false);
    expect(resolveOptions({ cacheLocal: true }, { EC_CACHE_LOCAL: "0" }).cacheLocal).toBe(true);
    expect(resolveOptions({}, { EC_CACHE_LOCAL: "1" }).cacheLocal).toBeUndefined();
  });

  it("picks what the bucket sources read from the environment, and nothing else", () => {
    const o = resolveOptions({}, { AWS_REGION: "eu-west-1", R2_ACCOUNT_ID: "a", EC_TOKEN: "t", PATH: "/bin" });
    expect(o.source.bucket.env).toEqual({ AWS_REGION: "eu-west-1", R2_ACCOUNT_ID: "a" });
  });

  it("gives the sources their own slice, the bucket options apart", () => {
    const o = resolveOptions(
      { cache: "http://127.0.0.1:7070", region: "auto", frames: 8, batch: 2 },
      { EC_TOKEN: "t" },
    );
    expect(o.source).toEqual({
      cache: "http://127.0.0.1:7070",
      token: "t",
      cacheBytes: 256 << 20,
      rank: 0,
      knownEdges: expect.any(String),
      bucket: { region: "auto", env: {} },
    });
    expect(resolveOptions({}, { EC_KNOWN_EDGES: "/k/known-edges.json" }).source.knownEdges).toBe("/k/known-edges.json");
    expect(o).not.toHaveProperty("region");
  });

  it("rejects a non-object", () => {
    expect(() => resolveOptions(7 as never, {})).toThrow("Expected an options object but received 7");
  });
});

import { describe, expect, test } from "vitest";
import {
  DEFAULT_LABELERS,
  labelClip,
  LabelerFailedError,
  LabelOptionError,
  registerLabeler,
  resolveLabelers,
  type Labeler,
  type LabelerFactory,
  type VideoFrame,
} from "../../../sdk/labels/index.js";

const frames: VideoFrame[] = [0, 0, 0].map(() => ({
  format: "gray",
  width: 4,
  height: 4,
  data: new Uint8Array(16).fill(90),
}));
const info = { key: "a.mp4", start: 0, frames: 3, stride: 1 };

describe("resolveLabelers", () => {
  test("true runs every built-in; a list or object runs exactly what it names", () => {
    expect(resolveLabelers(true).map((l) => l.name)).toEqual([...DEFAULT_LABELERS]);
    expect(DEFAULT_LABELERS).toEqual([
      "integrity",
      "black",
      "frozen",
      "scene-cut",
      "motion",
      "letterbox",
      "conformance",
    ]);
    expect(resolveLabelers(["black", "motion"]).map((l) => l.name)).toEqual(["black", "motion"]);
    expect(resolveLabelers({ black: true, frozen: false, motion: { low: 2 } }).map((l) => l.name)).toEqual([
      "black",
      "motion",
    ]);
    expect(resolveLabelers(false)).toEqual([]);
  });

  test("bad names and thresholds fail before any frame is read, saying what was expected", () => {
    expect(() => resolveLabelers(["blak"])).toThrow(LabelOptionError);
    expect(() => resolveLabelers(["blak"])).toThrow(
      /Expected a registered labeler \(integrity, black.*\) but received "blak"/,
    );
    expect(() => resolveLabelers({ black: { maxRatio: 3 } })).toThrow(
      /Expected a number from 0 to 1 for maxRatio but received 3/,
    );
    expect(() => resolveLabelers({ black: { maxRato: 0.1 } })).toThrow(
      /Expected only the options .* but received "maxRato"/,
    );
    expect(() => resolveLabelers({ motion: { severity: "loud" } })).toThrow(LabelOptionError);
    expect(() => resolveLabelers({ black: 7 } as never)).toThrow(/labels\.black but received 7/);
    expect(() => resolveLabelers("black" as never)).toThrow(/but received "black"/);
  });

  test("settings change the fingerprint; equal settings in any order do not", () => {
    const [a] = resolveLabelers({ conformance: { width: 1, height: 2 } });
    const [b] = resolveLabelers({ conformance: { height: 2, width: 1 } });
    const [c] = resolveLabelers({ conformance: { height: 2, width: 3 } });
    expect(a!.fingerprint).toBe(b!.fingerprint);
    expect(a!.fingerprint).not.toBe(c!.fingerprint);
  });
});

describe("user labelers", () => {
  test("a plain function tags by default and fails the clip only when it says valid: false", async () => {
    const labelers = resolveLabelers({
      bright: (f) => ({ flags: f.length > 2 ? ["long"] : [], values: { n: f.length } }),
      strict: () => ({ flags: ["nope"], valid: false }),
    });
    const labels = await labelClip(frames, info, labelers);
    expect(labels.results.bright).toEqual({ valid: true, flags: ["long"], values: { n: 3 } });
    expect(labels.valid).toBe(false);
    expect(labels.flags).toEqual(["long", "nope"]);
  });

  test("a class instance and a registered factory run with their own severity, sharing the analysis", async () => {
    let analyses = 0;
    class Gray implements Labeler {
      readonly name = "gray";
      readonly severity = "fail" as const;
      readonly fingerprint = "gray@1";
      label(_f: readonly VideoFrame[], _i: unknown, ctx: { analysis(): { frames: readonly { mean: number }[] } }) {
        const a = ctx.analysis();
        analyses++;
        return { flags: a.frames.every((s) => s.mean === 90) ? ["gray"] : [] };
      }
    }
    const registry = new Map<string, LabelerFactory>();
    registerLabeler("gray", () => new Gray(), registry);
    const labelers = [...resolveLabelers(["gray"], registry), ...resolveLabelers(["black", "frozen"])];
    const labels = await labelClip(frames, info, labelers);
    expect(labels.results.gray).toEqual({ valid: false, flags: ["gray"], values: {} });
    expect(labels.valid).toBe(false);
    expect(analyses).toBe(1);
    expect(() => registerLabeler("Bad Name", () => new Gray(), registry)).toThrow(/kebab-case/);
  });

  test("a labeler that throws or returns junk is reported by name", async () => {
    const boom = resolveLabelers({
      boom: () => {
        throw new Error("kaput");
      },
    });
    await expect(labelClip(frames, info, boom)).rejects.toThrow(LabelerFailedError);
    await expect(labelClip(frames, info, boom)).rejects.toThrow(/labeler "boom": kaput/);
    const junk = resolveLabelers({ junk: () => ({ values: { x: { y: 1 } } }) as never });
    await expect(labelClip(frames, info, junk)).rejects.toThrow(/values\.x to be a number/);
  });
});

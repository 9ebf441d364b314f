import { describe, expect, it } from "vitest";

/**
 * The names `import ... from "ec"` gives at run time (types aside): what a user calls. A name
 * added here is a promise to users; the rest belongs in sdk/internal.ts (`ec/internal`).
 */
const PUBLIC = [
  "Checkpoint",
  "ClipError",
  "Dataset",
  "DirLabelCache",
  "EcError",
  "EdgeLabelCache",
  "InvalidOptionError",
  "KindUnsupportedError",
  "ResumeError",
  "SdkError",
  "SdkErrorCode",
  "StreamStats",
  "UnsupportedSourceError",
  "contactSheet",
  "createLabelStage",
  "labelerFromFunction",
  "mergeCheckpoints",
  "open",
  "registerLabeler",
  "registerShuffle",
  "registerSource",
];

describe("the SDK's public surface", () => {
  it("exports what a user calls and nothing of the pipeline's insides", async () => {
    const sdk = await import("../../sdk/index.js");
    expect(Object.keys(sdk).sort()).toEqual(PUBLIC);
  });

  it("keeps the rest behind ec/internal, the public names included", async () => {
    const internal = await import("../../sdk/internal.js");
    for (const name of [...PUBLIC, "resolveOptions", "resolveLabelers", "labelClip", "MemoryLabelCache"])
      expect(internal).toHaveProperty(name);
  });
});

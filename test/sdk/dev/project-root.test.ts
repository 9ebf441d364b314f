import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { projectRoot, stateRoot, varsRoot } from "../../../sdk/dev/project-root.js";

describe("where local state and secrets live", () => {
  it("in a checkout: state and .dev.vars stay in the checkout", () => {
    expect(stateRoot("/src/ec", "/home/me/run")).toBe("/src/ec");
    expect(varsRoot("/src/ec", "/home/me/run")).toBe("/src/ec");
    expect(varsRoot()).toBe(projectRoot());
  });

  it("installed under node_modules: nothing is written into the package", () => {
    const installed = "/home/me/proj/node_modules/ec";
    expect(stateRoot(installed, "/home/me/proj")).toBe("/home/me/proj");
    expect(varsRoot(installed, "/home/me/proj")).toBe(join("/home/me/proj", ".ec"));
    expect(varsRoot(installed, "/home/me/proj").startsWith(installed)).toBe(false);
  });
});

import { describe, expect, it } from "vitest";
import { startDevStack, type DevService } from "../../../sdk/dev/services.js";

function service(name: string, log: string[], fail = false): DevService {
  return {
    name,
    async start(_req, before) {
      if (fail) throw new Error(`${name} failed`);
      log.push(`start ${name} after ${Object.keys(before).join(",") || "nothing"}`);
      return { fields: { [name]: `http://${name}` }, stop: async () => void log.push(`stop ${name}`) };
    },
  };
}

describe("startDevStack", () => {
  it("starts in order, merges fields, stops in reverse", async () => {
    const log: string[] = [];
    const stack = await startDevStack({ port: 0, quiet: true }, [service("edge", log), service("cache", log)]);
    expect(stack.fields).toEqual({ edge: "http://edge", cache: "http://cache" });
    await stack.stop();
    expect(log).toEqual(["start edge after nothing", "start cache after edge", "stop cache", "stop edge"]);
  });

  it("stops what started when a later service fails", async () => {
    const log: string[] = [];
    await expect(
      startDevStack({ port: 0, quiet: true }, [service("edge", log), service("cache", log, true)]),
    ).rejects.toThrow("cache failed");
    expect(log).toEqual(["start edge after nothing", "stop edge"]);
  });
});

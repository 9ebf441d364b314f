import { describe, expect, it } from "vitest";
import { parseStreamArgs } from "../../../sdk/cli/stream.js";

describe("ec stream arguments", () => {
  it("maps flags onto open() options", () => {
    const p = parseStreamArgs([
      "http://e/v1/datasets/x",
      "--token",
      "t",
      "--frames",
      "8",
      "--stride",
      "2",
      "--size",
      "224x160",
      "--batch",
      "4",
      "--limit",
      "10",
      "--device",
      "cpu",
      "--json",
      "--step-ms",
      "25",
    ]);
    expect(p).toEqual({
      url: "http://e/v1/datasets/x",
      options: { token: "t", frames: 8, stride: 2, size: [224, 160], batch: 4, limit: 10, device: "cpu" },
      json: true,
      md5: false,
      stepMs: 25,
    });
  });

  it("maps the bucket flags onto open()'s endpoint, region and forcePathStyle", () => {
    const p = parseStreamArgs([
      "s3://b/p",
      "--s3-endpoint",
      "http://127.0.0.1:9000",
      "--region",
      "auto",
      "--path-style",
    ]);
    expect(p.options).toEqual({ endpoint: "http://127.0.0.1:9000", region: "auto", forcePathStyle: true });
  });

  it("maps --rotate and --track", () => {
    expect(parseStreamArgs(["u", "--rotate", "auto", "--track", "1"]).options).toEqual({ rotate: "auto", track: 1 });
  });

  it("passes values through for open() to judge, so its messages name the option", () => {
    expect(parseStreamArgs(["u", "--frames", "abc"]).options).toEqual({ frames: "abc" });
    expect(parseStreamArgs(["u", "--shuffle", "false"]).options).toEqual({ shuffle: false });
  });

  it.each([
    [["u", "--size", "224"], 'Expected HxW (e.g. 224x224) for --size but received "224"'],
    [
      ["u", "--md5"],
      'Expected --format native with --md5 (framemd5 is over the decoder\'s own pixels) but received "rgb24"',
    ],
    [["u", "--step-ms=-1"], 'Expected milliseconds from 0 to 60000 for --step-ms but received "-1"'],
    [["u", "--step-ms", "1.5"], 'Expected milliseconds from 0 to 60000 for --step-ms but received "1.5"'],
    [[], "Expected one dataset URL but received 0"],
  ])("rejects %j", (argv, message) => {
    expect(() => parseStreamArgs(argv)).toThrow(message);
  });
});

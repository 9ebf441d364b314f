import { describe, expect, it } from "vitest";
import { AllowList } from "../../origin-cache/upstream/allow-list.js";

describe("AllowList", () => {
  const allow = new AllowList(["https://edge.example/v1/objects/"]);

  it("parses a URL it has allowed once only, and hands back the same URL", () => {
    const raw = "https://edge.example/v1/objects/a.mp4?exp=1&sig=x";
    const url = allow.check(raw);
    expect(url.pathname).toBe("/v1/objects/a.mp4");
    expect(allow.check(raw)).toBe(url);
  });

  it("keeps refusing what is not under an upstream, however many URLs it remembers", () => {
    for (let i = 0; i < 5000; i++) allow.check(`https://edge.example/v1/objects/${i}.mp4?sig=x`);
    for (let i = 0; i < 2; i++) {
      expect(() => allow.check("https://other.example/v1/objects/a.mp4")).toThrow(
        expect.objectContaining({ code: "ERR_UPSTREAM_NOT_ALLOWED" }),
      );
      expect(() => allow.check("https://edge.example/v1/index/a.mp4")).toThrow(
        expect.objectContaining({ code: "ERR_UPSTREAM_NOT_ALLOWED" }),
      );
    }
    expect(allow.check("https://edge.example/v1/objects/4999.mp4?sig=x").pathname).toBe("/v1/objects/4999.mp4");
  });
});

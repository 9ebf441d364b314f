import { describe, expect, it } from "vitest";
import { hasTransientCode, isTransientStatus, TRANSIENT_ERROR_CODES } from "../../common/transient-errors.js";
import { isTransient, TransientUpstreamError } from "../../origin-cache/upstream/retry.js";
import { OutageWindow } from "../../sdk/source/cache-client.js";

const coded = (code: string, cause?: unknown): Error => Object.assign(new Error(code, { cause }), { code });

describe("one list of transient errors", () => {
  it("a transient code on the error or down its cause chain, HTTP/2 failures included", () => {
    expect(hasTransientCode(coded("ECONNRESET"))).toBe(true);
    expect(hasTransientCode(coded("ERR_HTTP2_STREAM_CANCEL"))).toBe(true);
    expect(
      hasTransientCode(new Error("wrapped", { cause: new Error("again", { cause: coded("UND_ERR_SOCKET") }) })),
    ).toBe(true);
    expect(hasTransientCode(coded("ERR_ETAG_CHANGED"))).toBe(false);
    expect(hasTransientCode("ECONNRESET")).toBe(false);
    expect(hasTransientCode(coded("ERR_UPSTREAM_UNAVAILABLE"))).toBe(false);
    expect(hasTransientCode(coded("ERR_UPSTREAM_UNAVAILABLE"), new Set(["ERR_UPSTREAM_UNAVAILABLE"]))).toBe(true);
  });

  it("408, 429 and 5xx are worth another try; other statuses are final", () => {
    for (const s of [408, 429, 500, 502, 503, 504]) expect(isTransientStatus(s)).toBe(true);
    for (const s of [200, 206, 304, 400, 403, 404, 412, 416]) expect(isTransientStatus(s)).toBe(false);
  });

  it("the origin-cache's retry and the SDK's outage window agree on every listed code", async () => {
    for (const code of TRANSIENT_ERROR_CODES) {
      expect(isTransient(coded(code))).toBe(true);
      let calls = 0;
      const value = await new OutageWindow(5_000).run(async () => {
        if (calls++ === 0) throw coded(code);
        return "ok";
      });
      expect(value).toBe("ok");
    }
    expect(isTransient(new TransientUpstreamError("short body"))).toBe(true);
    expect(isTransient(coded("ERR_ETAG_CHANGED"))).toBe(false);
  });
});

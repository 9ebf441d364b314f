import { describe, expect, it } from "vitest";
import { asSdkError, ClipError, indexError, SdkError, SdkErrorCode } from "../../sdk/errors.js";
import { EcError } from "../../sdk/index.js";
import { S3ErrorCode } from "../../sdk/source/s3/s3-errors.js";

describe("SdkErrorCode: the SDK's one table of codes", () => {
  it("holds distinct ERR_ codes, the S3 source's among them", () => {
    const codes = Object.values(SdkErrorCode);
    expect(new Set(codes).size).toBe(codes.length);
    for (const c of codes) expect(c).toMatch(/^ERR_[A-Z0-9_]+$/);
    for (const c of Object.values(S3ErrorCode)) expect(codes).toContain(c);
  });

  it("asSdkError keeps another part's code and HTTP status, and a key makes a ClipError", () => {
    const cacheError = new EcError("ERR_UPSTREAM_STATUS", "Upstream answered 403", { status: 403 });
    const e = asSdkError(cacheError, SdkErrorCode.ClipFailed, "a.mp4");
    expect(e).toBeInstanceOf(ClipError);
    expect(e).toMatchObject({ code: "ERR_UPSTREAM_STATUS", status: 403, key: "a.mp4", cause: cacheError });
    expect(asSdkError(new Error("boom"), SdkErrorCode.ClipFailed)).toMatchObject({
      code: "ERR_CLIP_FAILED",
      message: "boom",
    });
    const own = new SdkError(SdkErrorCode.ShortRead, "short");
    expect(asSdkError(own, SdkErrorCode.ClipFailed)).toBe(own);
  });

  it("an error index reports its own code, or ERR_INDEX_CORRUPT", () => {
    expect(indexError("a.mp4", { code: "ERR_INDEX_TRUNCATED", message: "moov is cut" })).toMatchObject({
      code: "ERR_INDEX_TRUNCATED",
      message: "a.mp4: moov is cut",
      key: "a.mp4",
    });
    expect(indexError("a.mp4", undefined)).toMatchObject({
      code: "ERR_INDEX_CORRUPT",
      message: "a.mp4: corrupt object",
    });
  });
});

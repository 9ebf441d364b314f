import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { signingKeyId, verifyPath, OBJECTS_ROUTE } from "../../../common/sign.js";
import { main as sign } from "../../../sdk/cli/sign.js";
import { captureOutput } from "../../helpers/capture-output.js";

const SECRET = "cli-sign-test-secret-0123456789";
let saved: NodeJS.ProcessEnv;

beforeEach(() => {
  saved = { ...process.env };
  process.env.EC_SIGNING_KEY = SECRET;
  delete process.env.EC_URL_MAX_TTL_SECONDS;
});
afterEach(() => {
  process.env = saved;
});

describe("ec sign", () => {
  it("signs with a key id the edge picks the key by, for at most the edge's 7-day bound", async () => {
    const ok = await captureOutput(() => sign(["a/b.mp4", "--exp", "600", "--edge", "http://127.0.0.1:1"]));
    expect(ok.code, ok.err).toBe(0);
    const url = new URL(ok.out.trim());
    expect(url.searchParams.get("kid")).toBe(await signingKeyId(SECRET));
    const exp = Number(url.searchParams.get("exp"));
    expect(await verifyPath(SECRET, OBJECTS_ROUTE, "a/b.mp4", exp, url.searchParams.get("sig")!)).toBe(true);

    const long = await captureOutput(() => sign(["a/b.mp4", "--exp", String(8 * 24 * 3600)]));
    expect(long.code).toBe(2);
    expect(long.err).toContain("ERR_INVALID_OPTION");
    process.env.EC_URL_MAX_TTL_SECONDS = "300";
    expect((await captureOutput(() => sign(["a/b.mp4", "--exp", "600"]))).code).toBe(2);
  });
});

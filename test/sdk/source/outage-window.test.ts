import { describe, expect, it } from "vitest";
import { OutageWindow } from "../../../sdk/source/cache-client.js";

function failing(code: string, times: number) {
  let calls = 0;
  return {
    get calls() {
      return calls;
    },
    fn: async () => {
      calls++;
      if (calls <= times) throw Object.assign(new Error(code), { code });
      return "ok";
    },
  };
}

describe("OutageWindow: reads wait out a short outage together", () => {
  it("retries connection failures and an upstream the cache gave up on, until they pass", async () => {
    const w = new OutageWindow(5_000);
    const refused = failing("ECONNREFUSED", 3);
    await expect(w.run(refused.fn)).resolves.toBe("ok");
    expect(refused.calls).toBe(4);
    const upstream = failing("ERR_UPSTREAM_UNAVAILABLE", 2);
    await expect(w.run(upstream.fn)).resolves.toBe("ok");
    expect(upstream.calls).toBe(3);
  });

  it("never retries what is not transient", async () => {
    const changed = failing("ERR_ETAG_CHANGED", 1);
    await expect(new OutageWindow(5_000).run(changed.fn)).rejects.toMatchObject({ code: "ERR_ETAG_CHANGED" });
    expect(changed.calls).toBe(1);
  });

  it("shares one window: once the outage is older than it, later reads fail at once; a success ends it", async () => {
    const w = new OutageWindow(300);
    const t0 = Date.now();
    await expect(w.run(failing("ECONNREFUSED", 1e9).fn)).rejects.toMatchObject({ code: "ECONNREFUSED" });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(100); // it retries until the window ends
    await new Promise((r) => setTimeout(r, 300 - (Date.now() - t0)));
    // The outage is now older than the window: a read that starts now gets one try.
    const late = failing("ECONNREFUSED", 1e9);
    const t1 = Date.now();
    await expect(w.run(late.fn)).rejects.toMatchObject({ code: "ECONNREFUSED" });
    expect(late.calls).toBe(1);
    expect(Date.now() - t1).toBeLessThan(150);
    await expect(w.run(async () => "up")).resolves.toBe("up");
    const fresh = failing("ECONNREFUSED", 2);
    await expect(w.run(fresh.fn)).resolves.toBe("ok");
  });
});

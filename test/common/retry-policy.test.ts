import { describe, expect, it } from "vitest";
import { backoffDelay, retry, RetryWindow, TransientError } from "../../common/retry-policy.js";

const quick = { retries: 2, minDelayMs: 1, maxDelayMs: 2 };
const coded = (code: string): Error => Object.assign(new Error(code), { code });

describe("one retry policy", () => {
  it("backs off exponentially with full jitter, up to its cap", () => {
    for (let i = 0; i < 200; i++) {
      const d = backoffDelay(3, { minDelayMs: 50, maxDelayMs: 1000 });
      expect(d).toBeGreaterThanOrEqual(0);
      expect(d).toBeLessThan(400);
      expect(backoffDelay(10, { minDelayMs: 50, maxDelayMs: 1000 })).toBeLessThan(1000);
    }
  });

  it("retries transient failures within the budget, then gives up with the caller's error", async () => {
    let calls = 0;
    const failing = retry(
      async () => {
        calls++;
        throw new TransientError("short body");
      },
      quick,
      { giveUp: (err, attempts) => Object.assign(new Error(`gave up after ${attempts}`), { cause: err }) },
    );
    await expect(failing).rejects.toThrow("gave up after 3");
    expect(calls).toBe(3);
    let n = 0;
    await expect(retry(async () => (n++ < 2 ? Promise.reject(coded("ECONNRESET")) : "ok"), quick)).resolves.toBe("ok");
  });

  it("never retries what is not transient", async () => {
    let calls = 0;
    const changed = retry(async () => {
      calls++;
      throw coded("ERR_ETAG_CHANGED");
    }, quick);
    await expect(changed).rejects.toMatchObject({ code: "ERR_ETAG_CHANGED" });
    expect(calls).toBe(1);
  });

  it("does not count an attempt that moved bytes against the budget", async () => {
    let calls = 0;
    const value = await retry(
      async () => {
        if (++calls < 6) throw new TransientError("reset mid-body");
        return "done";
      },
      quick,
      { progressed: () => true },
    );
    expect(value).toBe("done");
    expect(calls).toBe(6);
  });

  it("a window shared by its callers: fails at once once the outage is older than it", async () => {
    const w = new RetryWindow(50, { backoff: { minDelayMs: 1, maxDelayMs: 5 } });
    let calls = 0;
    await expect(
      w.run(async () => {
        calls++;
        throw coded("ECONNREFUSED");
      }),
    ).rejects.toMatchObject({ code: "ECONNREFUSED" });
    expect(calls).toBeGreaterThan(1);
    let late = 0;
    await expect(
      w.run(async () => {
        late++;
        throw coded("ECONNREFUSED");
      }),
    ).rejects.toMatchObject({ code: "ECONNREFUSED" });
    expect(late).toBe(1);
    await expect(w.run(async () => "up")).resolves.toBe("up");
  });
});

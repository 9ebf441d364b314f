import { describe, expect, it } from "vitest";
import { Limiter, mapLimit } from "../../common/limiter.js";

const later = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

describe("Limiter", () => {
  it("a caller arriving between a release and the waiter's wake-up never exceeds the limit", async () => {
    const limiter = new Limiter(1);
    let inside = 0;
    let peak = 0;
    const enter = (): void => {
      inside++;
      peak = Math.max(peak, inside);
    };
    const briefly = (): Promise<void> => {
      enter();
      return later(5).then(() => void inside--);
    };

    let open!: () => void;
    let aStarted!: () => void;
    const started = new Promise<void>((r) => (aStarted = r));
    const gate = new Promise<void>((r) => (open = r));
    // A holds the slot; its work settles the promise the limiter awaits.
    const aWork = gate.then(() => void inside--);
    const a = limiter.run(() => {
      enter();
      aStarted();
      return aWork;
    });
    const b = limiter.run(briefly); // queued behind A
    await started;
    // C arrives in the very turn A's slot is given back: after the limiter's own reaction to A's
    // end, before B's wake-up has run.
    let c: Promise<void> | undefined;
    void aWork.then(() => (c = limiter.run(briefly)));
    open();
    await a;
    await b;
    await c;
    expect(peak).toBe(1);
    expect(limiter.peak).toBe(1);
    expect(limiter.active).toBe(0);
  });

  it("hands slots out in arrival order and keeps at most `max` at once", async () => {
    const limiter = new Limiter(3);
    const order: number[] = [];
    let inside = 0;
    let peak = 0;
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        limiter.run(async () => {
          order.push(i);
          peak = Math.max(peak, ++inside);
          await later(1 + (i % 3));
          inside--;
        }),
      ),
    );
    expect(order).toEqual([...Array(20).keys()]);
    expect(peak).toBe(3);
    expect(limiter.peak).toBe(3);
    expect(limiter.active).toBe(0);
  });

  it("hands a freed slot to the lowest turn waiting, in arrival order among equal turns and after every numbered one without", async () => {
    const limiter = new Limiter(1);
    const order: string[] = [];
    const first = await limiter.acquire();
    // Arrive out of turn while the one slot is taken (as later clips reach their decode first).
    const runs = [
      limiter.run(async () => void order.push("none"), undefined),
      limiter.run(async () => void order.push("5"), 5),
      limiter.run(async () => void order.push("2"), 2),
      limiter.run(async () => void order.push("5 again"), 5),
      limiter.run(async () => void order.push("-inf"), Number.NEGATIVE_INFINITY),
    ];
    first();
    await Promise.all(runs);
    expect(order).toEqual(["-inf", "2", "5", "5 again", "none"]);
    expect(limiter.active).toBe(0);
  });

  it("gives the slot back when the work fails, and a second release does nothing", async () => {
    const limiter = new Limiter(1);
    await expect(limiter.run(() => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    expect(limiter.active).toBe(0);
    const release = await limiter.acquire();
    release();
    release();
    expect(limiter.active).toBe(0);
    const [r1, r2] = [await limiter.acquire(), limiter.acquire()];
    expect(limiter.active).toBe(1);
    r1();
    (await r2)();
    expect(limiter.active).toBe(0);
  });

  it("rejects a limit that is not a positive integer", () => {
    for (const bad of [0, -1, 1.5, Number.NaN]) {
      expect(() => new Limiter(bad)).toThrow(
        expect.objectContaining({
          code: "ERR_INVALID_ARGUMENT",
          message: expect.stringMatching(/^Expected a positive integer/),
        }),
      );
    }
  });
});

describe("mapLimit", () => {
  it("keeps each result at its item's index with at most `limit` calls in flight", async () => {
    let active = 0;
    let peak = 0;
    const out = await mapLimit([5, 1, 4, 2, 3, 0], 3, async (ms) => {
      peak = Math.max(peak, ++active);
      await later(ms);
      active--;
      return ms * 10;
    });
    expect(out).toEqual([50, 10, 40, 20, 30, 0]);
    expect(peak).toBe(3);
  });

  it("rejects with the first call's error", async () => {
    await expect(
      mapLimit([1, 2], 2, async (x) => {
        if (x === 2) throw new Error("two");
        return x;
      }),
    ).rejects.toThrow("two");
  });
});

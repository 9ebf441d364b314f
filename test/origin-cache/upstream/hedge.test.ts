import type { Dispatcher } from "undici";
import { describe, expect, it } from "vitest";
import { hedged } from "../../../origin-cache/upstream/hedge.js";

const answer = { statusCode: 206 } as Dispatcher.ResponseData;

describe("hedged", () => {
  it("sends a request nothing can cancel without a signal, so undici registers no abort listener", async () => {
    const signals: (AbortSignal | undefined)[] = [];
    const res = await hedged(async (signal) => {
      signals.push(signal);
      return answer;
    }, undefined);
    expect(res).toBe(answer);
    expect(signals).toEqual([undefined]);
  });

  it("gives the request a signal when a hedge or an outer signal may cancel it", async () => {
    const signals: (AbortSignal | undefined)[] = [];
    const send = async (signal: AbortSignal | undefined) => {
      signals.push(signal);
      return answer;
    };
    await hedged(send, 1000);
    await hedged(send, undefined, undefined, new AbortController().signal);
    expect(signals).toHaveLength(2);
    for (const s of signals) expect(s).toBeInstanceOf(AbortSignal);
  });

  it("still forwards an outer abort to the request", async () => {
    const outer = new AbortController();
    const sent = hedged(
      (signal) =>
        new Promise<Dispatcher.ResponseData>((_resolve, reject) =>
          signal?.addEventListener("abort", () => reject(signal.reason)),
        ),
      undefined,
      undefined,
      outer.signal,
    );
    outer.abort(new Error("gone"));
    await expect(sent).rejects.toThrow("gone");
  });
});

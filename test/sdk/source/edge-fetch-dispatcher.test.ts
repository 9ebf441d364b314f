import { Agent, getGlobalDispatcher, interceptors, ProxyAgent, setGlobalDispatcher } from "undici";
import { afterEach, describe, expect, it } from "vitest";
import { ownsDispatcher } from "../../../sdk/source/edge-fetch.js";

describe("ownsDispatcher", () => {
  const installed = getGlobalDispatcher();
  afterEach(() => setGlobalDispatcher(installed));

  it("takes its own HTTP/2 agent over the option-less Agent that loading undici installs", () => {
    // Importing undici (above) has installed its default: that is nobody's choice of proxy or CA.
    expect(installed.constructor.name).toBe("Agent");
    expect(ownsDispatcher()).toBe(true);
    setGlobalDispatcher(new Agent());
    expect(ownsDispatcher()).toBe(true);
  });

  it("keeps a dispatcher its user set up: TLS options, a proxy, interceptors", () => {
    setGlobalDispatcher(new Agent({ connect: { rejectUnauthorized: false } }));
    expect(ownsDispatcher()).toBe(false);
    setGlobalDispatcher(new Agent({ connections: 4 }));
    expect(ownsDispatcher()).toBe(false);
    setGlobalDispatcher(new ProxyAgent("http://127.0.0.1:9"));
    expect(ownsDispatcher()).toBe(false);
    setGlobalDispatcher(new Agent().compose(interceptors.retry()));
    expect(ownsDispatcher()).toBe(false);
  });

  it("takes its own agent whenever its caller gives TLS options", () => {
    setGlobalDispatcher(new ProxyAgent("http://127.0.0.1:9"));
    expect(ownsDispatcher({ ca: "x" })).toBe(true);
  });
});

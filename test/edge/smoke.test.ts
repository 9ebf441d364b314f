import { env, SELF } from "cloudflare:test";
import { expect, it } from "vitest";

it("health", async () => {
  const res = await SELF.fetch("http://edge/v1/health");
  expect(res.status).toBe(200);
  await env.BUCKET.put("a", "hello");
  expect(await (await env.BUCKET.get("a"))!.text()).toBe("hello");
});

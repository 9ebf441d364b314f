import { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import { describe, expect, it, vi } from "vitest";
import { NotFoundError } from "../../edge/errors.js";
import { renderError } from "../../edge/http/error-response.js";

function appThrowing(err: unknown): Hono {
  const app = new Hono();
  app.onError(renderError);
  app.get("/", () => {
    throw err;
  });
  return app;
}

describe("renderError", () => {
  it("an EdgeError → its status and the one JSON error shape", async () => {
    const res = await appThrowing(new NotFoundError("No object")).request("/");
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: { code: "ERR_NOT_FOUND", message: "No object" } });
  });

  it("anything else → a 500 that leaks nothing", async () => {
    const log = vi.spyOn(console, "error").mockImplementation(() => undefined);
    const res = await appThrowing(new Error("db password is hunter2")).request("/");
    expect(res.status).toBe(500);
    const text = await res.text();
    expect(JSON.parse(text)).toEqual({ error: { code: "ERR_INTERNAL", message: "Internal error" } });
    expect(text).not.toContain("hunter2");
    expect(log).toHaveBeenCalled();
    log.mockRestore();
  });

  it("Hono's own 4xx HTTPException keeps its status", async () => {
    const res = await appThrowing(new HTTPException(413, { message: "too big" })).request("/");
    expect(res.status).toBe(413);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("ERR_BAD_REQUEST");
  });
});

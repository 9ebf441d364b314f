import { expect, it } from "vitest";
it("node", () => expect(1 + 1).toBe(2));

import { describe, expect, it } from "vitest";
import { directoriesInReach } from "../../common/dataset-table/budget.js";
import { headOf } from "../../common/dataset-table/generation.js";
import type { TableDirectoryRefV1 } from "../../common/schema/index.js";

const dir = (name: string, first: string, last: string): TableDirectoryRefV1 => ({
  name,
  sha256: "x",
  first,
  last,
  pages: 256,
  count: 256_000,
  bytes: 0,
});
const head = headOf("r", 5, 0, 128 << 20, [
  dir("1-0", "r/a", "r/f"),
  dir("1-1", "r/g", "r/m"),
  dir("1-2", "r/n", "r/z"),
]);
const keys = (prefix: string, n: number) =>
  Array.from({ length: n }, (_, i) => `r/${prefix}-${String(i).padStart(4, "0")}`);

describe("the directory pages a generation works in", () => {
  it("takes the next directory page where the keys taken before it may leave budget", async () => {
    // A sweep resumed near the end of a directory page: its 213 keys cluster 3-4 to a page, so
    // their pages cost far less than one page per key, and the budget left reaches the next one.
    const reach = directoriesInReach(head, [...keys("e", 213), ...keys("h", 300), ...keys("p", 300)], 373, 256);
    expect(reach.directories).toEqual([0, 1]);
    expect(reach.keys).toHaveLength(513);
  });
});

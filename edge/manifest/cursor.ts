import { z } from "zod";
import { BadRequestError } from "../errors.js";

/**
 * The manifest's opaque cursor: R2's list cursor plus the id the next page's first shard
 * takes, so shard ids stay unique across pages.
 */
const Cursor = z.object({ r2: z.string().min(1), shard: z.number().int().nonnegative() });
export type ManifestCursor = z.infer<typeof Cursor>;

export function encodeCursor(cursor: ManifestCursor): string {
  return btoa(JSON.stringify(cursor)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** Parses a client-sent cursor; 400 ERR_BAD_REQUEST when it is not one this edge made. */
export function decodeCursor(text: string): ManifestCursor {
  try {
    return Cursor.parse(JSON.parse(atob(text.replace(/-/g, "+").replace(/_/g, "/"))));
  } catch (cause) {
    throw new BadRequestError(
      `Expected a cursor from a previous manifest page but received ${JSON.stringify(text.slice(0, 64))}`,
      { cause },
    );
  }
}

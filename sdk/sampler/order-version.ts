/**
 * The epoch order's version, in every plan fingerprint and checkpoint: a checkpoint of another
 * version is refused, not misread. 3: the fingerprint is over the listing's SetDigest and the
 * shard sizes, not each object's clip count, so a dataset table's head gives it. 4: exact clips
 * that reach into the next GOP chain it into their GOP run (another grouping of the shuffle).
 * 5: "shard-buffer" permutes listing pages and shuffles the shards of a window of pages at a
 * time, not every shard at once, so the order's first positions need only the first pages.
 * 6: "shard-buffer" permutes groups of 8 neighbouring pages, then the pages within each group,
 * so a window and the next lie in one run of the listing (one or two directory pages of a table).
 * 7: over a table read page by page, the first round of GOP-run turns is dealt by its turns
 * whether or not the order ends in it (not cut to even the shares), so no rank walks to the
 * round's end before its first clip.
 */
export const ORDER_VERSION = 7;

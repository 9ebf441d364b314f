/**
 * Which block a piece of an object is: (object key, ETag, block index), as the store keys its
 * files and the cache its pulls in flight, so both spell a block the same way.
 */

export interface BlockId {
  readonly key: string;
  readonly etag: string;
  readonly index: number;
}

/**
 * Block `index` of a pinned object version.
 *
 * @example
 * blockId({ key: "/v1/objects/a.mp4", etag: '"e1"' }, 3); // { key: "/v1/objects/a.mp4", etag: '"e1"', index: 3 }
 */
export function blockId(object: { readonly key: string; readonly etag: string }, index: number): BlockId {
  return { key: object.key, etag: object.etag, index };
}

/**
 * The block as one string, for maps keyed by block.
 *
 * @example
 * blockKey({ key: "/v1/objects/a.mp4", etag: '"e1"', index: 3 }); // '3:"e1":/v1/objects/a.mp4'
 */
export function blockKey(id: BlockId): string {
  return `${id.index}:${id.etag}:${id.key}`;
}

import type { IndexErrorV1, IndexV1 } from "../schema/index.js";
import { STREAMED_FORMATS } from "./container.js";
import { IndexErrorCode } from "./errors.js";

/**
 * Why an object contributes nothing to a stream, or undefined when it does: its error record,
 * or ERR_KIND_UNSUPPORTED for bytes of no format ec reads. What `open()` reports per object
 * and `ec inspect` lists, so that no object is skipped without a word.
 *
 * @example
 * const why = notStreamed(index); // { code: "ERR_KIND_UNSUPPORTED", message: "a.mkv is Matroska, …" }
 */
export function notStreamed(index: IndexV1): IndexErrorV1 | undefined {
  if (index.kind === "error")
    return index.error ?? { code: IndexErrorCode.CORRUPT, message: `${index.key} is corrupt` };
  const described = { video: index.video, image: index.image, array: index.array }[
    index.kind as "video" | "image" | "array"
  ];
  if (described) return undefined;
  const what = index.kind === "other" ? "no format ec reads" : `a ${index.kind} its index does not describe`;
  return { code: IndexErrorCode.KIND_UNSUPPORTED, message: `${index.key} is ${what}; ec streams ${STREAMED_FORMATS}` };
}

import { bareEtag, LABEL_SIDECAR_PREFIX, LabelSidecarPathV1, LabelSidecarV1 } from "../../common/schema/labels-v1.js";
import { BadRequestError, NotFoundError, PayloadTooLargeError } from "../errors.js";

/** A clip's labels are a few hundred bytes; anything near this is not a sidecar. */
export const MAX_SIDECAR_BYTES = 256 * 1024;

function bucketKey(path: LabelSidecarPathV1): string {
  return `${LABEL_SIDECAR_PREFIX}${path.config}/${path.etag}/${path.clip}.json`;
}

/**
 * Validates the three path segments of a sidecar route; 400 with what was expected otherwise.
 *
 * @example
 * parseSidecarPath({ config: "0123abcd", etag: "9e1f", clip: "0-16-1" });
 */
export function parseSidecarPath(raw: Record<string, string>): LabelSidecarPathV1 {
  const parsed = LabelSidecarPathV1.safeParse(raw);
  if (!parsed.success) {
    const field = String(parsed.error.issues[0]?.path[0] ?? "path");
    throw new BadRequestError(
      `Expected a label sidecar path {config}/{etag}/{start}-{frames}-{stride} but received ${JSON.stringify(raw[field] ?? "")} as ${field}`,
    );
  }
  return parsed.data;
}

/**
 * Reads a label sidecar from R2; 404 when absent.
 *
 * @example
 * const sidecar = await readLabelSidecar(env, { config: "0123abcd", etag: "9e1f", clip: "0-16-1" });
 */
export async function readLabelSidecar(env: Env, path: LabelSidecarPathV1): Promise<LabelSidecarV1> {
  const obj = await env.BUCKET.get(bucketKey(path));
  if (!obj) throw new NotFoundError(`No labels stored for ${path.config}/${path.etag}/${path.clip}`);
  // Written only after validation below, so what comes back parses; parse anyway to return a typed value.
  return LabelSidecarV1.parse(await obj.json());
}

/**
 * Validates a sidecar body against the schema and its path, then stores it. Later writes of
 * the same path replace earlier ones: any rank's result is as good as another's.
 *
 * @example
 * await writeLabelSidecar(env, path, await req.text());
 */
export async function writeLabelSidecar(env: Env, path: LabelSidecarPathV1, body: string): Promise<LabelSidecarV1> {
  const bytes = new TextEncoder().encode(body).byteLength;
  if (bytes > MAX_SIDECAR_BYTES) throw new PayloadTooLargeError(MAX_SIDECAR_BYTES, bytes);
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch (cause) {
    throw new BadRequestError("Expected a JSON label sidecar but received text that does not parse", { cause });
  }
  const parsed = LabelSidecarV1.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new BadRequestError(
      `Expected a label sidecar (version 1) but ${issue.path.join(".") || "the body"}: ${issue.message}`,
    );
  }
  const s = parsed.data;
  const etag = bareEtag(s.etag);
  if (s.config !== path.config || etag !== path.etag || `${s.start}-${s.frames}-${s.stride}` !== path.clip) {
    throw new BadRequestError(
      `Expected a sidecar for ${path.config}/${path.etag}/${path.clip} but received one for ${s.config}/${etag}/${s.start}-${s.frames}-${s.stride}`,
    );
  }
  await env.BUCKET.put(bucketKey(path), JSON.stringify(s), { httpMetadata: { contentType: "application/json" } });
  return s;
}

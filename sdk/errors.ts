import { EcError, type EcErrorOptions } from "../common/errors.js";

/**
 * Stable codes of the SDK and the `ec` CLI: the one table of them. Callers branch on these,
 * never on messages. Errors of other parts (origin-cache, native, index, manifest) keep their
 * own codes when the SDK reports them (see `relayedCode`).
 */
export const SdkErrorCode = {
  /** An option (or RANK/WORLD_SIZE) is not what it must be; thrown before any I/O. */
  InvalidOption: "ERR_INVALID_OPTION",
  /** The dataset URL's scheme has no registered source. */
  SourceUnsupported: "ERR_SOURCE_UNSUPPORTED",
  DatasetNotFound: "ERR_DATASET_NOT_FOUND",
  /** A Dataset iterates once. */
  AlreadyIterated: "ERR_ALREADY_ITERATED",
  ResumeMismatch: "ERR_RESUME_MISMATCH",
  ResumeIncomplete: "ERR_RESUME_INCOMPLETE",
  ResumeInvalid: "ERR_RESUME_INVALID",
  /** The object's kind or container is not streamed by this version. */
  KindUnsupported: "ERR_KIND_UNSUPPORTED",
  /** `tableCacheBytes` cannot hold one window of table pages and a directory page (raise it). */
  TableCacheTooSmall: "ERR_TABLE_CACHE_TOO_SMALL",
  /** An object is no longer in the dataset's manifest. */
  ObjectGone: "ERR_OBJECT_GONE",
  /** An object's ETag is no longer the listed one (the origin-cache uses the same code). */
  EtagChanged: "ERR_ETAG_CHANGED",
  /** An index says the object is corrupt without a code of its own. */
  IndexCorrupt: "ERR_INDEX_CORRUPT",
  /** A clip failed for a reason with no code of its own. */
  ClipFailed: "ERR_CLIP_FAILED",
  ShortRead: "ERR_SHORT_READ",
  DecodeShort: "ERR_DECODE_SHORT",
  ArrayDtype: "ERR_ARRAY_DTYPE",
  ArrayLayout: "ERR_ARRAY_LAYOUT",
  EmptyBatch: "ERR_EMPTY_BATCH",
  BatchLayout: "ERR_BATCH_LAYOUT",
  /** `batch.frames` read after `batch.release()`: its memory may hold another batch by now. */
  BatchReleased: "ERR_BATCH_RELEASED",
  /** An origin-cache answered with an error that is no ec error body. */
  CacheHttp: "ERR_CACHE_HTTP",
  CacheUnreachable: "ERR_CACHE_UNREACHABLE",
  /** An origin-cache answer (a compact locate line) that is not of its wire shape. */
  CacheProtocol: "ERR_CACHE_PROTOCOL",
  S3UrlInvalid: "ERR_S3_URL_INVALID",
  S3PublicUrl: "ERR_S3_PUBLIC_URL",
  S3CredentialsMissing: "ERR_S3_CREDENTIALS_MISSING",
  S3CredentialsInvalid: "ERR_S3_CREDENTIALS_INVALID",
  S3AccessDenied: "ERR_S3_ACCESS_DENIED",
  S3WrongRegion: "ERR_S3_WRONG_REGION",
  S3BucketNotFound: "ERR_S3_BUCKET_NOT_FOUND",
  S3ObjectNotFound: "ERR_S3_OBJECT_NOT_FOUND",
  S3RequestFailed: "ERR_S3_REQUEST_FAILED",
  LabelOption: "ERR_LABEL_OPTION",
  LabelFrame: "ERR_LABEL_FRAME",
  LabelerFailed: "ERR_LABELER_FAILED",
  LabelCache: "ERR_LABEL_CACHE",
  PushFailed: "ERR_PUSH_FAILED",
  DevStart: "ERR_DEV_START",
  DevExited: "ERR_DEV_EXITED",
  DevConfig: "ERR_DEV_CONFIG",
  /** `ec dev` / `ec demo` in an installed package without its optional peer wrangler. */
  DevWranglerMissing: "ERR_DEV_WRANGLER_MISSING",
  /** A contact sheet of frames it cannot draw (e.g. .npy arrays). */
  PreviewFormat: "ERR_PREVIEW_FORMAT",
  /** CLI: the arguments do not parse (Node's ERR_PARSE_ARGS_* codes report as they are). */
  ParseArgs: "ERR_PARSE_ARGS",
  /** CLI: what a command reports for a failure that carries no ec code. */
  Unexpected: "ERR_UNEXPECTED",
  OpenFailed: "ERR_OPEN_FAILED",
  StreamFailed: "ERR_STREAM_FAILED",
  DecodeFailed: "ERR_DECODE_FAILED",
  IndexFetch: "ERR_INDEX_FETCH",
  NotFound: "ERR_NOT_FOUND",
  NotVideo: "ERR_NOT_VIDEO",
  /** `rotate: "auto"` met a frame layout it cannot turn. */
  RotateUnsupported: "ERR_ROTATE_UNSUPPORTED",
  /** The engine (`ec engine`): a request out of protocol, no shared memory to write batches to, or no room left there. */
  Protocol: "ERR_PROTOCOL",
  ShmUnavailable: "ERR_SHM_UNAVAILABLE",
  ShmFull: "ERR_SHM_FULL",
  /** open(): the dataset holds no object, or only videos shorter than a clip (objects that stream nothing are reported by their own codes). */
  NoClips: "ERR_NO_CLIPS",
  /** The edge has no dataset table for the prefix yet: open() plans from every index and says so once. */
  TableMissing: "ERR_TABLE_MISSING",
  /** `ec index s3://… --publish`: some shard has not recorded all of its chunks; the shards are named. */
  IndexShardsIncomplete: "ERR_INDEX_SHARDS_INCOMPLETE",

  // — raised by the Python client itself (python/src/ec, docs/python.md) —
  /** Every shared-memory slot holds a batch the user still references. */
  RingFull: "ERR_RING_FULL",
  /** The engine process ended before the stream did. */
  EngineExited: "ERR_ENGINE_EXITED",
  /** No engine to start: neither EC_ENGINE nor `ec` on PATH (or no node to run it). */
  EngineNotFound: "ERR_ENGINE_NOT_FOUND",
  /** The engine sent a message out of protocol (a slot it does not have, a shape past the slot, a bad CUDA IPC handle). */
  EngineProtocol: "ERR_ENGINE_PROTOCOL",
  /** The engine speaks another protocol version (sdk/bridge/protocol.ts) than the client; both are named. */
  EngineMismatch: "ERR_ENGINE_MISMATCH",
  /** `state()` or `stats()` of a closed dataset. */
  Closed: "ERR_CLOSED",
  /** `ClipDataset.state_dict()` in a process that cannot see what the loop took (DataLoader workers). */
  StateUnavailable: "ERR_STATE_UNAVAILABLE",
} as const;
export type SdkErrorCode = (typeof SdkErrorCode)[keyof typeof SdkErrorCode];

/** A code set by another part (ERR_CORRUPT_PACKET, ERR_UPSTREAM_STATUS, …) that the SDK reports unchanged. */
export type RelayedErrorCode = string & { readonly relayed: unique symbol };

/**
 * Marks `code` as another part's, to be reported as it is.
 *
 * @example
 * new SdkError(relayedCode(body.error.code), body.error.message, { status: 502 });
 */
export function relayedCode(code: string): RelayedErrorCode {
  return code as RelayedErrorCode;
}

/** Base of every error the SDK throws or reports; callers branch on `code`. */
export class SdkError extends EcError {
  constructor(code: SdkErrorCode | RelayedErrorCode, message: string, options?: EcErrorOptions) {
    super(code, message, options);
    this.name = "SdkError";
  }
}

/** An option (or environment default such as RANK) is not what it must be; thrown before any I/O. */
export class InvalidOptionError extends SdkError {
  constructor(message: string) {
    super("ERR_INVALID_OPTION", message);
    this.name = "InvalidOptionError";
  }
}

/** The dataset URL's scheme has no registered source. */
export class UnsupportedSourceError extends SdkError {
  constructor(url: string, schemes: readonly string[]) {
    super(
      "ERR_SOURCE_UNSUPPORTED",
      `Expected a dataset URL with one of the schemes ${schemes.map((s) => `${s}:`).join(", ")} but received ${JSON.stringify(url)}`,
    );
    this.name = "UnsupportedSourceError";
  }
}

/** The checkpoint given as `resume` does not belong to this dataset and sampling, or misses ranks. */
export class ResumeError extends SdkError {
  constructor(code: "ERR_RESUME_MISMATCH" | "ERR_RESUME_INCOMPLETE" | "ERR_RESUME_INVALID", message: string) {
    super(code, message);
    this.name = "ResumeError";
  }
}

/** One clip could not be produced (corrupt object, failed fetch or decode); it is skipped and reported. */
export class ClipError extends SdkError {
  readonly key: string;
  constructor(code: SdkErrorCode | RelayedErrorCode, key: string, message: string, options?: EcErrorOptions) {
    super(code, `${key}: ${message}`, options);
    this.name = "ClipError";
    this.key = key;
  }
}

/** The object's kind (image, array, …) is not streamed by this version of the SDK. */
export class KindUnsupportedError extends SdkError {
  constructor(key: string, kind: string) {
    super(
      "ERR_KIND_UNSUPPORTED",
      `${key}: objects of kind ${JSON.stringify(kind)} are not streamed yet; video, images (JPEG, PNG, WebP) and .npy arrays are`,
    );
    this.name = "KindUnsupportedError";
  }
}

/** Turns anything thrown into an SdkError, keeping an existing code. */
export function asSdkError(err: unknown, fallbackCode: SdkErrorCode, key?: string): SdkError {
  if (err instanceof SdkError) return err;
  const code = err instanceof EcError ? relayedCode(err.code) : fallbackCode;
  const message = err instanceof Error ? err.message : String(err);
  const options = { cause: err, ...(err instanceof EcError && err.status !== undefined ? { status: err.status } : {}) };
  return key === undefined ? new SdkError(code, message, options) : new ClipError(code, key, message, options);
}

/**
 * The error an index with `kind: "error"` stands for: its own code and message, or
 * ERR_INDEX_CORRUPT where it has none.
 *
 * @example
 * throw indexError("a.mp4", index.error);
 */
export function indexError(
  key: string,
  error: { readonly code: string; readonly message: string } | undefined,
): ClipError {
  return error
    ? new ClipError(relayedCode(error.code), key, error.message)
    : new ClipError(SdkErrorCode.IndexCorrupt, key, "corrupt object");
}

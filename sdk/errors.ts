import { EcError, type EcErrorOptions } from "../common/errors.js";

/** Base of every error the SDK throws or reports; callers branch on `code`. */
export class SdkError extends EcError {
  constructor(code: string, message: string, options?: EcErrorOptions) {
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
  constructor(code: string, key: string, message: string, options?: EcErrorOptions) {
    super(code, `${key}: ${message}`, options);
    this.name = "ClipError";
    this.key = key;
  }
}

/** The object's kind (image, array, …) is not streamed by this version of the SDK. */
export class KindUnsupportedError extends SdkError {
  constructor(key: string, kind: string) {
    super("ERR_KIND_UNSUPPORTED", `${key}: objects of kind ${JSON.stringify(kind)} are not streamed yet; video, images (JPEG, PNG, WebP) and .npy arrays are`);
    this.name = "KindUnsupportedError";
  }
}

/** Turns anything thrown into an SdkError, keeping an existing code. */
export function asSdkError(err: unknown, fallbackCode: string, key?: string): SdkError {
  if (err instanceof SdkError) return err;
  const code = err instanceof EcError ? err.code : fallbackCode;
  const message = err instanceof Error ? err.message : String(err);
  const options = { cause: err, ...(err instanceof EcError && err.status !== undefined ? { status: err.status } : {}) };
  return key === undefined ? new SdkError(code, message, options) : new ClipError(code, key, message, options);
}

import { SdkError } from "../errors.js";

/** A labeler spec, threshold or frame is not what the labeling stage accepts; thrown before any labeling. */
export class LabelOptionError extends SdkError {
  constructor(message: string) {
    super("ERR_LABEL_OPTION", message);
    this.name = "LabelOptionError";
  }
}

/** A frame handed to the labelers has a format or size the labelers cannot read. */
export class LabelFrameError extends SdkError {
  constructor(message: string) {
    super("ERR_LABEL_FRAME", message);
    this.name = "LabelFrameError";
  }
}

/** A labeler threw or returned something that is not a result record. */
export class LabelerFailedError extends SdkError {
  readonly labeler: string;
  constructor(labeler: string, message: string, options?: { cause?: unknown }) {
    super("ERR_LABELER_FAILED", `labeler ${JSON.stringify(labeler)}: ${message}`, options);
    this.name = "LabelerFailedError";
    this.labeler = labeler;
  }
}

/** The label cache (edge sidecar or directory) answered with something unusable. */
export class LabelCacheError extends SdkError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("ERR_LABEL_CACHE", message, options);
    this.name = "LabelCacheError";
  }
}

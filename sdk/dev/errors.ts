import { SdkError } from "../errors.js";

/** A local service (`ec dev`) could not start, or stopped on its own. */
export class DevServiceError extends SdkError {
  constructor(
    code: "ERR_DEV_START" | "ERR_DEV_EXITED" | "ERR_DEV_CONFIG" | "ERR_DEV_WRANGLER_MISSING",
    message: string,
    options?: { cause?: unknown },
  ) {
    super(code, message, options);
    this.name = "DevServiceError";
  }
}

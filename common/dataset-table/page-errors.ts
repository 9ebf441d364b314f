import { EcError } from "../errors.js";

/** A page (or a page's pins) that is no table page this client reads (another format version, or bytes that do not add up). */
export class TablePageFormatError extends EcError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("ERR_TABLE_PAGE_FORMAT", message, options);
    this.name = "TablePageFormatError";
  }
}

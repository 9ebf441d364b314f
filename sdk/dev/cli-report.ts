import { EcError } from "../../common/errors.js";
import { InvalidOptionError } from "../errors.js";

/**
 * Runs a command body and turns a throw into one line on stderr plus an exit code:
 * 2 for usage errors (bad flags or values, with the usage text), 1 for anything else.
 *
 * @example
 * export const main = (argv: string[]) => reportErrors("sign", USAGE, () => sign(argv));
 */
export async function reportErrors(command: string, usage: string, body: () => Promise<number>): Promise<number> {
  try {
    return await body();
  } catch (err) {
    const parseError =
      typeof (err as { code?: unknown }).code === "string" &&
      (err as { code: string }).code.startsWith("ERR_PARSE_ARGS");
    const usageError = err instanceof InvalidOptionError || parseError;
    const code = err instanceof EcError || parseError ? (err as { code: string }).code : "ERR_UNEXPECTED";
    process.stderr.write(
      `ec ${command}: [${code}] ${err instanceof Error ? err.message : String(err)}\n${usageError ? usage : ""}`,
    );
    return usageError ? 2 : 1;
  }
}

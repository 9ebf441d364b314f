import { pino, type Logger, type LevelWithSilent } from "pino";

export type { Logger };

/** Structured JSON logs on stderr; tests pass "silent". */
export function createLogger(level: LevelWithSilent = "info"): Logger {
  return pino({ level, base: { part: "origin-cache" } }, pino.destination(2));
}

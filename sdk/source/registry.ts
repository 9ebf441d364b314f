import { UnsupportedSourceError } from "../errors.js";
import type { DatasetSource, SourceFactory, SourceOptions } from "./source.js";

const sources = new Map<string, SourceFactory>();

/**
 * Makes `open()` accept URLs of a scheme (without the colon), e.g. "r2" or "s3".
 *
 * @example
 * registerSource("s3", async (url, options) => new S3Source(url, options));
 */
export function registerSource(scheme: string, factory: SourceFactory): void {
  sources.set(scheme, factory);
}

/** The source for a dataset URL; a plain absolute path means a local directory. */
export async function openSource(url: string, options: SourceOptions): Promise<DatasetSource> {
  let parsed: URL | undefined;
  if (url.startsWith("/")) parsed = new URL(`file://${url}`);
  else if (URL.canParse(url)) parsed = new URL(url);
  const factory = parsed && sources.get(parsed.protocol.slice(0, -1));
  if (!parsed || !factory) throw new UnsupportedSourceError(url, [...sources.keys()]);
  return factory(parsed, options);
}

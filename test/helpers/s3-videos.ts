/**
 * A loopback S3 bucket (s3rver) holding videos made by ffmpeg at test time, with ffmpeg's own md5
 * of each one's frames: the setup of the tests that stream s3:// URLs end to end.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ffmpegFrameMd5s } from "./ffmpeg-md5.js";
import { type MakeVideoOptions, makeVideo } from "./make-video.js";
import { type S3TestServer, startS3Server } from "./s3-server.js";

export interface S3Videos {
  /** The temp dir the videos were written into (removed by `close`). */
  readonly dir: string;
  readonly s3: S3TestServer;
  /** ffmpeg's md5 of every frame of each stored video, by key (`ffmpegFrameMd5s`). */
  readonly md5s: ReadonlyMap<string, string[]>;
  /** Stops the server and removes the temp dir. */
  close(): Promise<void>;
}

/**
 * Starts s3rver and stores each video under its key in its default bucket; `truncated` also
 * stores the first `bytes` of one of them under another key (a corrupt object).
 *
 * @example
 * const { s3, md5s } = await startS3Videos("ec-s3-x-", { "ds/a.mp4": { codec: "h264", width: 64, height: 48, frames: 20 } },
 *   { truncated: { key: "ds/broken.mp4", of: "ds/a.mp4", bytes: 2000 } });
 */
export async function startS3Videos(
  prefix: string,
  videos: Readonly<Record<string, MakeVideoOptions>>,
  o: { truncated?: { key: string; of: string; bytes: number } } = {},
): Promise<S3Videos> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  const s3 = await startS3Server();
  const close = async () => {
    await s3.close();
    await rm(dir, { recursive: true, force: true });
  };
  const md5s = new Map<string, string[]>();
  try {
    const files = new Map<string, string>();
    for (const [key, options] of Object.entries(videos)) files.set(key, await makeVideo(dir, options));
    for (const [key, file] of files) {
      md5s.set(key, await ffmpegFrameMd5s(file));
      await s3.put(key, await readFile(file));
    }
    const t = o.truncated;
    if (t) await s3.put(t.key, (await readFile(files.get(t.of)!)).subarray(0, t.bytes));
  } catch (e) {
    await close();
    throw e;
  }
  return { dir, s3, md5s, close };
}

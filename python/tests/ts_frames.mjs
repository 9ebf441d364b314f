// The TypeScript consumer's view of a stream, for comparison: one line per frame,
// "key,start,t,md5" of the stacked rgb24 tensor's bytes. Usage: node ts_frames.mjs ROOT URL OPTIONS_JSON
import { createHash } from "node:crypto";
import { pathToFileURL } from "node:url";

const [root, url, optionsJson] = process.argv.slice(2);
const { open } = await import(pathToFileURL(`${root}/dist/sdk/index.js`).href);
const ds = await open(url, JSON.parse(optionsJson));
const lines = [];
for await (const batch of ds) {
  const data = batch.frames.data;
  const perClip = data.byteLength / batch.clips.length;
  batch.clips.forEach((clip, i) => {
    const perFrame = perClip / clip.frames;
    for (let t = 0; t < clip.frames; t++) {
      const at = i * perClip + t * perFrame;
      lines.push(`${clip.key},${clip.start},${t},${createHash("md5").update(data.subarray(at, at + perFrame)).digest("hex")}`);
    }
  });
}
await ds.close();
process.stdout.write(`${lines.join("\n")}\n`);

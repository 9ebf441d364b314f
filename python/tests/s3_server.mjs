// A real S3-compatible server on 127.0.0.1 for the Python tests: the TypeScript tests' s3rver
// (test/helpers/s3-server.ts, with its fixes that make it answer as S3 does), compiled here by
// esbuild. Prints {"endpoint","region","bucket","access_key_id","secret_access_key"} as one
// line, then serves until its stdin closes. Usage: node s3_server.mjs ROOT
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const root = process.argv[2];
const { build } = await import(pathToFileURL(join(root, "node_modules", "esbuild", "lib", "main.js")).href);
// Beside the checkout's node_modules, so s3rver and the AWS SDK resolve from there.
const dir = join(root, ".ec", "python-tests");
mkdirSync(dir, { recursive: true });
const outfile = join(dir, `s3-server-${process.pid}.mjs`);
await build({
  entryPoints: [join(root, "test", "helpers", "s3-server.ts")],
  outfile,
  bundle: true,
  packages: "external",
  platform: "node",
  format: "esm",
  logLevel: "warning",
});
const { startS3Server } = await import(pathToFileURL(outfile).href);
const { rm } = await import("node:fs/promises");
await rm(outfile);
const s3 = await startS3Server();
process.stdout.write(
  `${JSON.stringify({
    endpoint: s3.endpoint,
    region: s3.region,
    bucket: s3.bucket,
    access_key_id: s3.credentials.accessKeyId,
    secret_access_key: s3.credentials.secretAccessKey,
  })}\n`,
);
process.stdin.resume();
process.stdin.on("end", async () => {
  await s3.close();
  process.exit(0);
});

/**
 * A real S3-compatible server (s3rver) on 127.0.0.1, port 0, storing into a temp dir. Tests
 * point the SDK's direct-to-bucket source at it exactly as at R2: SigV4 headers, presigned
 * GETs, ListObjectsV2 paging, multipart uploads.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { createReadStream, type ReadStream } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { CreateBucketCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";

const require = createRequire(import.meta.url);

/** The parts of s3rver's Koa app this helper touches (the package ships no types). */
interface KoaContext {
  method: string;
  path: string;
  query: Record<string, string | string[] | undefined>;
  req: { url?: string };
  get(header: string): string;
  status: number;
  type: string;
  body: unknown;
}
type Middleware = (ctx: KoaContext, next: () => Promise<void>) => Promise<void> | void;
interface S3rverApp {
  middleware: Middleware[];
  store: {
    putObject(object: unknown): Promise<unknown>;
    getMetadata(bucket: string, key: string): Promise<{ etag: string }>;
  };
  run(): Promise<AddressInfo>;
  close(): Promise<void>;
  httpServer?: Server;
}
type S3rverCtor = new (options: Record<string, unknown>) => S3rverApp;
interface StoredObject {
  content: ReadStream | null;
  range?: { start: number; end: number };
}
interface FilesystemStore {
  getObject(bucket: string, key: string, options?: { start?: number; end?: number }): Promise<StoredObject | null>;
  getResourcePath(bucket: string, key: string, resource: string): string;
}
interface V4Module {
  getStringToSign(canonicalRequest: { uri: string }, request: unknown): string;
}

/** s3rver's fixed key pair. */
export const S3_TEST_CREDENTIALS: { readonly accessKeyId: string; readonly secretAccessKey: string } = {
  accessKeyId: "S3RVER",
  secretAccessKey: "S3RVER",
};

const rawPath = new AsyncLocalStorage<string>();
let patched = false;

/**
 * s3rver drops the trailing slash of bucket-level paths ("/bkt/") from the SigV4 canonical
 * URI, so every ListObjectsV2 of the AWS SDK v3 fails its signature check. S3 and R2 sign the
 * path as sent; make s3rver do the same rather than turn signature checks off.
 */
function patchCanonicalUri(): void {
  const v4 = require("@20minutes/s3rver/lib/signature/v4.js") as V4Module;
  const original = v4.getStringToSign.bind(v4);
  v4.getStringToSign = (canonical, request) => {
    const path = rawPath.getStore();
    return original(path === undefined ? canonical : { ...canonical, uri: path }, request);
  };
}

/** Makes s3rver behave as S3 and R2 do where the tests depend on it (once per process). */
function patchServer(): void {
  if (patched) return;
  patched = true;
  patchCanonicalUri();
  patchZeroEndRange();
  patchDesTokens();
}

/**
 * s3rver encrypts ListObjectsV2 continuation tokens with single DES, which OpenSSL 3 only
 * has in its legacy provider, so listing past one page fails with a 500. Three-key DES with
 * one key repeated three times is, bit for bit, single DES, and is in the default provider.
 */
function patchDesTokens(): void {
  const crypto = require("node:crypto") as typeof import("node:crypto");
  const widen = (key: import("node:crypto").CipherKey) => Buffer.concat([key as Buffer, key as Buffer, key as Buffer]);
  const { createCipheriv, createDecipheriv } = crypto;
  const cipher = (
    algorithm: string,
    key: import("node:crypto").CipherKey,
    iv: import("node:crypto").BinaryLike | null,
  ) => (algorithm === "des" ? createCipheriv("des-ede3-cbc", widen(key), iv) : createCipheriv(algorithm, key, iv));
  const decipher = (
    algorithm: string,
    key: import("node:crypto").CipherKey,
    iv: import("node:crypto").BinaryLike | null,
  ) => (algorithm === "des" ? createDecipheriv("des-ede3-cbc", widen(key), iv) : createDecipheriv(algorithm, key, iv));
  Object.assign(crypto, { createCipheriv: cipher, createDecipheriv: decipher });
}

/**
 * s3rver reads `Range: bytes=0-0` as "from 0 to the end" (a falsy end); S3 and R2 send one
 * byte, and one-byte probes (the origin-cache learns ETag and size that way) depend on it.
 */
function patchZeroEndRange(): void {
  const store = (require("@20minutes/s3rver/lib/stores/filesystem.js") as { prototype: FilesystemStore }).prototype;
  const original = store.getObject;
  store.getObject = async function (this: FilesystemStore, bucket, key, options) {
    const object = await original.call(this, bucket, key, options);
    if (object?.content && options?.end === 0) {
      object.content.destroy();
      object.content = createReadStream(this.getResourcePath(bucket, key, "object"), { start: 0, end: 0 });
      object.range = { start: 0, end: 0 };
    }
    return object;
  };
}

function s3ErrorXml(code: string, message: string, extra: Record<string, string> = {}): string {
  const fields = Object.entries({ Code: code, Message: message, ...extra }).map(([k, v]) => `<${k}>${v}</${k}>`);
  return `<?xml version="1.0" encoding="UTF-8"?>\n<Error>${fields.join("")}</Error>`;
}

/** The region a request was signed for, from its Authorization header or X-Amz-Credential. */
function signedRegion(ctx: KoaContext): string | undefined {
  const credential = /Credential=([^,\s]+)/.exec(ctx.get("authorization"))?.[1] ?? ctx.query["X-Amz-Credential"];
  return typeof credential === "string" ? credential.split("/")[2] : undefined;
}

export interface S3TestServerOptions {
  /** Buckets created at start; default ["ec-test"]. */
  buckets?: readonly string[];
  /**
   * The region the server lives in. Requests signed for another are refused the way AWS S3
   * refuses them (400 AuthorizationHeaderMalformed naming the expected region); default: any.
   */
  region?: string;
  /** Requests for which it answers 403 AccessDenied, as a key without that permission gets. */
  deny?: (request: { method: string; path: string }) => boolean;
  /**
   * Called before each request is answered: where it returns a promise, the request waits for
   * it (a client killed meanwhile never gets its answer), as a stalled store would leave it.
   */
  hold?: (request: { method: string; path: string }) => Promise<void> | undefined;
}

export interface S3TestServer {
  /** http://127.0.0.1:PORT (path-style addressing). */
  readonly endpoint: string;
  readonly region: string;
  readonly bucket: string;
  readonly credentials: typeof S3_TEST_CREDENTIALS;
  /** A client signed with the server's credentials, for arranging fixtures. */
  readonly client: S3Client;
  /** HTTP requests the server has received so far (listings, GETs, PUTs, refused ones). */
  readonly requests: number;
  /** ListObjectsV2 requests among them. */
  readonly listings: number;
  /** The path of each GET it has received, in order. */
  readonly gets: readonly string[];
  /** The most requests it has been answering at once since the last `resetPeak()`. */
  readonly peakInFlight: number;
  resetPeak(): void;
  /** Stores an object and returns its quoted ETag. */
  put(key: string, body: Uint8Array | string, bucket?: string): Promise<string>;
  /** Stores many small objects through s3rver's own store, skipping HTTP: bulk fixtures in seconds. */
  seed(objects: readonly { key: string; body: string | Uint8Array }[], bucket?: string): Promise<void>;
  close(): Promise<void>;
}

/**
 * Starts s3rver on loopback with the given buckets.
 *
 * @example
 * const s3 = await startS3Server();
 * await s3.put("clips/a.mp4", await readFile(file));
 * // s3://ec-test/clips with { endpoint: s3.endpoint, region: s3.region, credentials: s3.credentials, forcePathStyle: true }
 * await s3.close();
 */
export async function startS3Server(options: S3TestServerOptions = {}): Promise<S3TestServer> {
  patchServer();
  const S3rver = require("@20minutes/s3rver") as S3rverCtor;
  const buckets = options.buckets ?? ["ec-test"];
  const dir = await mkdtemp(join(tmpdir(), "ec-s3rver-"));
  const app = new S3rver({
    address: "127.0.0.1",
    port: 0,
    silent: true,
    directory: dir,
    configureBuckets: buckets.map((name) => ({ name })),
  });
  let requests = 0;
  let listings = 0;
  const gets: string[] = [];
  let inFlight = 0;
  let peakInFlight = 0;
  const front: Middleware = async (ctx, next) => {
    requests++;
    if (ctx.method === "GET" && ctx.query["list-type"] === "2") listings++;
    if (ctx.method === "GET") gets.push(ctx.path);
    peakInFlight = Math.max(peakInFlight, ++inFlight);
    try {
      await answer(ctx, next);
    } finally {
      inFlight--;
    }
  };
  const answer: Middleware = async (ctx, next) => {
    const region = signedRegion(ctx);
    if (options.region !== undefined && region !== undefined && region !== options.region) {
      ctx.status = 400;
      ctx.type = "application/xml";
      ctx.body = s3ErrorXml(
        "AuthorizationHeaderMalformed",
        `The authorization header is malformed; the region '${region}' is wrong; expecting '${options.region}'`,
        { Region: options.region },
      );
      return;
    }
    const held = options.hold?.({ method: ctx.method, path: ctx.path });
    if (held) await held;
    if (options.deny?.({ method: ctx.method, path: ctx.path })) {
      ctx.status = 403;
      ctx.type = "application/xml";
      ctx.body = s3ErrorXml("AccessDenied", "Access Denied");
      return;
    }
    // s3rver ignores If-Match; S3 and R2 answer 412 when the object is no longer that version.
    const ifMatch = ctx.get("if-match");
    const object = /^\/([^/]+)\/(.+)$/.exec(ctx.path);
    if (ifMatch && object && (ctx.method === "GET" || ctx.method === "HEAD")) {
      const current = await app.store.getMetadata(object[1]!, decodeURIComponent(object[2]!)).catch(() => undefined);
      if (current && ifMatch !== "*" && !ifMatch.split(",").some((e) => e.trim() === current.etag)) {
        ctx.status = 412;
        ctx.type = "application/xml";
        ctx.body = s3ErrorXml("PreconditionFailed", "At least one of the pre-conditions you specified did not hold", {
          Condition: "If-Match",
        });
        return;
      }
    }
    return rawPath.run((ctx.req.url ?? "/").split("?")[0]!, next);
  };
  app.middleware.unshift(front);
  const address = await app.run();
  const endpoint = `http://127.0.0.1:${address.port}`;
  const region = options.region ?? "us-east-1";
  const client = new S3Client({ endpoint, region, forcePathStyle: true, credentials: { ...S3_TEST_CREDENTIALS } });
  const bucket = buckets[0] ?? "ec-test";
  return {
    endpoint,
    region,
    bucket,
    credentials: { ...S3_TEST_CREDENTIALS },
    client,
    get requests() {
      return requests;
    },
    get listings() {
      return listings;
    },
    gets,
    get peakInFlight() {
      return peakInFlight;
    },
    resetPeak() {
      peakInFlight = inFlight;
    },
    async put(key, body, inBucket = bucket) {
      const out = await client.send(new PutObjectCommand({ Bucket: inBucket, Key: key, Body: body }));
      return out.ETag!;
    },
    async seed(objects, inBucket = bucket) {
      const S3Object = require("@20minutes/s3rver/lib/models/object.js") as new (
        bucket: string,
        key: string,
        content: Readable,
        metadata: Record<string, string>,
      ) => unknown;
      let next = 0;
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          while (next < objects.length) {
            const { key, body } = objects[next++]!;
            await app.store.putObject(
              new S3Object(
                inBucket,
                key,
                Readable.from([typeof body === "string" ? Buffer.from(body) : Buffer.from(body)]),
                {
                  "content-type": "application/octet-stream",
                },
              ),
            );
          }
        }),
      );
    },
    async close() {
      client.destroy();
      await app.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Creates one more bucket on a running server. */
export async function createBucket(server: S3TestServer, name: string): Promise<void> {
  await server.client.send(new CreateBucketCommand({ Bucket: name }));
}

import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { spawnGroup, type ChildGroup } from "./child-group.js";
import { devToken, ensureDevVars } from "./dev-vars.js";
import { DevServiceError } from "./errors.js";
import { freePort } from "./free-port.js";
import { projectRoot, stateRoot, varsRoot } from "./project-root.js";

export interface LocalEdgeOptions {
  /** Port to listen on; 0 (the default) picks a free one. */
  readonly port?: number;
  /** Where the local R2 persists; defaults to `.ec/edge` of the checkout, or of the current folder where ec is installed. */
  readonly persistDir?: string;
  /** Folder of the `.dev.vars` to use (created on first use); defaults to the checkout, or `.ec/` of the current folder where ec is installed. Tests pass their own. */
  readonly varsDir?: string;
  /** Do not echo wrangler's output to stderr (it is still kept for error messages). */
  readonly quiet?: boolean;
  /** How long to wait for /v1/health before giving up; default 120 s. */
  readonly readyTimeoutMs?: number;
  /**
   * The origin the Worker should believe it serves (and sign URLs for) when a front such as a
   * TLS proxy or the WAN emulator sits before it, e.g. "https://127.0.0.1:8443".
   */
  readonly publicOrigin?: string;
  /** wrangler's log level (the Worker's console output included); default "warn" when quiet, else "info". */
  readonly logLevel?: "error" | "warn" | "info" | "log" | "debug";
  /** Called with each chunk of wrangler's and workerd's output (the Worker's console lines included), as it comes. */
  readonly onOutput?: (chunk: string) => void;
  /** Worker variables set for this run over wrangler.toml's (`wrangler dev --var`), e.g. a shorter publish delay. */
  readonly vars?: Readonly<Record<string, string>>;
}

/** A running local edge. */
export interface LocalEdge {
  /** Base URL, e.g. "http://127.0.0.1:8787". */
  readonly url: string;
  /** A bearer token accepted by the edge. */
  readonly token: string;
  /** EC_SIGNING_KEY, to sign object and index URLs. */
  readonly signingKey: string;
  /** EC_MANIFEST_KEY: base64 PKCS#8 DER of the Ed25519 key that signs manifests. */
  readonly manifestKey: string;
  /** Stops wrangler and workerd, and waits until they are gone. */
  stop(): Promise<void>;
  /** wrangler's exit code (or signal name) once it has exited, on its own or stopped; undefined while it runs. */
  exitStatus(): number | string | undefined;
  /** The last output of wrangler and workerd (stdout and stderr, up to 16 KiB), for error messages. */
  output(): string;
}

/** The empty folder, beside a config copy, that the copy's no-op build watches. */
const FROZEN_WATCH_DIR = ".ec-watch";

/**
 * wrangler reads `.dev.vars` next to its config file, so a custom vars folder gets a copy of
 * wrangler.toml whose `main` points back at the project's entry.
 *
 * The copy also keeps the Worker as it was built at start. wrangler dev otherwise rebuilds on
 * every change to a file its bundle read (edge/, common/, their packages in node_modules) and
 * restarts workerd, which answers an upload in flight across the restart with 503 "Your worker
 * restarted mid-request" (or resets it): an edit or a checkout in the tree while a bench seeds
 * its edge lost the bench its rows. So the copy names a no-op custom build watching only an
 * empty folder of its own; wrangler does not watch what it bundles after a custom build, and
 * `WRANGLER_CI_DISABLE_CONFIG_WATCHING` (see {@link startOnce}) stops it watching the copy.
 * The checkout's own config (no vars folder given) still reloads on edits, as `wrangler dev` does.
 */
function configFor(root: string, varsDir: string): { path: string; frozen: boolean } {
  const rootConfig = join(root, "wrangler.toml");
  if (resolve(varsDir) === root) return { path: rootConfig, frozen: false };
  const text = readFileSync(rootConfig, "utf8");
  const main = /^main\s*=\s*"([^"]+)"/m.exec(text);
  if (!main) throw new DevServiceError("ERR_DEV_CONFIG", `Expected a main = "..." line in ${rootConfig}`);
  if (/^\s*\[build\]/m.test(text))
    throw new DevServiceError(
      "ERR_DEV_CONFIG",
      `Expected no [build] table in ${rootConfig} (the local edge adds its own)`,
    );
  mkdirSync(join(varsDir, FROZEN_WATCH_DIR), { recursive: true });
  const copy =
    `${text.replace(main[0], `main = ${JSON.stringify(join(root, main[1]!))}`).trimEnd()}\n\n` +
    "# Added by ec's local edge: build once, never rebuild on an edit (see sdk/dev/local-edge.ts).\n" +
    `[build]\ncommand = "exit 0"\nwatch_dir = ${JSON.stringify(FROZEN_WATCH_DIR)}\n`;
  const path = join(varsDir, "wrangler.toml");
  writeFileSync(path, copy);
  return { path, frozen: true };
}

/**
 * wrangler's CLI: next to ec in a checkout (a devDependency), or in the project that installed
 * ec (an optional peer dependency, so installing ec alone does not pull workerd).
 */
function wranglerBin(root: string): string {
  try {
    return createRequire(join(root, "package.json")).resolve("wrangler/bin/wrangler.js");
  } catch (cause) {
    const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
      peerDependencies?: Record<string, string>;
    };
    throw new DevServiceError(
      "ERR_DEV_WRANGLER_MISSING",
      `Expected wrangler (the local edge runs in its workerd) but it is not installed: npm install --save-dev wrangler@${pkg.peerDependencies?.wrangler ?? "4"}`,
      { cause },
    );
  }
}

async function waitForHealth(url: string, group: ChildGroup, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exitedWith: number | string | undefined;
  void group.exited.then((code) => (exitedWith = code));
  while (Date.now() < deadline) {
    if (exitedWith !== undefined) {
      throw new DevServiceError(
        "ERR_DEV_EXITED",
        `wrangler exited (${exitedWith}) before the edge answered:\n${group.output()}`,
      );
    }
    try {
      const res = await fetch(`${url}/v1/health`, { signal: AbortSignal.timeout(2000) });
      if (res.ok) return;
    } catch {
      // Not listening yet.
    }
    await new Promise((r) => setTimeout(r, 150));
  }
  throw new DevServiceError(
    "ERR_DEV_START",
    `The edge did not answer ${url}/v1/health within ${timeoutMs} ms:\n${group.output()}`,
  );
}

/** wrangler rewrites each request's URL to this origin, so the Worker signs URLs that go through the front. */
function upstreamArgs(origin: string): string[] {
  const u = new URL(origin);
  return ["--local-upstream", u.host, "--upstream-protocol", u.protocol.slice(0, -1)];
}

/** A `.gitignore` of `*`, so that secrets outside the checkout are never committed by accident. */
function ignoreFolder(dir: string): void {
  try {
    writeFileSync(join(dir, ".gitignore"), "# ec's local state and secrets\n*\n", { flag: "wx" });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
  }
}

async function startOnce(root: string, opts: LocalEdgeOptions, port: number): Promise<LocalEdge> {
  const varsDir = resolve(opts.varsDir ?? varsRoot(root));
  const vars = ensureDevVars(varsDir);
  if (varsDir !== root) ignoreFolder(varsDir);
  const persistDir = resolve(opts.persistDir ?? join(stateRoot(), ".ec", "edge"));
  mkdirSync(persistDir, { recursive: true });
  const config = configFor(root, varsDir);
  const inspectorPort = await freePort();
  const wrangler = wranglerBin(root);
  const args = [
    wrangler,
    "dev",
    "--local",
    "--config",
    config.path,
    "--ip",
    "127.0.0.1",
    "--port",
    String(port),
    "--inspector-port",
    String(inspectorPort),
    "--persist-to",
    persistDir,
    "--show-interactive-dev-session=false",
    "--log-level",
    opts.logLevel ?? (opts.quiet ? "warn" : "info"),
    ...(opts.publicOrigin ? upstreamArgs(opts.publicOrigin) : []),
    ...Object.entries(opts.vars ?? {}).flatMap(([k, v]) => ["--var", `${k}:${v}`]),
  ];
  const group = spawnGroup(process.execPath, args, {
    cwd: root,
    echo: !opts.quiet,
    // Local and offline: no metrics, no update check, no fetch of Request.cf from the network.
    env: {
      ...process.env,
      CI: "1",
      WRANGLER_SEND_METRICS: "false",
      NO_UPDATE_NOTIFIER: "1",
      CLOUDFLARE_CF_FETCH_ENABLED: "false",
      FORCE_COLOR: "0",
      // A copy is private to this edge; nobody edits it while it runs.
      ...(config.frozen ? { WRANGLER_CI_DISABLE_CONFIG_WATCHING: "true" } : {}),
    },
  });
  if (opts.onOutput) {
    const onOutput = opts.onOutput;
    for (const stream of [group.child.stdout, group.child.stderr])
      stream?.on("data", (c: Buffer) => onOutput(c.toString("utf8")));
  }
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitForHealth(url, group, opts.readyTimeoutMs ?? 120_000);
  } catch (err) {
    await group.stop();
    throw err;
  }
  let exitStatus: number | string | undefined;
  void group.exited.then((code) => (exitStatus = code));
  return {
    url,
    token: devToken(vars),
    signingKey: vars.EC_SIGNING_KEY,
    manifestKey: vars.EC_MANIFEST_KEY,
    stop: () => group.stop(),
    exitStatus: () => exitStatus,
    output: () => group.output(),
  };
}

/**
 * Starts the edge Worker locally (the pinned wrangler, workerd, a persisted local R2) and
 * resolves once `GET /v1/health` answers. Secrets come from `.dev.vars`, generated on first use.
 *
 * @example
 * const edge = await startLocalEdge({ port: 0, quiet: true, varsDir: tmp, persistDir: join(tmp, "r2") });
 * await fetch(`${edge.url}/v1/health`);
 * await edge.stop();
 */
export async function startLocalEdge(opts: LocalEdgeOptions = {}): Promise<LocalEdge> {
  const root = projectRoot();
  if (opts.port !== undefined && opts.port !== 0) return startOnce(root, opts, opts.port);
  // A port picked free can be taken before wrangler binds it; try a fresh one then.
  let last: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return await startOnce(root, opts, await freePort());
    } catch (err) {
      last = err;
      if (!(err instanceof DevServiceError) || !/EADDRINUSE|address already in use/i.test(err.message)) throw err;
    }
  }
  throw last;
}

import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { NativeUnavailableError } from "./errors.js";
import type { Binding } from "./binding-types.js";

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);

/**
 * Where a build may be: an explicit path, then a local build (native/build next to the sources
 * or to dist/), then the prebuilt shipped in the package for this platform
 * (native/prebuilds/<platform>-<arch>). @internal exported for the install script and tests.
 */
export function addonCandidates(): string[] {
  const fromEnv = process.env.EC_NATIVE_PATH ? [resolve(process.env.EC_NATIVE_PATH)] : [];
  const roots = [resolve(here, ".."), resolve(here, "..", "..", "..", "native")];
  const builds = roots.flatMap((root) =>
    ["Release", "Debug"].map((kind) => join(root, "build", kind, "ec_native.node")),
  );
  const prebuilt = roots.map((root) =>
    join(root, "prebuilds", `${process.platform}-${process.arch}`, "ec_native.node"),
  );
  return [...new Set([...fromEnv, ...builds, ...prebuilt])];
}

function advice(failures: string[]): string {
  const text = failures.join("\n");
  if (/lib(avcodec|avutil|swscale)[^ ]*\.so/.test(text)) {
    return "The FFmpeg shared libraries it was built against are missing: apt-get install ffmpeg (or libavcodec59 libswscale6), or rebuild with `npm run setup`.";
  }
  if (/NODE_MODULE_VERSION|invalid ELF|wrong ELF class/.test(text)) {
    return "The build is for another Node or platform: rebuild with `npm run setup` (or `npm run build:native`).";
  }
  return "Build it with `npm run setup` in a checkout or `npm rebuild ec` where ec is installed (needs a C++17 compiler, python3, make and apt-get install pkg-config libavcodec-dev libavutil-dev libswscale-dev).";
}

/**
 * The first of `paths` that loads; otherwise one NativeUnavailableError that lists every
 * attempt and says what to install. @internal exported for tests.
 */
export function loadFirst(paths: readonly string[]): Binding {
  const failures: string[] = [];
  for (const path of paths) {
    if (!existsSync(path)) {
      failures.push(`${path}: not built`);
      continue;
    }
    try {
      return require(path) as Binding;
    } catch (error) {
      failures.push(`${path}: ${(error as Error).message.split("\n")[0]}`);
    }
  }
  throw new NativeUnavailableError(
    `The ec native addon could not be loaded. ${advice(failures)}\nTried:\n  ${failures.join("\n  ")}`,
  );
}

let cached: Binding | undefined;

/** Loads the addon once (EC_NATIVE_PATH first, then native/build/{Release,Debug}, then the prebuilt). */
export function loadBinding(): Binding {
  cached ??= loadFirst(addonCandidates());
  return cached;
}

import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { NativeUnavailableError } from "./errors.js";
import type { Binding } from "./binding-types.js";

// Found at first use, not at import: the origin-cache imports this module whether or not its
// upstream client is the native one, also from bundles that give it no import.meta.url.
const moduleDir = (): string => dirname(fileURLToPath(import.meta.url));

/**
 * Where a build may be: an explicit path, then a local build (native/build next to the sources
 * or to dist/), then the prebuilt shipped in the package for this platform
 * (native/prebuilds/<platform>-<arch>). @internal exported for the install script and tests.
 */
export function addonCandidates(): string[] {
  const fromEnv = process.env.EC_NATIVE_PATH ? [resolve(process.env.EC_NATIVE_PATH)] : [];
  const here = moduleDir();
  const roots = [resolve(here, ".."), resolve(here, "..", "..", "..", "native")];
  const builds = roots.flatMap((root) =>
    ["Release", "Debug"].map((kind) => join(root, "build", kind, "ec_native.node")),
  );
  const prebuilt = roots.map((root) =>
    join(root, "prebuilds", `${process.platform}-${process.arch}`, "ec_native.node"),
  );
  return [...new Set([...fromEnv, ...builds, ...prebuilt])];
}

/** How a user builds the addon from source, and what that takes. */
const BUILD_FROM_SOURCE =
  "build it from source with `npx ec build-native` where ec is installed (`npm run setup` in a checkout)";
const BUILD_NEEDS =
  "which needs a C++17 compiler, make, python3 and node-gyp (npm's own serves), and first builds the minimal static FFmpeg the addon links with native/ffmpeg/build.sh (Debian or Ubuntu: it apt-gets its build packages, as root the first time; EC_FFMPEG_PREFIX names one built elsewhere)";

function advice(failures: string[]): string {
  const text = failures.join("\n");
  const platform = `${process.platform}-${process.arch}`;
  if (/GLIBC_[0-9.]+'? not found|GLIBCXX_|CXXABI_/.test(text)) {
    return `The prebuilt addon needs glibc 2.35 or newer (Debian 12, Ubuntu 22.04 and later); here, ${BUILD_FROM_SOURCE}, ${BUILD_NEEDS}.`;
  }
  if (/lib(avcodec|avutil|swscale)[^ ]*\.so/.test(text)) {
    return `A build linked against shared FFmpeg libraries (from an older ec) is in the way; the addon carries its own FFmpeg now: ${BUILD_FROM_SOURCE}, ${BUILD_NEEDS}.`;
  }
  if (/NODE_MODULE_VERSION|invalid ELF|wrong ELF class/.test(text)) {
    return `The build is for another Node or platform: ${BUILD_FROM_SOURCE}, ${BUILD_NEEDS}.`;
  }
  if (platform === "linux-x64") {
    return `No build loads, not even the prebuilt one the package ships for linux-x64: reinstall ec, or ${BUILD_FROM_SOURCE}, ${BUILD_NEEDS}.`;
  }
  return `No prebuilt addon ships for ${platform} (the package carries one for linux-x64): ${BUILD_FROM_SOURCE}, ${BUILD_NEEDS}.`;
}

/**
 * The first of `paths` that loads, with its path; otherwise one NativeUnavailableError that
 * lists every attempt and says what to do. @internal exported for tests and `ec build-native`.
 */
export function findBuild(paths: readonly string[]): { path: string; binding: Binding } {
  const failures: string[] = [];
  for (const path of paths) {
    if (!existsSync(path)) {
      failures.push(`${path}: not built`);
      continue;
    }
    try {
      return { path, binding: createRequire(import.meta.url)(path) as Binding };
    } catch (error) {
      failures.push(`${path}: ${(error as Error).message.split("\n")[0]}`);
    }
  }
  throw new NativeUnavailableError(
    `The ec native addon could not be loaded. ${advice(failures)}\nTried:\n  ${failures.join("\n  ")}`,
  );
}

/** The first of `paths` that loads (see findBuild). @internal exported for tests. */
export function loadFirst(paths: readonly string[]): Binding {
  return findBuild(paths).binding;
}

let cached: Binding | undefined;

/** Loads the addon once (EC_NATIVE_PATH first, then native/build/{Release,Debug}, then the prebuilt). */
export function loadBinding(): Binding {
  cached ??= loadFirst(addonCandidates());
  return cached;
}

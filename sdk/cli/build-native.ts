/**
 * `ec build-native [--force]`: compiles the native addon from the package's own sources
 * (native/) with node-gyp, for a platform the shipped prebuilt does not fit. The install itself
 * runs no script (npm 11 would hold one until approved), so this is the fallback a user runs.
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { addonCandidates, findBuild, NativeUnavailableError } from "../../native/index.js";
import { projectRoot } from "../dev/project-root.js";
import { reportErrors } from "../dev/cli-report.js";
import { InvalidOptionError } from "../errors.js";

const USAGE =
  "usage: ec build-native [--force]\n  compiles the native addon from native/ with node-gyp when no build loads (--force: even then)\n";

/**
 * @example
 * await main([]); // "ec build-native: …/prebuilds/linux-x64/ec_native.node loads; nothing to build"
 */
export function main(argv: string[]): Promise<number> {
  return reportErrors("build-native", USAGE, () => run(argv));
}

const log = (msg: string) => process.stderr.write(`ec build-native: ${msg}\n`);

/** npm's own node-gyp (npm and npx hand its path to what they run), one installed with ec, or the one beside node's npm. */
function nodeGyp(): string | undefined {
  const candidates = [process.env.npm_config_node_gyp];
  try {
    candidates.push(createRequire(import.meta.url).resolve("node-gyp/bin/node-gyp.js"));
  } catch {
    // Not installed with ec: the usual case for a user.
  }
  const npmPrefix = join(dirname(process.execPath), "..", "lib", "node_modules", "npm");
  candidates.push(join(npmPrefix, "node_modules", "node-gyp", "bin", "node-gyp.js"));
  return candidates.find((p): p is string => p !== undefined && p !== "" && existsSync(p));
}

const runs = (cmd: string, args: string[]) => spawnSync(cmd, args, { stdio: "ignore" }).status === 0;

/** What a node-gyp build of native/ needs that this machine lacks. */
function missingTools(): string[] {
  const missing: string[] = [];
  const cxx = process.env.CXX ?? "c++";
  if (!runs(cxx, ["--version"])) missing.push(`a C++17 compiler (${cxx}; Debian/Ubuntu: apt-get install g++)`);
  if (!runs("make", ["--version"])) missing.push("make");
  if (!runs("python3", ["--version"])) missing.push("python3 (node-gyp runs gyp with it)");
  if (!nodeGyp()) missing.push("node-gyp (npm's own, or npm install -g node-gyp)");
  return missing;
}

async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      force: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (positionals.length > 0)
    throw new InvalidOptionError(`Expected no arguments but received ${positionals.join(" ")}`);
  if (!values.force) {
    try {
      const { path } = findBuild(addonCandidates());
      log(`${path} loads; nothing to build (--force builds anyway)`);
      return 0;
    } catch {
      // Nothing loads: build one.
    }
  }
  const native = join(projectRoot(), "native");
  const missing = missingTools();
  if (missing.length > 0) {
    throw new NativeUnavailableError(
      `Building the addon needs a C++17 compiler, make, python3 and node-gyp; this machine lacks ${missing.join(", ")}`,
    );
  }
  // The minimal static FFmpeg the addon links, built once per machine (binding.gyp asks for it
  // too; first here, so its progress shows).
  log("the minimal static FFmpeg (native/ffmpeg/build.sh; minutes the first time on a machine)");
  const ffmpeg = spawnSync("bash", [join(native, "ffmpeg", "build.sh")], { stdio: ["ignore", "ignore", "inherit"] });
  if (ffmpeg.status !== 0) {
    throw new NativeUnavailableError(
      "Building the minimal static FFmpeg failed (its log is above): native/ffmpeg/build.sh builds it from Debian's source packages (apt-get, as root the first time); EC_FFMPEG_PREFIX names one built elsewhere",
    );
  }
  // Headers installed next to this node (distro packages, offline hosts) spare node-gyp a download.
  const prefix = join(dirname(process.execPath), "..");
  const nodedir = existsSync(join(prefix, "include", "node", "node_api.h")) ? [`--nodedir=${prefix}`] : [];
  log(`node-gyp rebuild in ${native}`);
  const gyp = spawnSync(process.execPath, [nodeGyp()!, "rebuild", "-j", "max", ...nodedir], {
    cwd: native,
    stdio: ["ignore", process.stderr, "inherit"],
  });
  if (gyp.status !== 0) throw new NativeUnavailableError("node-gyp failed to build the addon (its log is above)");
  const { path } = findBuild([join(native, "build", "Release", "ec_native.node")]);
  log(`built ${path}; it loads`);
  return 0;
}

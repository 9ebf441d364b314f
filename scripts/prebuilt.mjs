// The self-contained prebuilt addon (scripts/prebuild.mjs) that the GPU bundle and the Python
// wheel carry: used as it is when no native source is newer, else taken from this machine's
// cache of earlier builds of the same sources (a fresh clone in CI has none of its own), else
// built (a minute or more) and kept there.
import { createHash } from "node:crypto";
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join, relative } from "node:path";

const SOURCES = [".cc", ".h", ".cu", ".gyp", ".cjs", ".sh", ".txt"];

/** The native sources and build scripts, sorted (build/ and prebuilds/ are outputs). */
function sources(dir, out = []) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== "build" && entry.name !== "prebuilds") sources(p, out);
    } else if (SOURCES.some((e) => entry.name.endsWith(e))) out.push(p);
  }
  return out.sort();
}

/** native/prebuilds/linux-x64/ec_native.node (its licences in licenses/ beside it), built first when stale. */
export function ensurePrebuilt(root) {
  const prebuilt = join(root, "native", "prebuilds", "linux-x64", "ec_native.node");
  const inputs = [...sources(join(root, "native")), join(root, "scripts", "prebuild.mjs")];
  if (existsSync(prebuilt) && statSync(prebuilt).mtimeMs >= Math.max(...inputs.map((p) => statSync(p).mtimeMs)))
    return prebuilt;
  const hash = createHash("sha256").update(`cuda=${process.env.EC_NO_CUDA ? "no" : "yes"}\n`);
  for (const p of inputs) hash.update(`${relative(root, p)}\n`).update(readFileSync(p));
  const cache = join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "ec");
  const kept = join(cache, `prebuilt-linux-x64-${hash.digest("hex").slice(0, 16)}`);
  const folder = dirname(prebuilt);
  if (existsSync(join(kept, "ec_native.node"))) {
    rmSync(folder, { recursive: true, force: true });
    cpSync(kept, folder, { recursive: true });
    return prebuilt;
  }
  execFileSync(process.execPath, [join(root, "scripts", "prebuild.mjs")], {
    cwd: root,
    stdio: ["ignore", "inherit", "inherit"],
  });
  const partial = `${kept}.partial-${process.pid}`;
  cpSync(folder, partial, { recursive: true });
  try {
    renameSync(partial, kept);
  } catch {
    // Another build kept the same sources' addon first.
    rmSync(partial, { recursive: true, force: true });
  }
  return prebuilt;
}

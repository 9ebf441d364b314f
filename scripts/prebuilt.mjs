// The self-contained prebuilt addon (scripts/prebuild.mjs) that the GPU bundle and the Python
// wheel carry: rebuilt when a native source is newer than it, else used as it is.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";

function newest(dir, exts) {
  let t = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    if (entry.isDirectory())
      t = Math.max(t, entry.name === "build" || entry.name === "prebuilds" ? 0 : newest(p, exts));
    else if (exts.some((e) => entry.name.endsWith(e))) t = Math.max(t, statSync(p).mtimeMs);
  }
  return t;
}

/** native/prebuilds/linux-x64/ec_native.node (its licences in licenses/ beside it), built first when stale. */
export function ensurePrebuilt(root) {
  const prebuilt = join(root, "native", "prebuilds", "linux-x64", "ec_native.node");
  if (
    !existsSync(prebuilt) ||
    statSync(prebuilt).mtimeMs < newest(join(root, "native"), [".cc", ".h", ".cu", ".gyp", ".cjs", ".sh", ".txt"])
  ) {
    execFileSync(process.execPath, [join(root, "scripts", "prebuild.mjs")], {
      cwd: root,
      stdio: ["ignore", "inherit", "inherit"],
    });
  }
  return prebuilt;
}

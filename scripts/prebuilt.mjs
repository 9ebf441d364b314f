// The self-contained prebuilt addon (scripts/prebuild.mjs) that the GPU bundle and the Python
// wheel carry: as it is when built from these sources, else this machine's build of the same
// sources, else built now (a minute or more). prebuild.mjs --if-stale decides, as `npm pack` does.
import { execFileSync } from "node:child_process";
import { join } from "node:path";

/** native/prebuilds/linux-x64/ec_native.node (its licences in licenses/ beside it), built first when stale. */
export function ensurePrebuilt(root) {
  execFileSync(process.execPath, [join(root, "scripts", "prebuild.mjs"), "--if-stale"], {
    cwd: root,
    stdio: ["ignore", "inherit", "inherit"],
  });
  return join(root, "native", "prebuilds", "linux-x64", "ec_native.node");
}

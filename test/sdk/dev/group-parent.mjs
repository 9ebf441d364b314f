// A parent that starts a process group (a tree of sleepers, or the real local edge), says
// "ready" and waits to be killed: test/sdk/dev/child-group.test.ts.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawnGroup } from "../../../dist/sdk/dev/child-group.js";
import { startLocalEdge } from "../../../dist/sdk/dev/index.js";

const [what, handles] = process.argv.slice(2);
// Like `ec dev` (waitForSignal): a listener that removes itself when the signal comes.
if (handles === "handles-sigterm") process.once("SIGTERM", () => process.stdout.write("handled\n"));
if (what === "edge") {
  const dir = mkdtempSync(join(tmpdir(), "ec-group-parent-"));
  await startLocalEdge({ port: 0, quiet: true, varsDir: dir, persistDir: join(dir, "r2") });
} else {
  // A child that starts a grandchild (three processes with the guard), and says so once it has.
  const tree = `require("node:child_process").spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" }).on("spawn", () => console.log("up")); setInterval(() => {}, 1000);`;
  const group = spawnGroup(process.execPath, ["-e", tree], { echo: false });
  await new Promise((resolve) => group.child.stdout.once("data", resolve));
}
process.stdout.write("ready\n");
setInterval(() => {}, 1000);

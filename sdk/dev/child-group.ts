import { spawn, type ChildProcess, type SpawnOptions } from "node:child_process";

/** A child process started in its own process group, so stopping it stops everything it started. */
export interface ChildGroup {
  /** The group's leader: a guard that runs the command and outlives it by no more than it must. */
  readonly child: ChildProcess;
  /** The last output of the child (stdout and stderr), for error messages. */
  output(): string;
  /** Resolves with the exit code (or signal name) when the child is gone. */
  readonly exited: Promise<number | string>;
  /** Sends `signal` to every process of the group (the guard ignores it). */
  signal(signal: NodeJS.Signals): void;
  /** SIGTERM to the group, SIGKILL after `graceMs`; resolves once the child has exited. */
  stop(graceMs?: number): Promise<void>;
}

const OUTPUT_LIMIT = 16 * 1024;

/**
 * The group's leader (`node -e GUARD command args…`): runs the command in its own group and
 * kills the whole group when its stdin, a pipe from the parent, ends — which the kernel does
 * when the parent dies, however (SIGKILL included), so nothing started here outlives it.
 * Signals sent to the group reach the command directly; the guard only waits for it to exit
 * and exits the same way. Inline source, so it runs from a bundle, dist/ or the TypeScript
 * sources alike.
 */
const GUARD = `
const { spawn } = require("node:child_process");
const [command, ...args] = process.argv.slice(1);
const signals = ["SIGINT", "SIGTERM", "SIGHUP", "SIGUSR2"];
for (const s of signals) process.on(s, () => {});
const child = spawn(command, args, { stdio: ["ignore", "inherit", "inherit"] });
const killGroup = () => { try { process.kill(-process.pid, "SIGKILL"); } catch {} };
process.stdin.on("end", killGroup).on("close", killGroup).on("error", killGroup).resume();
child.on("error", (err) => { process.stderr.write("spawn error: " + err.message + "\\n"); process.exit(127); });
child.on("exit", (code, signal) => {
  if (code !== null) process.exit(code);
  for (const s of signals) process.removeAllListeners(s);
  process.kill(process.pid, signal);
});
`;

/** Groups still running, killed by the first SIGINT/SIGTERM/SIGHUP nobody else handles. */
const live = new Set<(signal: NodeJS.Signals) => void>();
const PARENT_SIGNALS: readonly NodeJS.Signals[] = ["SIGINT", "SIGTERM", "SIGHUP"];

/**
 * A signal the process would die of: kill every group first, then die of it. Where the
 * application listens for the signal itself (`ec dev` stops its services in order), it is
 * left to do so; the exit hook still kills what it leaves.
 */
function onParentSignal(signal: NodeJS.Signals): void {
  if (process.listenerCount(signal) > 1) return;
  for (const kill of live) kill("SIGKILL");
  for (const s of PARENT_SIGNALS) process.off(s, onParentSignal);
  process.kill(process.pid, signal);
}

function track(kill: (signal: NodeJS.Signals) => void): () => void {
  // First in line, so it sees the application's own listeners before any of them removes itself.
  if (live.size === 0) for (const s of PARENT_SIGNALS) process.prependListener(s, onParentSignal);
  live.add(kill);
  return () => {
    live.delete(kill);
    if (live.size === 0) for (const s of PARENT_SIGNALS) process.off(s, onParentSignal);
  };
}

/**
 * Spawns `command` detached (its own process group, led by a guard) with its output captured.
 * No process of the group outlives the parent: a parent that exits without calling stop(),
 * dies of a signal it does not handle, or is killed outright still takes the group with it.
 * `echo: "stderr"` copies only the child's stderr to this process's stderr.
 *
 * @example
 * const g = spawnGroup(process.execPath, ["server.js"], { echo: false });
 * await g.stop();
 */
export function spawnGroup(
  command: string,
  args: readonly string[],
  opts: SpawnOptions & { echo: boolean | "stderr" },
): ChildGroup {
  const { echo, ...spawnOpts } = opts;
  const child = spawn(process.execPath, ["-e", GUARD, command, ...args], {
    ...spawnOpts,
    detached: true,
    stdio: ["pipe", "pipe", "pipe"],
  });
  let tail = "";
  const keep = (toStderr: boolean) => (chunk: Buffer) => {
    tail = (tail + chunk.toString("utf8")).slice(-OUTPUT_LIMIT);
    if (toStderr) process.stderr.write(chunk);
  };
  child.stdout?.on("data", keep(echo === true));
  child.stderr?.on("data", keep(echo !== false));
  // Never written: its end (this process gone) is what the guard waits for.
  child.stdin?.on("error", () => {});

  const killGroup = (signal: NodeJS.Signals) => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, signal);
    } catch {
      // Already gone.
    }
  };
  const onParentExit = () => killGroup("SIGKILL");
  process.once("exit", onParentExit);
  const untrack = track(killGroup);

  const exited = new Promise<number | string>((resolve) => {
    child.once("error", (err) => resolve(`spawn error: ${err.message}`));
    child.once("exit", (code, signal) => {
      process.removeListener("exit", onParentExit);
      untrack();
      resolve(code ?? signal ?? "unknown");
    });
  });

  return {
    child,
    output: () => tail,
    exited,
    signal: killGroup,
    async stop(graceMs = 5000) {
      if (child.exitCode !== null || child.signalCode !== null) {
        // The leader is gone, but what it started may not be.
        killGroup("SIGKILL");
        return;
      }
      killGroup("SIGTERM");
      const timer = setTimeout(() => killGroup("SIGKILL"), graceMs);
      await exited;
      clearTimeout(timer);
      killGroup("SIGKILL");
    },
  };
}

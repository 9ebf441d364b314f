import { spawn, type ChildProcess, type SpawnOptions } from "node:child_process";

/** A child process started in its own process group, so stopping it stops everything it started. */
export interface ChildGroup {
  readonly child: ChildProcess;
  /** The last output of the child (stdout and stderr), for error messages. */
  output(): string;
  /** Resolves with the exit code (or signal name) when the child is gone. */
  readonly exited: Promise<number | string>;
  /** SIGTERM to the group, SIGKILL after `graceMs`; resolves once the child has exited. */
  stop(graceMs?: number): Promise<void>;
}

const OUTPUT_LIMIT = 16 * 1024;

/**
 * Spawns `command` detached (its own process group) with its output captured; a parent that
 * exits without calling stop() still kills the group on the way out.
 *
 * @example
 * const g = spawnGroup(process.execPath, ["server.js"], { echo: false });
 * await g.stop();
 */
export function spawnGroup(
  command: string,
  args: readonly string[],
  opts: SpawnOptions & { echo: boolean },
): ChildGroup {
  const child = spawn(command, args, { ...opts, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  let tail = "";
  const keep = (chunk: Buffer) => {
    tail = (tail + chunk.toString("utf8")).slice(-OUTPUT_LIMIT);
    if (opts.echo) process.stderr.write(chunk);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);

  const killGroup = (signal: NodeJS.Signals) => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, signal);
    } catch {
      // Already gone.
    }
  };
  const onParentExit = () => killGroup("SIGKILL");
  process.once("exit", onParentExit);

  const exited = new Promise<number | string>((resolve) => {
    child.once("error", (err) => resolve(`spawn error: ${err.message}`));
    child.once("exit", (code, signal) => {
      process.removeListener("exit", onParentExit);
      resolve(code ?? signal ?? "unknown");
    });
  });

  return {
    child,
    output: () => tail,
    exited,
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

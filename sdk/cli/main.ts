/** Entry point of the `ec` command: dispatches to one module per subcommand. */
export type Command = (argv: string[]) => Promise<number>;

const commands = new Map<string, () => Promise<Command>>([
  // Subcommands register here: name → lazy import of their module's `main`.
  ["inspect", async () => (await import("./inspect.js")).main],
  ["stream", async () => (await import("./stream.js")).main],
  ["bench", async () => (await import("./bench.js")).main],
  ["decode", async () => (await import("./decode.js")).main],
  ["labels", async () => (await import("./labels.js")).main],
  ["dev", async () => (await import("./dev.js")).main],
  ["sign", async () => (await import("./sign.js")).main],
  ["keys", async () => (await import("./keys.js")).main],
  ["push", async () => (await import("./push.js")).main],
  ["index", async () => (await import("./index-prefix.js")).main],
  ["demo", async () => (await import("./demo.js")).main],
  ["cache", async () => (await import("./cache.js")).main],
  ["engine", async () => (await import("./engine.js")).main],
  ["build-native", async () => (await import("./build-native.js")).main],
]);

export async function run(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === "--help" || name === "-h" || name === "help") {
    process.stdout.write(`usage: ec <command> [options]\n\ncommands: ${[...commands.keys()].join(", ")}\n`);
    return name ? 0 : 2;
  }
  const load = commands.get(name);
  if (!load) {
    process.stderr.write(`ec: unknown command ${JSON.stringify(name)}; commands: ${[...commands.keys()].join(", ")}\n`);
    return 2;
  }
  const main = await load();
  return main(rest);
}

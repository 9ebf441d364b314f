/**
 * The engine inside the GPU bundle (`node engine.mjs engine`, as the Python client starts it
 * through EC_ENGINE): `ec engine` without the rest of the CLI, bundled by esbuild.
 */
import { main } from "../../../sdk/cli/engine.js";

process.exitCode = await main(process.argv.slice(3));

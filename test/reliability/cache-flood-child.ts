/** `ec cache` as a process of its own for the flood test: the CLI's main with the arguments given. */
import { main } from "../../sdk/cli/cache.js";

void main(process.argv.slice(2)).then((code) => process.exit(code));

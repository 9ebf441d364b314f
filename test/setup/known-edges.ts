/**
 * Each test file remembers the edge keys it first sees in a file of its own: local edges listen on
 * port 0 with fresh keys, so a port used again by another run's edge would otherwise meet the keys
 * an earlier one left in the user's known-edges.json (ERR_MANIFEST_KEY_CHANGED). Child processes
 * (the CLI, the engine) inherit it.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

process.env.EC_KNOWN_EDGES = join(mkdtempSync(join(tmpdir(), "ec-known-edges-")), "known-edges.json");

// What the engine says about its own API, for the Python client's tests: the JSON schema of
// open()'s options and of a clip, the error codes of the SDK's and the native part's tables, and
// the dtypes a batch may have. Usage: node engine_schema.mjs ROOT
import { pathToFileURL } from "node:url";

const [root] = process.argv.slice(2);
const load = (path) => import(pathToFileURL(`${root}/dist/${path}`).href);
const { z } = await import("zod");
const { OpenOptionsSchema } = await load("sdk/options.js");
const { ClipInfoSchema } = await load("sdk/clip-info.js");
const { SdkErrorCode } = await load("sdk/errors.js");
const { NativeErrorCode } = await load("native/lib/errors.js");
const { ARRAY_DTYPES } = await load("sdk/pipeline/array-task.js");
// Functions (labels, filter, onError) have no JSON form: "any" keeps their names in the schema.
const schema = (s) => z.toJSONSchema(s, { unrepresentable: "any", io: "input" });
process.stdout.write(
  JSON.stringify({
    options: schema(OpenOptionsSchema),
    clip: schema(ClipInfoSchema),
    codes: [...new Set([...Object.values(SdkErrorCode), ...Object.values(NativeErrorCode)])],
    dtypes: Object.fromEntries([...ARRAY_DTYPES.values()].map((d) => [d.name, d.ctor.BYTES_PER_ELEMENT])),
  }),
);

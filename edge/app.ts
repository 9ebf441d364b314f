import { Hono } from "hono";
import { NotFoundError } from "./errors.js";
import { renderError } from "./http/error-response.js";
import { health } from "./routes/health.js";
import { indexRoute } from "./routes/index-route.js";
import { keysRoute } from "./routes/keys.js";
import { labels } from "./routes/labels.js";
import { manifestRoute } from "./routes/manifest.js";
import { objects } from "./routes/objects.js";
import { tableRoute } from "./routes/table.js";
import type { EdgeEnv } from "./types.js";

/** The edge Worker: one error renderer, one line per route module. */
const app = new Hono<EdgeEnv>();
app.onError(renderError);
app.notFound(() => {
  throw new NotFoundError("No such route");
});

app.route("/v1/health", health);
app.route("/v1/objects", objects);
app.route("/v1/index", indexRoute);
app.route("/v1/datasets", tableRoute);
app.route("/v1/datasets", manifestRoute);
app.route("/v1/keys", keysRoute);
app.route("/v1/labels", labels);

export default app;

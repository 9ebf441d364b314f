import app from "./app.js";
import { handleQueue } from "./table/index-queue.js";

/** The Worker: HTTP through the Hono app; the index and publish queues through handleQueue. */
export default {
  fetch: app.fetch,
  queue: (batch, env) => handleQueue(batch, env),
} satisfies ExportedHandler<Env>;

/** Hono environment of every edge route: the Worker's bindings plus per-request variables. */
export interface EdgeEnv {
  Bindings: Env;
  Variables: {
    /** The validated object key of a `/v1/<route>/{key}` request, set by `objectKey()`. */
    key: string;
  };
}

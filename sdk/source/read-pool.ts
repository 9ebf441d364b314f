/** The SDK's span read buffers: the shared pool of common/read-pool.ts. */
export { READ_POOL_IDLE_BYTES, ReadPool, type ReadPoolStats, releaseRead } from "../../common/read-pool.js";

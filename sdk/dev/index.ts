/** Local services for development and tests: the edge in workerd (and, later, the origin cache). */
export { startLocalEdge, type LocalEdge, type LocalEdgeOptions } from "./local-edge.js";
export { ensureDevVars, devToken, parseDevVars, type DevVars } from "./dev-vars.js";
export { DevServiceError } from "./errors.js";
export { projectRoot } from "./project-root.js";
export {
  startDevStack,
  devServices,
  type DevService,
  type DevRequest,
  type RunningService,
  type DevStack,
} from "./services.js";
export { resolveEdge, resolveToken, resolveSigningKey, DEFAULT_EDGE } from "./connection.js";
export { waitForSignal } from "./wait-for-signal.js";

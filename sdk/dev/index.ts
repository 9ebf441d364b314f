/** Local services for development and tests: the edge in workerd (and, later, the origin cache). */
export { startLocalEdge, type LocalEdge, type LocalEdgeOptions } from "./local-edge.js";
export { ensureDevVars, devToken, parseDevVars, type DevVars } from "./dev-vars.js";
export { DevServiceError } from "./errors.js";
export { projectRoot } from "./project-root.js";

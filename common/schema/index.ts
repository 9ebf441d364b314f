export * from "./index-v1.js";
export * from "./manifest-v1.js";
export * from "./labels-v1.js";
export * from "./table-v1.js";

/** Presentation ↔ decode order lives with the index (the edge's table needs keyframes too). */
export * from "../../common/media-index/frame-order.js";

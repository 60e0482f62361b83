/**
 * @module The router's public surface (for tests and the benchmark that run it in-process).
 */
export { startRouter, type Router } from "./router-server.js";
export { parseRouterOptions, type RouterOptions } from "./config.js";
export { place, loadBound, DEFAULT_PREFIX_SLACK, PLACEMENT_POLICIES, type PlacementPolicy, type EngineLoad, type Placement, type PlacementReason } from "./placement.js";
export { routedSessionId, parseRoutedSessionId } from "./session-id.js";
export { HashRing } from "./consistent-hash.js";

/**
 * @module The metrics folder's public surface.
 */
export { EngineMetrics, type EngineMetricsOptions } from "./engine-metrics.js";
export { TtftWindow } from "./ttft-window.js";

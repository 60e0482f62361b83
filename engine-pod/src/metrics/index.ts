/**
 * @module The metrics folder's public surface.
 */
export { EngineMetrics, type EngineMetricsOptions } from "./engine-metrics.js";

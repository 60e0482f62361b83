/**
 * @module The reconcilers (one per kind), their shared status helpers, the
 * ToolPool cleanup hook and the wiring into a manager.
 */
export * from "./context.js";
export * from "./status.js";
export * from "./transitions.js";
export * from "./pool-cleanup.js";
export * from "./live-state.js";
export * from "./engine-pool.js";
export * from "./tool-pool.js";
export * from "./agent-app.js";
export * from "./autoscaler.js";
export * from "./setup.js";
export * from "./pressure-check.js";
export * from "./stream-upkeep.js";

/**
 * @module Speculative tool calls (the speculative-tool-calls paper): the tool
 * cache, the client-side planner, the scripted draft policy, the draft model,
 * O2 draft validation and the analytic model (Eq. 1–6).
 */
export * from "./tool-cache.js";
export * from "./planner.js";
export * from "./analytic.js";
export * from "./draft-policy.js";
export * from "./draft-model.js";
export * from "./draft-validator.js";
export * from "./speculation-stats.js";
export * from "./session-speculator.js";
export * from "./speculative-executor.js";
export * from "./speculating-engine.js";
export * from "./engine-hook.js";

/**
 * @module Speculative tool calls (the speculative-tool-calls paper): the tool
 * cache, the client-side planner, the scripted draft policy, the draft model
 * and the analytic model (Eq. 1–6). O2's validation pass lives under the KV
 * manager (its rollback erases cells); the engine core runs it.
 */
export * from "./tool-cache.js";
export * from "./planner.js";
export * from "./analytic.js";
export * from "./draft-policy.js";
export * from "./draft-model.js";
export * from "./speculation-stats.js";
export * from "./session-speculator.js";
export * from "./speculative-executor.js";
export * from "./speculating-engine.js";
export * from "./engine-hook.js";

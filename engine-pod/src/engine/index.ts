/**
 * @module The engine's public surface: the `Engine` contract types, its
 * options, the factory, the runtime loader (callers may load the runtime
 * themselves and hand it in), the interrupt inbox, and the `Executor`
 * contract the engine calls. Callers import only this file.
 */
export type * from "./engine-api.js";
export type { Executor, ToolCall, ToolResult } from "./executor.js";
export { createEngine, type EngineExtras } from "./engine.js";
export { InterruptInbox, type InterruptSink } from "./interrupt-inbox.js";
export { loadRuntime, type Runtime } from "./runtime.js";
export { parseEngineOptions, DEFAULT_ENGINE_OPTIONS, type EngineOptions, type GpuOption } from "./engine-options.js";
export { checkedMove, IllegalTransitionError, isLegalMove, RUN_STATE_MOVES, type RunState } from "./run-state.js";
export type { SpeculationHook } from "./speculation-hook.js";

/**
 * @module The engine's public surface: the `Engine` contract types, its
 * options, and the factory. Callers (HTTP server, NATS executor wiring,
 * benchmarks) import only this file.
 */
export type * from "./engine-api.js";
export { createEngine, engineInternals, type EngineExtras, type EngineInternals } from "./engine.js";
export type { Runtime } from "./runtime.js";
export { parseEngineOptions, DEFAULT_ENGINE_OPTIONS, type EngineOptions, type GpuOption } from "./engine-options.js";

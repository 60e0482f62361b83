/**
 * @module The engine's public surface: the `Engine` contract types, its
 * options, and the factory. Callers (HTTP server, NATS executor wiring,
 * benchmarks) import only this file.
 */
export type * from "./engine-api.js";
export { createEngine } from "./engine.js";
export { parseEngineOptions, DEFAULT_ENGINE_OPTIONS, type EngineOptions, type GpuOption } from "./engine-options.js";

/**
 * @module The HTTP server folder's public surface.
 */
export { EngineServer, DEFAULT_SERVER_LIMITS, DRAIN_EXPIRED, type DrainOutcome, type EngineServerOptions, type EngineServerLimits } from "./engine-server.js";
export type { ToolCatalog } from "./resolve-tools.js";
export { HttpError, SESSION_FINISHED, NOT_READY } from "./http-errors.js";
export { parseChatCompletion, toChatMessages, toToolSpecs } from "./openai.js";
export type { ResponseStore, StoredResponse, ResponseRetention } from "./response-store.js";
export { MemoryResponseStore } from "./memory-response-store.js";

/**
 * @module The `openai` backend: an `Engine` over an upstream OpenAI-compatible
 * server (`--backend openai --upstream-url ... --upstream-model ...`).
 */
export { UpstreamEngine, ASYNC_NEEDS_OWN_ENGINE, type UpstreamEngineOptions } from "./upstream-engine.js";
export { parseUpstreamOptions, normalizeUpstreamUrl, type UpstreamOptions } from "./upstream-options.js";
export { UpstreamClient } from "./upstream-client.js";

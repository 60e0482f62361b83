/**
 * @module Speculative tool calls' defaults and bounds: one source for the
 * engine's flags and the EnginePool CRD the operator renders them from, so a
 * pool that leaves a field out gets what the engine would pick.
 */

/** `[default, min, max]` per setting. */
export const SPECULATION_LIMITS = {
  /** Tokens drafted ahead and validated in one pass (O2). */
  maxDraftTokens: { default: 16, min: 1, max: 256 },
  /** The draft model's own llama.cpp threads. */
  draftThreads: { default: 1, min: 1, max: 256 },
  /** How long a cached tool output stays valid. */
  toolCacheTtlSeconds: { default: 60, min: 1, max: 3600 },
  /** Cached outputs per session. */
  toolCacheEntries: { default: 16, min: 1, max: 1024 },
  /** Bytes of cached outputs, all sessions together. */
  toolCacheMaxBytes: { default: 16 * 1_048_576, min: 1, max: 1024 * 1_048_576 },
  /** Largest single output cached; at most the engine's default request body limit, which a larger one could not arrive within. */
  maxCachedOutputBytes: { default: 262_144, min: 1, max: 1_048_576 },
} as const;

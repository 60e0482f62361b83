/**
 * @module The tool cache of speculative tool calls (paper §3, Algorithm 2's
 * `C` and Algorithm 5's engine-side cache): per session, a map from tool name
 * + canonical arguments ({@link toolCallKey}) to the call's future. Entries
 * come from speculation (a tool started before the model asked for it) or from
 * a client (`POST /cache-tool-output`, already settled). A hit hands the entry
 * out once and removes it, so the real call is never run again and the result
 * is never delivered twice. Entries expire after a TTL; each session holds at
 * most `maxEntriesPerSession`, and the whole cache `maxBytes` of outputs.
 * Whatever leaves the cache unused is counted as wasted, with the tool time it
 * cost (a still-running speculative call is aborted).
 */
import { ErrorCode, toolCallKey } from "../../../common/src/index.js";
import { errorOutcome } from "../../../common/src/wire/index.js";
import type { ToolResult } from "../executor/executor.js";

export type CacheSource = "speculative" | "client";

/** One cached call. `result` is set once the future settles. */
export interface CachedCall {
  readonly key: string;
  readonly sessionId: string;
  readonly tool: string;
  /** Undefined: posted by name only, it answers any call of the tool. */
  readonly arguments: Readonly<Record<string, unknown>> | undefined;
  readonly source: CacheSource;
  readonly future: Promise<ToolResult>;
  /** performance.now() when it was started (or posted). */
  readonly startedAt: number;
  /** performance.now() after which it is stale. */
  expiresAt: number;
  result?: ToolResult;
  /** The tool's run time once settled, ms (0 for client-posted outputs). */
  toolMs?: number;
  /** Output bytes counted against `maxBytes` once settled. */
  bytes: number;
  /** Aborts a still-running speculative call when the entry is discarded. */
  readonly abort?: AbortController;
}

export interface ToolCacheOptions {
  /** Entry lifetime, ms (default 60 s). */
  ttlMs?: number;
  /** Entries per session; the oldest is discarded first (default 16). */
  maxEntriesPerSession?: number;
  /** Output bytes over all sessions; the oldest entries are discarded first (default 16 MiB). */
  maxBytes?: number;
  /** Clock, ms (default performance.now). */
  now?: () => number;
}

/** Cumulative counters (Prometheus counters read these at scrape time). */
export interface ToolCacheStats {
  /** Entries added (speculative starts and client posts). */
  stored: { speculative: number; client: number };
  hits: number;
  misses: number;
  /** Entries that left the cache unused (expired, evicted, session ended). */
  wasted: number;
  /** Tool time spent on wasted speculative entries, ms. */
  wastedToolMs: number;
  /** Live entries now. */
  entries: number;
  bytes: number;
}

export type DiscardReason = "expired" | "evicted" | "session_ended" | "replaced";

export class ToolCache {
  private readonly sessions = new Map<string, Map<string, CachedCall>>();
  /** Default (and longest) entry lifetime, ms. */
  readonly ttlMs: number;
  private readonly maxEntriesPerSession: number;
  private readonly maxBytes: number;
  private readonly now: () => number;
  private counters = { speculative: 0, client: 0, hits: 0, misses: 0, wasted: 0, wastedToolMs: 0, bytes: 0 };
  /** Wasted entries per session until the session is dropped (its own accounting). */
  private readonly wastedBySession = new Map<string, { wasted: number; wastedToolMs: number }>();
  /** Called for every discarded entry (metrics, logs). */
  onDiscard: ((entry: CachedCall, reason: DiscardReason) => void) | undefined;

  constructor(options: ToolCacheOptions = {}) {
    this.ttlMs = options.ttlMs ?? 60_000;
    this.maxEntriesPerSession = options.maxEntriesPerSession ?? 16;
    this.maxBytes = options.maxBytes ?? 16 * 1_048_576;
    this.now = options.now ?? (() => performance.now());
  }

  /**
   * Adds a call's future under its key. An entry already there for the key is
   * kept (Algorithm 2: `if τ ∉ C`) unless `replace` (a client post wins over a
   * speculation). Returns the stored entry, or undefined when it was not stored.
   */
  put(
    sessionId: string,
    tool: string,
    args: Readonly<Record<string, unknown>> | undefined,
    future: Promise<ToolResult>,
    opts: { source: CacheSource; ttlMs?: number; abort?: AbortController; replace?: boolean },
  ): CachedCall | undefined {
    this.sweep();
    const key = toolCallKey(tool, args);
    let map = this.sessions.get(sessionId);
    if (map === undefined) {
      map = new Map();
      this.sessions.set(sessionId, map);
    }
    const existing = map.get(key);
    if (existing !== undefined) {
      if (opts.replace !== true) return undefined;
      this.discard(existing, "replaced");
      this.sessions.set(sessionId, map); // discarding the last entry dropped the session's map
    }
    const startedAt = this.now();
    const entry: CachedCall = {
      key,
      sessionId,
      tool,
      arguments: args,
      source: opts.source,
      future,
      startedAt,
      expiresAt: startedAt + (opts.ttlMs ?? this.ttlMs),
      bytes: 0,
      ...(opts.abort !== undefined ? { abort: opts.abort } : {}),
    };
    map.set(key, entry);
    this.counters[opts.source]++;
    future.then(
      (result) => this.settle(entry, result),
      (err: unknown) => this.settle(entry, { callId: "", ...errorOutcome(ErrorCode.ToolFailed, err instanceof Error ? err.message : String(err)) }),
    );
    while (map.size > this.maxEntriesPerSession) this.discard(map.values().next().value!, "evicted");
    return entry;
  }

  /** The entry for this exact call, if cached (no accounting, not removed). */
  peek(sessionId: string, tool: string, args: Readonly<Record<string, unknown>>): CachedCall | undefined {
    this.sweep();
    return this.sessions.get(sessionId)?.get(toolCallKey(tool, args));
  }

  /**
   * The main model's call: on a hit the entry is removed and returned (it is
   * delivered exactly once); on a miss, undefined. Both are counted. An exact
   * key wins over an output posted for the tool by name only.
   */
  take(sessionId: string, tool: string, args: Readonly<Record<string, unknown>>, opts: { countMiss?: boolean } = {}): CachedCall | undefined {
    this.sweep();
    const map = this.sessions.get(sessionId);
    let key = toolCallKey(tool, args);
    let entry = map?.get(key);
    if (entry === undefined) {
      key = toolCallKey(tool, undefined);
      entry = map?.get(key);
    }
    if (entry === undefined) {
      if (opts.countMiss ?? true) this.counters.misses++;
      return undefined;
    }
    map!.delete(key);
    this.counters.bytes -= entry.bytes;
    this.counters.hits++;
    return entry;
  }

  /**
   * The newest entry of the session with arguments, of tool `tool` when given (O2: the draft
   * proposed when a call block opens). Not removed.
   */
  latest(sessionId: string, tool?: string): CachedCall | undefined {
    this.sweep();
    const map = this.sessions.get(sessionId);
    if (map === undefined) return undefined;
    let found: CachedCall | undefined;
    for (const e of map.values()) if (e.arguments !== undefined && (tool === undefined || e.tool === tool)) found = e;
    return found;
  }

  /** Entries of a session, oldest first. */
  entries(sessionId: string): CachedCall[] {
    this.sweep();
    return [...(this.sessions.get(sessionId)?.values() ?? [])];
  }

  /** The session ended: everything it still holds is wasted. Returns the session's wasted totals. */
  dropSession(sessionId: string): { wasted: number; wastedToolMs: number } {
    const map = this.sessions.get(sessionId);
    for (const e of [...(map?.values() ?? [])]) this.discard(e, "session_ended");
    this.sessions.delete(sessionId);
    const totals = this.wastedBySession.get(sessionId) ?? { wasted: 0, wastedToolMs: 0 };
    this.wastedBySession.delete(sessionId);
    return totals;
  }

  /** Drops stale entries (called on every access). */
  sweep(): void {
    const now = this.now();
    for (const map of this.sessions.values()) {
      for (const e of [...map.values()]) if (e.expiresAt <= now) this.discard(e, "expired");
    }
  }

  stats(): ToolCacheStats {
    let entries = 0;
    for (const m of this.sessions.values()) entries += m.size;
    const c = this.counters;
    return {
      stored: { speculative: c.speculative, client: c.client },
      hits: c.hits,
      misses: c.misses,
      wasted: c.wasted,
      wastedToolMs: c.wastedToolMs,
      entries,
      bytes: c.bytes,
    };
  }

  private settle(entry: CachedCall, result: ToolResult): void {
    entry.result = result;
    entry.toolMs = entry.source === "client" ? 0 : (result.runMs ?? this.now() - entry.startedAt);
    const live = this.sessions.get(entry.sessionId)?.get(entry.key) === entry;
    if (!live) return;
    entry.bytes = Buffer.byteLength(result.output, "utf8");
    this.counters.bytes += entry.bytes;
    this.enforceBytes();
  }

  private enforceBytes(): void {
    while (this.counters.bytes > this.maxBytes) {
      let oldest: CachedCall | undefined;
      for (const m of this.sessions.values()) for (const e of m.values()) if (e.bytes > 0 && (oldest === undefined || e.startedAt < oldest.startedAt)) oldest = e;
      if (oldest === undefined) return;
      this.discard(oldest, "evicted");
    }
  }

  private discard(entry: CachedCall, reason: DiscardReason): void {
    const map = this.sessions.get(entry.sessionId);
    if (map?.get(entry.key) !== entry) return;
    map.delete(entry.key);
    if (map.size === 0) this.sessions.delete(entry.sessionId);
    this.counters.bytes -= entry.bytes;
    if (reason !== "replaced" || entry.source === "speculative") {
      let mine = this.wastedBySession.get(entry.sessionId);
      if (mine === undefined) this.wastedBySession.set(entry.sessionId, (mine = { wasted: 0, wastedToolMs: 0 }));
      this.counters.wasted++;
      mine.wasted++;
      if (entry.source === "speculative") {
        // A still-running speculation stops now; its time so far was spent for nothing.
        const ms = entry.toolMs ?? this.now() - entry.startedAt;
        this.counters.wastedToolMs += ms;
        mine.wastedToolMs += ms;
        if (entry.result === undefined) entry.abort?.abort();
      }
    }
    this.onDiscard?.(entry, reason);
  }
}

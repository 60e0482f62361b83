/**
 * @module The engine pod's Prometheus metrics (one prom-client registry per
 * process). Everything is derived from what the engine exposes publicly:
 * session events (TTFT, TPOT, injection delays, trap costs, tool-call
 * outcomes) and `engine.stats()` read at scrape time (gauges, and counters
 * advanced by the difference since the last scrape). Nothing reaches into
 * the engine's internals, and nothing here runs per token.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { SessionEvent } from "../../../common/src/index.js";
import type { Engine, EngineSession, EngineStats } from "../engine/index.js";
import { TtftWindow } from "./ttft-window.js";

const PREFIX = "interlace_engine_";
/** Latency buckets, seconds: 1 ms … 60 s. */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const TOKEN_BUCKETS = [0, 1, 2, 4, 8, 16, 32, 64, 128, 256];

export interface EngineMetricsOptions {
  /** Also collect Node process metrics (default true). */
  processMetrics?: boolean;
}

/** Where counters fed from `stats()` totals stand at the last scrape. */
type StatTotals = Pick<EngineStats, "tokensDecoded" | "tokensPrefilled" | "prefixForks" | "prefixForkedTokens" | "prefixFillWaits" | "prefixStoreInserts" | "prefixStoreEvictions" | "prefixStoreHits" | "interruptsQueued" | "interruptsInjected" | "interruptsDeferred">;

export class EngineMetrics {
  readonly registry = new Registry();
  private engine: Engine | undefined;
  private last: StatTotals = {
    tokensDecoded: 0,
    tokensPrefilled: 0,
    prefixForks: 0,
    prefixForkedTokens: 0,
    prefixFillWaits: 0,
    prefixStoreInserts: 0,
    prefixStoreEvictions: 0,
    prefixStoreHits: 0,
    interruptsQueued: 0,
    interruptsInjected: 0,
    interruptsDeferred: 0,
  };

  readonly ttft: Histogram<"kind">;
  readonly tpot: Histogram<"kind">;
  readonly sessions: Counter<"mode" | "reason">;
  readonly injectionDelay: Histogram<"kind">;
  readonly injectionDelayTokens: Histogram<"kind">;
  readonly trapCost: Histogram<"decision">;
  readonly toolCalls: Counter<"tool" | "outcome">;
  readonly toolCallDuration: Histogram<"tool">;
  readonly completions: Counter<"finish_reason">;
  readonly httpRequests: Counter<"method" | "route" | "status">;
  readonly httpDuration: Histogram<"method" | "route">;
  /** Prefix warms asked by routers (`POST /v1/prefixes`), by outcome. */
  readonly prefixWarms: Counter<"outcome">;
  /** TTFTs of the last seconds, whose p90 the heartbeat carries (for the autoscaler's TTFT objective). */
  readonly recentTtft = new TtftWindow();

  constructor(options: EngineMetricsOptions = {}) {
    const registers = [this.registry];
    if (options.processMetrics ?? true) collectDefaultMetrics({ register: this.registry, prefix: "interlace_" });
    const stats = (): EngineStats | undefined => this.engine?.stats();

    this.ttft = new Histogram({ name: `${PREFIX}ttft_seconds`, help: "Time to first generated token (sessions and completions).", labelNames: ["kind"], buckets: LATENCY_BUCKETS, registers });
    this.tpot = new Histogram({ name: `${PREFIX}tpot_seconds`, help: "Median time per output token of each finished session.", labelNames: ["kind"], buckets: LATENCY_BUCKETS, registers });
    this.sessions = new Counter({ name: `${PREFIX}sessions_total`, help: "Finished sessions by calling mode and end reason.", labelNames: ["mode", "reason"], registers });
    this.injectionDelay = new Histogram({ name: `${PREFIX}injection_delay_seconds`, help: "Interrupt arrival to injection into the token stream.", labelNames: ["kind"], buckets: LATENCY_BUCKETS, registers });
    this.injectionDelayTokens = new Histogram({ name: `${PREFIX}injection_delay_tokens`, help: "Tokens decoded between an interrupt's arrival and its injection.", labelNames: ["kind"], buckets: TOKEN_BUCKETS, registers });
    this.trapCost = new Histogram({ name: `${PREFIX}trap_cost_seconds`, help: "Cost of pausing and resuming a trapped sequence, by KV decision.", labelNames: ["decision"], buckets: LATENCY_BUCKETS, registers });
    this.toolCalls = new Counter({ name: `${PREFIX}tool_calls_total`, help: "Tool calls by tool and outcome (ok, error, invalid: rejected before running).", labelNames: ["tool", "outcome"], registers });
    this.toolCallDuration = new Histogram({ name: `${PREFIX}tool_call_duration_seconds`, help: "Call dispatched to result arrival at the engine.", labelNames: ["tool"], buckets: LATENCY_BUCKETS, registers });
    this.completions = new Counter({ name: `${PREFIX}completions_total`, help: "Chat completions by finish reason.", labelNames: ["finish_reason"], registers });
    this.httpRequests = new Counter({ name: `${PREFIX}http_requests_total`, help: "HTTP requests by method, route and status.", labelNames: ["method", "route", "status"], registers });
    this.httpDuration = new Histogram({ name: `${PREFIX}http_request_duration_seconds`, help: "HTTP request handling time (to the last byte; SSE streams last as long as their session).", labelNames: ["method", "route"], buckets: LATENCY_BUCKETS, registers });
    this.prefixWarms = new Counter({ name: `${PREFIX}prefix_warms_total`, help: "Prefix warms asked by routers, by outcome: warmed, held (already there), busy, no-store, no-prefix, error.", labelNames: ["outcome"], registers });

    // Gauges read at scrape time.
    const gauge = (name: string, help: string, read: (s: EngineStats) => number): void => {
      new Gauge({
        name: `${PREFIX}${name}`,
        help,
        registers,
        collect() {
          const s = stats();
          if (s !== undefined) this.set(read(s));
        },
      });
    };
    gauge("active_sessions", "Sessions holding a sequence.", (s) => s.activeSessions);
    gauge("max_sessions", "Parallel sequences the engine holds.", (s) => s.maxSessions);
    gauge("kv_cells_used", "KV cells in use across all sequences.", (s) => s.kvCellsUsed);
    gauge("kv_cells_total", "KV cells allocated for all sequences.", (s) => s.kvCellsTotal);
    gauge("prefix_store_entries", "Apps' shared prefixes held in the prefix store now.", (s) => s.prefixStoreEntries);
    gauge("prefix_store_homes", "Of the prefix store's entries, apps this engine is the home of (a replica never replaces one).", (s) => s.prefixStoreHomes);
    gauge("prefix_store_size", "Sequences of the prefix store.", (s) => s.prefixStoreSize);
    gauge("batch_size", "Sequences in the last decode step.", (s) => s.lastBatchSize);
    gauge("kv_paused_cells", "KV cells held by sessions paused across a tool wait with their cells kept.", (s) => s.retention?.keptCells ?? 0);

    // Labelled counters over the engine's totals by kind (trap decisions, retention in kv/retention.ts), advanced by their growth since the last scrape; `initial` values are exported at 0 from the start.
    const labelled = (name: string, help: string, label: string, read: (s: EngineStats) => Record<string, number> | undefined, initial: readonly string[] = []): void => {
      const last = new Map<string, number>();
      const counter = new Counter({
        name: `${PREFIX}${name}`,
        help,
        labelNames: [label],
        registers,
        collect() {
          const s = stats();
          const values = s === undefined ? undefined : read(s);
          if (values === undefined) return;
          for (const [value, total] of Object.entries(values)) {
            const delta = total - (last.get(value) ?? 0);
            if (delta > 0 || !last.has(value)) this.inc({ [label]: value }, Math.max(0, delta));
            last.set(value, total);
          }
        },
      });
      for (const value of initial) counter.inc({ [label]: value }, 0);
    };
    labelled("kv_evictions_total", "Paused sessions that gave their KV cells to a waiting request, by how (swap, recompute).", "decision", (s) => s.retention?.evictionsByDecision);
    labelled("kv_recomputed_tokens_total", "Tokens re-evaluated on resume, by why the cells had gone (trap: dropped at the trap; eviction: given to a waiting request).", "cause", (s) => s.retention?.tokensRecomputedByCause);
    labelled("kv_swapped_bytes_total", "Bytes of KV state written to host memory, by the retention policy in force.", "policy", (s) => (s.retention === undefined ? undefined : { [s.retention.policy]: s.retention.bytesSwappedOut }));
    labelled("retention_admissions_total", "Requests that found every sequence held: admitted into a paused session's cells after its eviction (delayed), or refused.", "outcome", (s) =>
      s.retention === undefined ? undefined : { delayed: s.retention.admissionsDelayed, refused: s.retention.admissionsRefused },
    );

    // Counters advanced by the growth of the engine's own totals since the last scrape.
    const counter = (name: string, help: string, key: keyof StatTotals): void => {
      const self = this;
      new Counter({
        name: `${PREFIX}${name}`,
        help,
        registers,
        collect() {
          const s = stats();
          if (s === undefined) return;
          const delta = s[key] - self.last[key];
          if (delta > 0) this.inc(delta);
          self.last[key] = s[key];
        },
      });
    };
    counter("tokens_decoded_total", "Tokens produced by decode steps.", "tokensDecoded");
    counter("tokens_prefilled_total", "Tokens evaluated as prompt (fills, re-entries, recomputes).", "tokensPrefilled");
    counter("prefix_forks_total", "Prompt prefixes forked (copied) from another sequence at admission instead of prefilled.", "prefixForks");
    counter("prefix_forked_tokens_total", "Tokens of the prefixes forked from another sequence.", "prefixForkedTokens");
    counter("prefix_fill_waits_total", "Admissions that waited for another session's prefill of their prefix, or a prefix warm's fill of it, then forked it.", "prefixFillWaits");
    counter("prefix_store_inserts_total", "Shared prefixes copied into the prefix store when a session ended.", "prefixStoreInserts");
    counter("prefix_store_evictions_total", "Prefix-store entries replaced (least recently used) or lost.", "prefixStoreEvictions");
    counter("prefix_store_hits_total", "Sessions that forked their prefix from the prefix store.", "prefixStoreHits");
    counter("interrupts_queued_total", "Interrupts queued for injection.", "interruptsQueued");
    counter("interrupts_injected_total", "Interrupts appended to a live sequence.", "interruptsInjected");
    counter("interrupts_deferred_total", "Interrupts that waited for a critical section (call block) to end.", "interruptsDeferred");
    // Every decision is exported from the start, so rates work before the first trap.
    labelled("traps_total", "Traps by the KV decision taken.", "decision", (s) => s.trapsByDecision, ["keep", "swap", "recompute"]);
  }

  /** The engine whose `stats()` feed the gauges and counters. */
  bindEngine(engine: Engine): void {
    this.engine = engine;
  }

  /** Follows a session's events until it finishes. */
  observeSession(session: EngineSession): void {
    const calls = new Map<string, { tool: string; t: number }>();
    let mode = "async";
    let firstToken = false;
    const onEvent = (event: SessionEvent): void => {
      // The first generated output (text or a call block), ms since the session was accepted.
      if (!firstToken && (event.type === "text" || event.type === "call")) {
        firstToken = true;
        this.recentTtft.record(event.t);
      }
      switch (event.type) {
        case "started":
          mode = event.mode;
          break;
        case "call":
          calls.set(event.callId, { tool: event.tool, t: event.t });
          break;
        case "call_error": {
          const call = calls.get(event.callId);
          this.toolCalls.inc({ tool: call?.tool ?? "unknown", outcome: "invalid" });
          calls.delete(event.callId);
          break;
        }
        case "interrupt": {
          this.injectionDelay.observe({ kind: event.kind }, event.delayMs / 1000);
          this.injectionDelayTokens.observe({ kind: event.kind }, event.delayTokens);
          const call = calls.get(event.id);
          if (call !== undefined && (event.kind === "tool_result" || event.kind === "tool_error")) {
            this.toolCalls.inc({ tool: call.tool, outcome: event.kind === "tool_result" ? "ok" : "error" });
            const arrivedAt = event.t - event.delayMs;
            this.toolCallDuration.observe({ tool: call.tool }, Math.max(0, arrivedAt - call.t) / 1000);
            calls.delete(event.id);
          }
          break;
        }
        case "resume":
          this.trapCost.observe({ decision: event.decision }, event.costMs / 1000);
          break;
        case "done":
          this.sessions.inc({ mode, reason: event.reason });
          if (event.usage.decodedTokens > 0) {
            this.ttft.observe({ kind: "session" }, event.timings.ttftMs / 1000);
            this.tpot.observe({ kind: "session" }, event.timings.tpotMs / 1000);
          }
          break;
        case "text":
        case "trap":
        case "error":
          break;
      }
    };
    // Replay what already happened, then follow; stop at `done`.
    for (const event of session.events) onEvent(event);
    if (session.events.some((e) => e.type === "done")) return;
    const unsubscribe = session.subscribe(onEvent);
    void session.finished.then(unsubscribe, unsubscribe);
  }

  /** Records a finished chat completion (TTFT measured by the HTTP layer). */
  observeCompletion(finishReason: string, ttftMs: number | undefined, tpotMs: number | undefined): void {
    this.completions.inc({ finish_reason: finishReason });
    if (ttftMs !== undefined) {
      this.ttft.observe({ kind: "completion" }, ttftMs / 1000);
      this.recentTtft.record(ttftMs);
    }
    if (tpotMs !== undefined) this.tpot.observe({ kind: "completion" }, tpotMs / 1000);
  }
}

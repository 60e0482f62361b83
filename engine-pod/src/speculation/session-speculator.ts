/**
 * @module One session's speculation (paper §3.1, Algorithm 2, at the serving
 * layer). At every turn start — the session's first fill, and each time a
 * tool result enters the context (injected in async mode, re-entered in sync
 * modes) — the draft model predicts up to λ calls and each prediction that
 * names a speculative tool starts at once through the executor; its future
 * waits in the tool cache. The draft either writes its own call on the
 * session's context (`model`, the default) or predicts the script's next
 * call with accuracy α (`scripted`, for benchmarks). The session's real
 * calls then ask {@link resolve} first: a hit is the cached future (the real
 * call is not run) — a tool still running is waited on, not started again
 * (Algorithm 2, line 17: the wait is what is left of T) — and a miss runs
 * the tool normally. When the session ends, whatever it left in the cache is
 * discarded and counted as wasted.
 *
 * Turn starts are read from the session's own events, so this needs nothing
 * from inside the decode loop. The engine-side pieces (O2 one-pass validation
 * at a call block's start, O3 appending a settled hit at its end) ask this
 * object for the draft and the result through {@link draftCall} and
 * {@link settledHit}.
 */
import {
  formatCallBlock,
  formatInterruptBlock,
  type ScriptedPolicySpec,
  type SessionEvent,
  type SessionSpeculation,
  type SpeculationUsage,
  type ToolSpec,
  type Logger,
} from "../../../common/src/index.js";
import type { Executor, ToolCall, ToolResult } from "../executor/executor.js";
import { formatCallBody, LptDagPolicy, type PolicyView } from "../policy/index.js";
import type { DraftModel, DraftPrompt } from "./draft-model.js";
import { scriptedPredictions } from "./draft-policy.js";
import { startSpeculation, type PredictedCall } from "./planner.js";
import type { SpeculationStats } from "./speculation-stats.js";
import type { CachedCall, ToolCache } from "./tool-cache.js";

type LptSpec = Extract<ScriptedPolicySpec, { type: "lpt-dag" }>;

/** Longest call an unscripted draft writes, tokens (a session may set its own). */
export const DEFAULT_DRAFT_TOKENS = 96;

export interface SessionSpeculatorOptions {
  sessionId: string;
  settings: SessionSpeculation;
  tools: readonly ToolSpec[];
  /** The session's prompt (the draft model's history starts with it, rendered as the draft is prompted). */
  prompt: DraftPrompt;
  /** The main scripted policy (the scripted draft predicts its next call; its call style). */
  policy?: LptSpec;
  /** Runs speculative calls (the engine's real executor, not the speculating wrapper). */
  executor: Executor;
  cache: ToolCache;
  draft?: DraftModel;
  stats: SpeculationStats;
  log: Logger;
}

export class SessionSpeculator {
  readonly usage: SpeculationUsage = {
    draftRuns: 0,
    draftMs: 0,
    draftNoCall: 0,
    started: 0,
    hits: 0,
    misses: 0,
    wasted: 0,
    wastedToolMs: 0,
    savedToolMs: 0,
    draftTokensProposed: 0,
    draftTokensAccepted: 0,
    o3Appends: 0,
  };
  private readonly view = { emittedCalls: new Set<string>(), injected: new Set<string>() };
  private readonly tools: Map<string, ToolSpec>;
  private readonly abort = new AbortController();
  /** The session's assistant turn so far, as CML (what the draft reads after the prompt). */
  private assistant = "";
  private turn = 0;
  private closed = false;
  /** The newest draft run, awaited by tests and by close. */
  private pending: Promise<void> = Promise.resolve();

  constructor(private readonly o: SessionSpeculatorOptions) {
    // Only tools marked speculative, of the allowed pools, may ever start early.
    const pools = o.settings.pools;
    this.tools = new Map(
      o.tools
        .filter((t) => t.speculative === true)
        .filter((t) => pools === undefined || (t.pool !== undefined && pools.includes(`${t.pool.namespace}/${t.pool.name}`)))
        .map((t) => [t.name, t]),
    );
  }

  get engineSide(): boolean {
    return this.o.settings.engineSide ?? true;
  }

  /** Feeds one session event; turn starts trigger a draft. */
  onEvent(event: SessionEvent): void {
    if (this.closed) return;
    switch (event.type) {
      case "started":
        this.turnStart();
        return;
      case "text":
        this.assistant += event.text;
        return;
      case "call":
        this.view.emittedCalls.add(event.callId);
        this.assistant += formatCallBlock(JSON.stringify({ name: event.tool, arguments: event.arguments }), event.callId);
        return;
      case "call_error":
        this.view.emittedCalls.add(event.callId);
        return;
      case "interrupt":
        this.view.injected.add(event.id);
        this.assistant += formatInterruptBlock(event.id, event.value);
        if (event.kind === "tool_result" || event.kind === "tool_error" || event.kind === "user") this.turnStart();
        return;
      // Traps, resumes and the end of the session start no turn.
      case "trap":
      case "resume":
      case "done":
      case "error":
        return;
    }
  }

  /**
   * The session's real call: a cached future on a hit (delivered once, the
   * tool is not run again), undefined on a miss.
   */
  resolve(call: ToolCall): Promise<ToolResult> | undefined {
    // A miss counts only for calls that could have been speculated.
    const speculative = this.tools.has(call.tool);
    const entry = this.o.cache.take(call.sessionId, call.tool, call.arguments, { countMiss: speculative });
    if (entry === undefined) {
      if (speculative) this.usage.misses++;
      return undefined;
    }
    this.recordHit(entry);
    return entry.future.then((r) => ({ ...r, callId: call.id }));
  }

  /**
   * O3: at a call's end, the cached result if it is already there (settled);
   * taken from the cache. Undefined when not cached or still running.
   */
  settledHit(tool: string, args: Readonly<Record<string, unknown>>): ToolResult | undefined {
    const entry = this.o.cache.peek(this.o.sessionId, tool, args);
    if (entry?.result === undefined) return undefined;
    this.o.cache.take(this.o.sessionId, tool, args);
    this.recordHit(entry);
    this.usage.o3Appends++;
    this.o.stats.o3Appends++;
    return entry.result;
  }

  /**
   * O2: the call block to propose as a draft when a call block opens: the
   * newest cached call of the session (of `tool` when known), in the
   * session's call style. Undefined when the cache holds none.
   */
  draftCall(tool?: string): { body: string; entry: CachedCall } | undefined {
    const entry = this.o.cache.latest(this.o.sessionId, tool);
    if (entry === undefined || entry.arguments === undefined) return undefined;
    return { body: formatCallBody(entry.tool, { ...entry.arguments }, this.o.policy?.callStyle ?? "json"), entry };
  }

  /** O2 accounting. */
  recordValidation(proposed: number, accepted: number): void {
    this.usage.draftTokensProposed += proposed;
    this.usage.draftTokensAccepted += accepted;
    this.o.stats.validations++;
    this.o.stats.draftTokensProposed += proposed;
    this.o.stats.draftTokensAccepted += accepted;
  }

  /** Resolves when the latest turn's draft has run and its tools started. */
  settled(): Promise<void> {
    return this.pending;
  }

  /** The session ended: stop drafting, discard what is left (wasted). */
  close(): SpeculationUsage {
    if (this.closed) return this.usage;
    this.closed = true;
    this.abort.abort();
    const wasted = this.o.cache.dropSession(this.o.sessionId);
    this.usage.wasted += wasted.wasted;
    this.usage.wastedToolMs += wasted.wastedToolMs;
    return this.usage;
  }

  private recordHit(entry: CachedCall): void {
    this.usage.hits++;
    // The tool time the hit masked: all of it if done, else how long it has run.
    const saved = entry.toolMs ?? performance.now() - entry.startedAt;
    this.usage.savedToolMs += saved;
    this.o.stats.recordHit(saved);
  }

  /**
   * The draft this session uses: its own setting, else — speculation on and
   * a draft model loaded — the draft model writing its own calls.
   */
  private draftPolicy(): NonNullable<SessionSpeculation["draft"]> | undefined {
    if ((this.o.settings.lambda ?? 1) <= 0) return undefined;
    return this.o.settings.draft ?? (this.o.settings.enabled && this.o.draft !== undefined ? { type: "model" } : undefined);
  }

  /** Algorithm 2, lines 3–11, for the turn that starts now. */
  private turnStart(): void {
    const turn = this.turn++;
    const policy = this.draftPolicy();
    if (policy === undefined) return;
    let work: () => Promise<void>;
    if (policy.type === "model") {
      // The context as it is now: the draft runs on what the main model has seen at this turn start.
      const assistant = this.assistant;
      work = () => this.draftSampled(assistant, policy.maxTokens ?? DEFAULT_DRAFT_TOKENS);
    } else {
      const predictions = this.predict(turn, policy);
      if (predictions.length === 0) return;
      work = () => this.draftAndStart(predictions);
    }
    const previous = this.pending;
    this.pending = previous.then(work).catch((err: unknown) => {
      this.o.log.warn({ err, session: this.o.sessionId }, "speculation failed; the session goes on without it");
    });
  }

  private predict(turn: number, draft: Extract<SessionSpeculation["draft"], { type: "scripted" }>): PredictedCall[] {
    const lambda = this.o.settings.lambda ?? 1;
    const policy = this.o.policy;
    if (policy === undefined) return [];
    const truth = LptDagPolicy.pickReady(policy.calls, this.view as PolicyView);
    if (truth === undefined) return [];
    return scriptedPredictions({ tool: truth.tool, arguments: truth.arguments }, [...this.tools.values()], lambda, {
      alpha: draft.alpha,
      seed: draft.seed ?? 1,
      // Stable across modes of a benchmark: the task's calls, not the session id.
      sessionKey: JSON.stringify(policy.calls.map((c) => [c.id, c.tool, c.arguments])),
      turn,
    });
  }

  /** Counts one draft run (g). */
  private recordDraft(ms: number): void {
    this.usage.draftRuns++;
    this.usage.draftMs += ms;
    this.o.stats.draftRuns++;
    this.o.stats.draftMs += ms;
  }

  /** Starts one predicted call (Algorithm 2, lines 8–10): only a speculative tool, only when not cached. */
  private start(call: PredictedCall): void {
    if (this.closed) return;
    const out = startSpeculation({
      sessionId: this.o.sessionId,
      predictions: [call],
      tools: this.tools,
      settings: { lambda: 1, maxInFlight: this.o.settings.maxInFlight ?? 2 },
      executor: this.o.executor,
      cache: this.o.cache,
      signal: this.abort.signal,
    });
    this.usage.started += out.started.length;
    for (const s of out.skipped) this.o.log.debug({ session: this.o.sessionId, tool: s.call.tool, reason: s.reason }, "predicted call not started");
  }

  private async draftAndStart(predictions: PredictedCall[]): Promise<void> {
    const lambda = this.o.settings.lambda ?? 1;
    const style = this.o.policy?.callStyle ?? "json";
    const history = this.o.draft?.historyTokens(this.o.prompt, this.assistant) ?? [];
    await Promise.all(
      predictions.slice(0, lambda).map(async (call) => {
        // Each sample is the draft model writing the call block: real forward passes.
        if (this.o.draft !== undefined) {
          const tokens = this.o.draft.tokenizeCml(formatCallBlock(formatCallBody(call.tool, call.arguments, style)));
          const run = await this.o.draft.run(history, tokens, this.abort.signal);
          this.recordDraft(run.ms);
        }
        this.start(call);
      }),
    );
  }

  /**
   * Unscripted: λ samples of the draft model writing its own next call on the
   * session's context (the first greedy, the others sampled); each call it
   * writes that names a speculative tool starts at once.
   */
  private async draftSampled(assistant: string, maxTokens: number): Promise<void> {
    const draft = this.o.draft;
    if (draft === undefined) return;
    const lambda = this.o.settings.lambda ?? 1;
    const history = draft.historyTokens(this.o.prompt, assistant);
    await Promise.all(
      Array.from({ length: lambda }, async (_, i) => {
        if (this.closed) return;
        const sample = await draft.sampleCall(history, this.o.tools, {
          maxTokens,
          signal: this.abort.signal,
          ...(i > 0 ? { temperature: 0.8, seed: this.turn * 131 + i } : {}),
        });
        this.recordDraft(sample.ms);
        if (sample.call === undefined) {
          this.usage.draftNoCall = (this.usage.draftNoCall ?? 0) + 1;
          this.o.log.debug({ session: this.o.sessionId, text: sample.text, reason: sample.failure }, "the draft wrote no call");
          return;
        }
        this.start(sample.call);
      }),
    );
  }
}

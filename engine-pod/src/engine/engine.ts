/**
 * @module The `Engine` implementation: admission (slots, capacity, context
 * overflow), the lockstep decode loop with continuous batching, the per-token
 * path (scripted policy, CML monitor, call dispatch, interrupt injection,
 * traps), the calling modes (async, sync with and without prefix reuse,
 * syncParallel) and stateless completions over an idle prefix cache.
 *
 * The loop owns every state transition: outside callers (interrupts, tool
 * results, cancel) only queue work and wake it, and KV operations that take
 * time (pause, resume, re-entry fill, cleanup) run in the background while the
 * session sits in `busy`, so the batch never waits for them.
 *
 * Batching (ENGINE-NOTES): every active sequence advances one token per step,
 * in sequence-id order; busy ids are kept contiguous (gap-filling admission,
 * compaction moves); a long fill is chunked so it never stalls the others; a
 * trap that swaps or recomputes lends its sequence to other sessions and is
 * restored shortly before its expected interrupt.
 */
import { randomUUID } from "node:crypto";
import { LlamaGrammar, LlamaGrammarEvaluationState, TokenBias, type LlamaContextSequence, type Token } from "node-llama-cpp";
import { CML, ErrorCode, InterlaceError, type CreateSessionRequest, type Logger, type SessionEvent, type ToolSpec } from "../../../common/src/index.js";
import { buildCallGrammar, createTokenMonitor, INTR_LOGIT, intrLogitBias, formatCallError, parseCallBody, type MonitorEvent } from "../cml/index.js";
import type { Executor, ToolCall, ToolResult } from "../executor/executor.js";
import { KvManager, expectedWaitMs, pauseSequence, resumeSequence } from "../kv/index.js";
import { createPolicy, scanTranscript, type TokenPolicy } from "../policy/index.js";
import { commonPrefix, SlotAllocator } from "../scheduler/index.js";
import { StreamDetokenizer } from "./detokenizer.js";
import type {
  CompletionRequest,
  CompletionResult,
  Engine,
  EngineSession,
  EngineStats,
  InterruptInput,
} from "./engine-api.js";
import type { EngineOptions } from "./engine-options.js";
import { promptTokens } from "./prompt-tokens.js";
import { loadRuntime, type Runtime } from "./runtime.js";
import { median, SessionState, type SessionConfig } from "./session-state.js";
import { checkSampling, toMessages, validatePolicy, validateTools } from "./validate-request.js";
import { errorOutcome } from "../../../common/src/wire/index.js";

/** Default time budget of one tool call when the spec gives no latency. */
const DEFAULT_CALL_BUDGET_MS = 60_000;

/** What tests and benchmarks may inspect beyond the `Engine` contract. */
export interface EngineInternals {
  runtime: Runtime;
  kv: KvManager;
  /** Sessions moved to a lower sequence id so far (compaction). */
  compactions(): number;
  /** The sequence a session or completion ran on (it may since have been reused). */
  sequenceOf(sessionId: string): LlamaContextSequence | undefined;
  /**
   * `context`: tokens in the session's KV state, as the engine tracks them;
   * `generated`: tokens emitted by decode steps and fed; `sampled`: what the
   * model sampled at each step (differs from `generated` under a policy).
   */
  transcript(sessionId: string): { context: Token[]; generated: Token[]; sampled: Token[] } | undefined;
}

/** The internals of an engine made by {@link createEngine}. */
export function engineInternals(engine: Engine): EngineInternals {
  if (!(engine instanceof LockstepEngine)) throw new Error("not an engine made by createEngine");
  return engine.internals;
}

/** Extra engine options for tests and benchmarks. */
export interface EngineExtras {
  /** Calibrate the KV cost model at start (default true). */
  calibrate?: boolean;
  /**
   * Test hook: logits ADDED to the model's in every decode step, to simulate a
   * model that strongly prefers some tokens. The `[INTR]` ban is added on top,
   * so it must still win.
   */
  extraLogitBias?: ReadonlyMap<Token, number>;
}

/**
 * Bounds that keep a constrained call block finite even for a model that never
 * closes a string (random weights, small models).
 */
const GRAMMAR_BOUNDS = { maxStringLength: 256, maxArrayItems: 16 } as const;

/** Loads the model, creates the context and starts the decode loop. */
export async function createEngine(options: EngineOptions, executor: Executor, log: Logger, extras: EngineExtras = {}): Promise<Engine> {
  const runtime = await loadRuntime(options, log);
  const kv = new KvManager({ policy: options.kvPolicy, log, ...(options.swapDir !== undefined ? { swapRoot: options.swapDir } : {}) });
  if (extras.calibrate ?? true) {
    try {
      await kv.calibrate(runtime.sequences[runtime.sequences.length - 1]!);
    } catch (err) {
      log.warn({ err }, "kv calibration failed; using the default cost model");
    }
  }
  const engine = new LockstepEngine(options, runtime, kv, executor, log, extras);
  engine.start();
  return engine;
}

type DoneReason = Extract<SessionEvent, { type: "done" }>["reason"];

class LockstepEngine implements Engine {
  private readonly sessions = new Map<string, SessionState>();
  private readonly live = new Set<SessionState>();
  private readonly slots: SlotAllocator;
  private wakeResolve: (() => void) | undefined;
  private closed = false;
  private loopDone: Promise<void> = Promise.resolve();
  /** Compaction moves done so far. */
  private moves = 0;
  private readonly grammarCache = new Map<string, LlamaGrammar | null>();
  private readonly counters = {
    lastBatchSize: 0,
    tokensDecoded: 0,
    tokensPrefilled: 0,
    interruptsQueued: 0,
    interruptsInjected: 0,
    interruptsDeferred: 0,
  };

  constructor(
    private readonly options: EngineOptions,
    private readonly runtime: Runtime,
    private readonly kv: KvManager,
    private readonly executor: Executor,
    private readonly log: Logger,
    extras: EngineExtras,
  ) {
    this.slots = new SlotAllocator(runtime.sequences.length);
    const extra = extras.extraLogitBias ?? new Map<Token, number>();
    this.tokenBias = extras.extraLogitBias === undefined ? runtime.intrBias : combinedBias(runtime, extra);
    // Inside a constrained call block no block may open: llama.cpp grammars match a
    // control token by its text, so a string rule would otherwise admit "[CALL]".
    const opening = new Map(extra);
    for (const [id, marker] of runtime.markerTokens) {
      if (marker === CML.CALL || marker === CML.TRAP) opening.set(id as Token, (opening.get(id as Token) ?? 0) + INTR_LOGIT);
    }
    this.callBlockBias = combinedBias(runtime, opening);
  }

  /** Applied in every decode step, grammar or not: the model can never emit `[INTR]`. */
  private readonly tokenBias: TokenBias;
  /** {@link tokenBias} plus bans on `[CALL]` and `[TRAP]`, while the call grammar is active. */
  private readonly callBlockBias: TokenBias;

  get contextSize(): number {
    return this.runtime.contextSize;
  }

  get ready(): boolean {
    return !this.closed;
  }

  start(): void {
    this.loopDone = this.loop().catch((err: unknown) => this.log.error({ err }, "decode loop crashed"));
  }

  // ── public API ────────────────────────────────────────────────────────────

  createSession(request: CreateSessionRequest): EngineSession {
    this.ensureOpen();
    const tools = validateTools(request.tools ?? []);
    const mode = request.mode ?? "async";
    if (!["async", "sync", "syncParallel"].includes(mode)) throw new InterlaceError(ErrorCode.BadRequest, `unknown mode "${String(mode)}"`);
    if (request.policy !== undefined) validatePolicy(request.policy, tools);
    const messages = toMessages(request.prompt, request.system);
    const prompt = promptTokens(this.runtime, { messages, tools: [...tools.values()] });
    this.checkPromptFits(prompt.length);
    const maxTokens = request.maxTokens ?? this.options.maxTokens;
    if (!Number.isInteger(maxTokens) || maxTokens < 1) throw new InterlaceError(ErrorCode.BadRequest, "maxTokens must be a positive integer");
    checkSampling(request.temperature, request.seed);
    const prefixReuse = request.prefixReuse ?? true;
    const config: SessionConfig = {
      kind: "session",
      mode,
      tools,
      maxTokens,
      temperature: request.temperature ?? 0,
      ...(request.seed !== undefined ? { seed: request.seed } : {}),
      grammar: (request.grammar ?? true) && request.policy === undefined,
      kvPolicy: request.kvPolicy ?? "auto",
      prefixReuse,
      stopAtCalls: "never",
    };
    const policy = request.policy !== undefined ? createPolicy(request.policy, this.runtime) : undefined;
    const s = this.admit(randomUUID(), config, prompt, policy, prefixReuse && this.options.prefixCache);
    this.log.debug({ session: s.id, mode, promptTokens: prompt.length, slot: s.slot, scripted: s.scripted }, "session admitted");
    s.emit({ type: "started", sessionId: s.id, mode, promptTokens: prompt.length, scripted: s.scripted, t: s.now() });
    return s;
  }

  getSession(id: string): EngineSession | undefined {
    return this.sessions.get(id);
  }

  interrupt(sessionId: string, input: InterruptInput): boolean {
    const s = this.sessions.get(sessionId);
    if (s === undefined || s.state === "done" || s.cancelRequested) return false;
    this.enqueue(s, input.id ?? `intr_${randomUUID().slice(0, 8)}`, input.kind, input.value);
    return true;
  }

  cancel(sessionId: string): boolean {
    const s = this.sessions.get(sessionId);
    if (s === undefined) return false;
    if (s.state !== "done") {
      s.cancelRequested = true;
      this.wake();
    }
    return true;
  }

  async complete(request: CompletionRequest): Promise<CompletionResult> {
    this.ensureOpen();
    const tools = validateTools(request.tools);
    if (request.policy !== undefined) validatePolicy(request.policy, tools);
    checkSampling(request.temperature, request.seed);
    if (request.maxTokens !== undefined && (!Number.isInteger(request.maxTokens) || request.maxTokens < 1)) {
      throw new InterlaceError(ErrorCode.BadRequest, "maxTokens must be a positive integer");
    }
    const messages = request.messages;
    if (messages.length === 0) throw new InterlaceError(ErrorCode.BadRequest, "messages must not be empty");
    const prompt = promptTokens(this.runtime, {
      messages,
      tools: request.tools,
      ...(request.continueAssistant !== undefined ? { continueAssistant: request.continueAssistant } : {}),
    });
    this.checkPromptFits(prompt.length);
    const config: SessionConfig = {
      kind: "completion",
      mode: "async",
      tools,
      maxTokens: request.maxTokens ?? this.options.maxTokens,
      temperature: request.temperature ?? 0,
      ...(request.seed !== undefined ? { seed: request.seed } : {}),
      grammar: request.policy === undefined,
      kvPolicy: "keep",
      prefixReuse: true,
      stopAtCalls: request.stopAtCalls ?? "turn",
    };
    const policy = request.policy !== undefined ? createPolicy(request.policy, this.runtime) : undefined;
    await this.settleSupersededCompletions(prompt);
    const s = this.admit(`cmpl-${randomUUID()}`, config, prompt, policy, this.options.prefixCache);
    if (policy !== undefined) {
      // A policy resumes where the history stops: calls and results after the last user message.
      const lastUser = messages.map((m) => m.role).lastIndexOf("user");
      const after = messages.slice(lastUser + 1);
      const history = scanTranscript(after.map((m) => m.content).join("\n"));
      for (const id of history.emittedCalls) (s.view.emittedCalls.add(id), s.usedCallIds.add(id));
      for (const id of history.injected) s.view.injected.add(id);
      for (const m of after) if (m.role === "tool" && m.toolCallId !== undefined) s.view.injected.add(m.toolCallId);
    }
    const onText = request.onText;
    if (onText !== undefined) {
      if (config.stopAtCalls === "never") s.onRaw = onText;
      else {
        s.subscribe((e) => {
          if (e.type === "text") onText(e.text);
        });
      }
    }
    const signal = request.signal;
    const onAbort = (): void => void this.cancel(s.id);
    if (signal !== undefined) {
      if (signal.aborted) onAbort();
      else signal.addEventListener("abort", onAbort, { once: true });
    }
    const done = await s.finished;
    signal?.removeEventListener("abort", onAbort);
    this.sessions.delete(s.id);
    if (done.reason === "error") {
      const err = s.events.find((e) => e.type === "error");
      throw new InterlaceError(ErrorCode.Internal, err?.type === "error" ? err.message : "completion failed");
    }
    if (done.reason === "cancelled") throw new InterlaceError(ErrorCode.Cancelled, "completion cancelled");
    return {
      content: s.content,
      raw: s.raw,
      toolCalls: s.toolCalls,
      finishReason: s.finishReason ?? (done.reason === "max_tokens" ? "length" : "stop"),
      scripted: s.scripted,
      usage: {
        promptTokens: s.promptTokens,
        completionTokens: s.usage.decodedTokens,
        prefilledTokens: s.usage.prefilledTokens,
        reusedPrefixTokens: s.reusedPrefixTokens,
      },
    };
  }

  stats(): EngineStats {
    let kvCellsUsed = 0;
    for (const seq of this.runtime.sequences) kvCellsUsed += seq.nextTokenIndex;
    const kvStats = this.kv.stats();
    return {
      activeSessions: this.live.size,
      maxSessions: this.runtime.sequences.length,
      kvCellsUsed,
      kvCellsTotal: this.runtime.contextSize * this.runtime.sequences.length,
      lastBatchSize: this.counters.lastBatchSize,
      tokensDecoded: this.counters.tokensDecoded,
      tokensPrefilled: this.counters.tokensPrefilled,
      interruptsQueued: this.counters.interruptsQueued,
      interruptsInjected: this.counters.interruptsInjected,
      interruptsDeferred: this.counters.interruptsDeferred,
      trapsByDecision: { ...kvStats.trapsByDecision },
    };
  }

  countTokens(text: string): number {
    return this.runtime.tokenizeText(text).length;
  }

  /** For tests and benchmarks: not part of the `Engine` contract. */
  get internals(): EngineInternals {
    return {
      runtime: this.runtime,
      kv: this.kv,
      compactions: () => this.moves,
      sequenceOf: (id) => {
        const s = this.sessions.get(id);
        return s === undefined ? undefined : this.runtime.sequences[s.slot];
      },
      transcript: (id) => {
        const s = this.sessions.get(id);
        return s === undefined ? undefined : { context: s.context.slice(), generated: s.generated.slice(), sampled: s.sampled.slice() };
      },
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    for (const s of this.live) s.cancelRequested = true;
    this.wake();
    // Let the loop finish the cancellations, then stop it.
    const deadline = Date.now() + 5000;
    while (this.live.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    this.closed = true;
    this.wake();
    await this.loopDone;
    await this.kv.close();
    await this.runtime.close();
  }

  // ── admission ─────────────────────────────────────────────────────────────

  private ensureOpen(): void {
    if (this.closed) throw new InterlaceError(ErrorCode.Capacity, "the engine is shutting down");
  }

  private checkPromptFits(tokens: number): void {
    // Room for at least a few generated tokens after the prompt.
    if (tokens + 8 > this.runtime.contextSize) {
      throw new InterlaceError(
        ErrorCode.ContextOverflow,
        `the prompt has ${tokens} tokens; the context holds ${this.runtime.contextSize} per session`,
      );
    }
  }

  /**
   * Async-naive clients abort a request and restart at once with the same
   * history plus an interrupt. The restart can arrive before the server has
   * even seen the old connection close, so: when a running completion's prompt
   * is nearly all of the new prompt (it may still be filling it), give it a moment (bounded) to be
   * cancelled and to release its cells into the prefix cache, instead of
   * re-prefilling the whole history next to it.
   */
  private async settleSupersededCompletions(prompt: readonly Token[], limitMs = 1000): Promise<void> {
    const superseded = [...this.live].filter(
      (x) =>
        x.cancelRequested ||
        (x.config.kind === "completion" && x.state !== "done" && commonPrefix(x.prompt, prompt) >= SUPERSEDED_SHARE * prompt.length),
    );
    if (superseded.length === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(superseded.map((x) => x.finished)), new Promise<void>((resolve) => (timer = setTimeout(resolve, limitMs)))]);
    clearTimeout(timer);
  }

  private admit(id: string, config: SessionConfig, prompt: Token[], policy: TokenPolicy | undefined, reuse: boolean): SessionState {
    // Paused sessions whose results are in come first: they resume into the next free slot.
    const resumable = [...this.live].some((x) => x.state === "trapped" && x.slot < 0 && x.queue.length > 0);
    const grant = resumable ? null : this.slots.acquire(reuse ? prompt : []);
    if (grant === null) {
      throw new InterlaceError(ErrorCode.Capacity, `all ${this.slots.size} sequences are busy; retry later`);
    }
    const seq = this.runtime.sequences[grant.slot]!;
    const monitor = createTokenMonitor({ markerTokens: this.runtime.markerTokens });
    const detok = new StreamDetokenizer(this.runtime.model, this.runtime.markerTokens);
    const s = new SessionState(id, config, monitor, detok, policy, grant.slot, seq);
    s.prompt = prompt;
    s.promptTokens = prompt.length;
    s.usage.promptTokens = prompt.length;
    this.sessions.set(id, s);
    this.live.add(s);
    s.state = "filling";
    this.background(s, async () => {
      if (reuse && grant.reusePrefix > 0) {
        const r = await this.kv.reusePrefix(seq, prompt);
        s.reusedPrefixTokens = r.reusedTokens;
        s.context = prompt.slice(0, r.reusedTokens);
        s.feed = r.suffix;
      } else {
        if (seq.nextTokenIndex > 0) await seq.clearHistory();
        s.context = [];
        s.feed = prompt.slice();
      }
      this.countPrefill(s, s.feed.length);
      s.state = "active";
    });
    return s;
  }

  // ── the loop ──────────────────────────────────────────────────────────────

  private wake(): void {
    const r = this.wakeResolve;
    this.wakeResolve = undefined;
    r?.();
  }

  private async loop(): Promise<void> {
    while (!this.closed) {
      try {
        this.housekeeping();
      } catch (err) {
        // A bookkeeping bug must not stop every session: log it and keep stepping.
        this.log.error({ err }, "decode loop housekeeping failed");
      }
      // In sequence-id order: llama.cpp splits a batch wherever consecutive items' ids are not adjacent.
      const batch = [...this.live].filter((s) => s.state === "active").sort((x, y) => x.slot - y.slot);
      if (batch.length === 0) {
        await new Promise<void>((resolve) => {
          this.wakeResolve = resolve;
          // Work that arrived between housekeeping and here must not be missed.
          if (this.needsAttention()) this.wake();
        });
        continue;
      }
      this.counters.lastBatchSize = batch.length;
      // Every active sequence advances one token; the evaluations land in one batch.
      await Promise.all(batch.map((s) => this.step(s)));
    }
  }

  private needsAttention(): boolean {
    for (const s of this.live) {
      if (s.state === "active") return true;
      if (s.cancelRequested && s.state !== "busy" && s.state !== "done") return true;
      if (s.state === "trapped" && s.queue.length > 0 && this.canResume(s)) return true;
      if (s.state === "waiting" && s.outstanding.size === 0 && s.queue.length > 0) return true;
    }
    return false;
  }

  /** State transitions that happen between steps: cancels, resumes, re-entries, compaction. */
  private housekeeping(): void {
    for (const s of [...this.live]) {
      if (s.state === "busy" || s.state === "done") continue;
      if (s.cancelRequested) {
        this.finish(s, "cancelled");
        continue;
      }
      if (s.state === "trapped" && s.queue.length > 0 && this.canResume(s)) this.resume(s);
      else if (s.state === "waiting" && s.outstanding.size === 0 && s.queue.length > 0) this.reenter(s);
    }
    this.compact();
  }

  /**
   * Keeps busy sequence ids contiguous: llama.cpp splits a batch at every gap
   * between ids, which made steps 1.5-1.8x slower here (ENGINE-NOTES). When a
   * slot below the highest busy one is free, the session on the highest one
   * moves down: its state is saved to host memory and loaded into the lower
   * sequence (cost linear in its tokens), and it decodes on from there.
   */
  private compact(): void {
    if (this.options.compaction === false) return;
    const move = this.slots.gap();
    if (move === null) return;
    const s = [...this.live].find((x) => x.slot === move.from);
    // Only between steps, and only a session with a worthwhile remainder ahead.
    if (s === undefined || s.state !== "active" || s.usage.decodedTokens + COMPACTION_MIN_REMAINING > s.config.maxTokens) return;
    this.slots.claim(move.to);
    const from = move.from;
    const source = s.seq;
    const target = this.runtime.sequences[move.to]!;
    this.background(s, async () => {
      const t0 = performance.now();
      const gen = s.gen;
      s.gen = null;
      await gen?.return();
      try {
        const paused = await pauseSequence(source, "swap", this.kv.swapDir);
        await resumeSequence(paused, target);
      } catch (err) {
        this.slots.release(move.to);
        throw err;
      }
      s.slot = move.to;
      s.seq = target;
      this.slots.release(from);
      this.moves++;
      this.log.debug({ session: s.id, from, to: move.to, tokens: target.nextTokenIndex, ms: performance.now() - t0 }, "sequence compacted");
    });
  }

  /** Runs `op` with the session out of the batch; errors end the session. */
  private background(s: SessionState, op: () => Promise<void>): void {
    s.state = "busy";
    op()
      .then(() => {
        if (s.state === "busy") s.state = "active";
      })
      .catch((err: unknown) => {
        this.log.error({ err, session: s.id }, "session KV operation failed");
        s.state = "active";
        this.fail(s, err);
      })
      .finally(() => this.wake());
  }

  private async step(s: SessionState): Promise<void> {
    const room = this.runtime.contextSize - s.seq.nextTokenIndex;
    if (s.feed.length === 0) {
      this.finish(s, "eos");
      return;
    }
    if (s.feed.length > room - 1) {
      this.finish(s, "max_tokens");
      return;
    }
    const chunk = this.options.prefillChunk ?? DEFAULT_PREFILL_CHUNK;
    if (chunk > 0 && s.feed.length > chunk) {
      // Chunked prefill: a long fill advances one chunk per step, so the sessions
      // decoding beside it keep producing a token every step instead of stalling.
      const head = s.feed.slice(0, chunk);
      const c0 = performance.now();
      try {
        await s.seq.evaluateWithoutGeneratingNewTokens(head);
      } catch (err) {
        this.fail(s, err);
        return;
      }
      if (s.decodeSteps > 0) s.prefillMs += performance.now() - c0;
      s.context.push(...head);
      s.feed = s.feed.slice(chunk);
      return;
    }
    const t0 = performance.now();
    let result: IteratorResult<Token, void>;
    try {
      if (s.gen === null) {
        s.gen = s.seq.evaluate(s.feed, {
          temperature: s.config.temperature,
          ...(s.config.seed !== undefined ? { seed: s.config.seed } : {}),
          tokenBias: () => (s.grammarState !== undefined ? this.callBlockBias : this.tokenBias),
          // Plain temperature sampling over the whole vocabulary (OpenAI's defaults: no top-k, top-p 1).
          topK: 0,
          topP: 1,
          grammarEvaluationState: () => s.grammarState,
          yieldEogToken: true,
        });
        result = await s.gen.next();
      } else {
        result = await s.gen.next(s.feed);
      }
    } catch (err) {
      this.fail(s, err);
      return;
    }
    const stepMs = performance.now() - t0;
    const pureDecode = s.feed.length === 1 && s.decodeSteps > 0;
    s.context.push(...s.feed);
    s.feed = [];
    if (result.done === true) {
      // The generator stops only on a sampling failure with yieldEogToken on.
      this.finish(s, "eos");
      return;
    }
    // TPOT: steps that evaluated only the previous token (no prefill, no injection).
    if (pureDecode) {
      s.stepMs.push(stepMs);
      s.decodeMs += stepMs;
    } else if (s.decodeSteps > 0) s.prefillMs += stepMs;
    try {
      this.onToken(s, result.value);
    } catch (err) {
      // One session's failure must never take the batch down.
      this.log.error({ err, session: s.id }, "token handling failed");
      this.fail(s, err);
    }
  }

  // ── the per-token path ────────────────────────────────────────────────────

  private onToken(s: SessionState, sampled: Token): void {
    s.decodeSteps++;
    s.usage.decodedTokens++;
    this.counters.tokensDecoded++;
    const now = performance.now();
    s.firstTokenAt ??= now;
    s.lastTokenAt = now;
    if (s.cancelRequested) {
      this.finish(s, "cancelled");
      return;
    }

    s.sampled.push(sampled);
    let token = sampled;
    let eos = this.runtime.isEog(sampled);
    if (s.policy !== undefined) {
      // The sample is discarded; the policy's token is what the sequence sees next.
      const step = s.policy.next(s.view);
      eos = step === "eos";
      if (step !== "eos") token = step;
    }
    if (eos) {
      this.onEos(s);
      return;
    }

    const wasCritical = s.monitor.inCriticalSection;
    const text = s.detok.push(token);
    const events = s.monitor.push(token, text);

    // syncParallel and completion turns end at the first non-call continuation after a call.
    if (this.endsTurnOnText(s, wasCritical, events)) {
      this.endTurn(s, "text");
      return;
    }

    s.feed = [token];
    s.generated.push(token);
    s.raw += text;
    s.onRaw?.(text);
    for (const ev of events) this.onMonitorEvent(s, ev);
    if (s.state !== "active") return;
    if (s.usage.decodedTokens >= s.config.maxTokens) {
      if (s.config.kind === "completion" || s.config.mode !== "syncParallel" || s.turnCalls === 0) this.finish(s, "max_tokens");
      else this.endTurn(s, "max_tokens");
      return;
    }
    this.maybeInject(s);
  }

  private endsTurnOnText(s: SessionState, wasCritical: boolean, events: readonly MonitorEvent[]): boolean {
    if (s.turnCalls === 0 || wasCritical || s.scripted) return false;
    const turnMode = s.config.kind === "completion" ? s.config.stopAtCalls === "turn" : s.config.mode === "syncParallel";
    if (!turnMode) return false;
    return events.some((e) => e.type === "text" && e.text.trim() !== "") && !events.some((e) => e.type === "call_start");
  }

  private onMonitorEvent(s: SessionState, ev: MonitorEvent): void {
    switch (ev.type) {
      case "text":
        s.content += ev.text;
        s.emit({ type: "text", text: ev.text, t: s.now() });
        return;
      case "call_start":
        if (s.config.grammar) s.grammarState = this.callGrammarState(s);
        return;
      case "call":
        s.grammarState = undefined;
        this.onCall(s, ev.body, ev.id);
        return;
      case "trap":
        this.onTrap(s);
        return;
      case "malformed": {
        s.grammarState = undefined;
        if (!ev.raw.startsWith(CML.CALL)) {
          // A stray [END]/[HEAD], a broken trap, or a model-forged [INTR] block: not a call, nothing to answer.
          this.log.debug({ session: s.id, reason: ev.reason }, "malformed CML ignored");
          return;
        }
        // A call block that cannot be parsed: the model reads why, as for an invalid call.
        const id = s.callId(undefined);
        s.turnCalls++;
        const failure = { code: ErrorCode.MalformedCall, message: `malformed_call: ${ev.reason}` };
        s.emit({ type: "call_error", callId: id, code: failure.code, message: failure.message, t: s.now() });
        if (s.config.kind === "session") this.enqueue(s, id, "tool_error", formatCallError(failure));
        if (s.config.kind === "session" && s.config.mode === "sync") s.state = "waiting";
        return;
      }
    }
  }

  private onCall(s: SessionState, body: string, proposedId: string | undefined): void {
    const id = s.callId(proposedId);
    s.view.emittedCalls.add(id);
    s.turnCalls++;
    const parsed = parseCallBody(body, s.config.tools);
    if (!parsed.ok) {
      s.emit({ type: "call_error", callId: id, code: parsed.code, message: parsed.message, t: s.now() });
      // The model reads the error as an interrupt; nothing else happens.
      if (s.config.kind === "session") this.enqueue(s, id, "tool_error", formatCallError(parsed));
      if (s.config.kind === "session" && s.config.mode === "sync") s.state = "waiting";
      return;
    }
    s.usage.calls++;
    if (s.config.kind === "completion") {
      s.toolCalls.push({ id, name: parsed.tool, arguments: parsed.arguments });
      return;
    }
    if (s.config.mode === "syncParallel") {
      s.collected.push({ id, tool: parsed.tool, arguments: parsed.arguments });
      return;
    }
    this.dispatch(s, id, parsed.tool, parsed.arguments);
    if (s.config.mode === "sync") {
      // Sync: stop decoding here; re-enter as a new request once the result is in.
      s.state = "waiting";
    }
  }

  private dispatch(s: SessionState, id: string, tool: string, args: Record<string, unknown>): void {
    const spec = s.config.tools.get(tool)!;
    const budget = spec.estimatedLatencyMs !== undefined ? Math.max(DEFAULT_CALL_BUDGET_MS, spec.estimatedLatencyMs * 10) : DEFAULT_CALL_BUDGET_MS;
    const call: ToolCall = { id, sessionId: s.id, tool, arguments: args, spec, deadline: Date.now() + budget };
    s.outstanding.set(id, {
      tool,
      startedAt: Date.now(),
      ...(spec.estimatedLatencyMs !== undefined ? { estimatedLatencyMs: spec.estimatedLatencyMs } : {}),
    });
    s.emit({ type: "call", callId: id, tool, arguments: args, t: s.now() });
    // Not awaited: the loop keeps decoding while the tool runs.
    let settled: Promise<ToolResult>;
    try {
      settled = this.executor.execute(call, s.abort.signal);
    } catch (err) {
      settled = Promise.reject(err);
    }
    settled
      .catch((err: unknown): ToolResult => ({ callId: id, ...errorOutcome(ErrorCode.ToolFailed, err instanceof Error ? err.message : String(err)) }))
      .then((result) => this.onResult(s, id, result));
  }

  private onResult(s: SessionState, id: string, result: ToolResult): void {
    if (s.state === "done" || !s.outstanding.has(id)) return;
    s.outstanding.delete(id);
    this.enqueue(s, id, result.ok ? "tool_result" : "tool_error", result.output);
  }

  private enqueue(s: SessionState, id: string, kind: SessionState["queue"][number]["kind"], value: string): void {
    s.queue.push({ id, kind, value, arrivedAt: performance.now(), arrivedStep: s.decodeSteps, deferred: false });
    this.counters.interruptsQueued++;
    this.wake();
  }

  /** At a token boundary outside any critical section, appends every queued interrupt after the pending token. */
  private maybeInject(s: SessionState): void {
    // Sync modes deliver everything by re-entry (a new request), never into the live stream.
    if (s.queue.length === 0 || s.config.kind === "completion" || s.config.mode !== "async") return;
    if (!s.monitor.safeToInject) {
      for (const q of s.queue) {
        if (!q.deferred && s.monitor.inCriticalSection) {
          q.deferred = true;
          this.counters.interruptsDeferred++;
        }
      }
      return;
    }
    const tokens = this.takeInterrupts(s, "inject");
    s.feed.push(...tokens);
    s.usage.injectedTokens += tokens.length;
  }

  /** Formats and tokenizes every queued interrupt (markers as control tokens, values as plain text) and emits the events. */
  private takeInterrupts(s: SessionState, how: "inject" | "reenter"): Token[] {
    const out: Token[] = [];
    const now = performance.now();
    const ids = this.runtime.markerIds;
    for (const q of s.queue.splice(0)) {
      const tokens = [
        ...ids[CML.INTR],
        ...this.runtime.tokenizeText(q.id),
        ...ids[CML.HEAD],
        ...this.runtime.tokenizeText(q.value),
        ...ids[CML.END],
      ];
      out.push(...tokens);
      s.view.injected.add(q.id);
      s.usage.interrupts++;
      if (how === "inject") this.counters.interruptsInjected++;
      s.emit({
        type: "interrupt",
        id: q.id,
        kind: q.kind,
        value: q.value,
        tokens: tokens.length,
        delayMs: Math.round((now - q.arrivedAt) * 1000) / 1000,
        delayTokens: s.decodeSteps - q.arrivedStep,
        t: s.now(),
      });
    }
    return out;
  }

  // ── EOS, traps, turns ─────────────────────────────────────────────────────

  private onEos(s: SessionState): void {
    // The EOS token is never fed: a resumed sequence continues from before it.
    s.feed = [];
    if (s.monitor.inCriticalSection) {
      // EOS inside a block: the monitor reports it malformed; the turn is over.
      this.finish(s, "eos");
      return;
    }
    if (s.config.kind === "completion") {
      s.finishReason = s.turnCalls > 0 && s.config.stopAtCalls === "turn" ? "tool_calls" : "stop";
      this.finish(s, "eos");
      return;
    }
    if (s.config.mode === "syncParallel" && (s.collected.length > 0 || s.turnCalls > 0)) {
      this.endTurn(s, "eos");
      return;
    }
    if (s.queue.length > 0) {
      // Interrupts already arrived: the model reads them instead of stopping.
      if (s.config.mode === "async") this.maybeInject(s);
      else s.state = "waiting"; // re-entered with them at once
      return;
    }
    if (s.outstanding.size > 0) {
      // AsyncLM: the session cannot end while results are outstanding; wait for them.
      this.enterTrap(s);
      return;
    }
    this.finish(s, "eos");
  }

  private onTrap(s: SessionState): void {
    if (s.config.kind === "completion") {
      if (s.config.stopAtCalls === "never" || s.turnCalls > 0) {
        s.finishReason = s.config.stopAtCalls === "never" ? "trap" : "tool_calls";
        // The trap block is part of the completion; nothing more to sample.
        this.finish(s, "eos");
      }
      return;
    }
    if (s.config.mode === "syncParallel" && s.turnCalls > 0) {
      this.endTurn(s, "trap");
      return;
    }
    if (s.config.mode !== "async") {
      // Sync modes have no pause: the request stops, and a new one starts when there is something to read.
      if (s.queue.length === 0 && s.outstanding.size === 0 && !this.expectsUserInterrupt(s)) this.finish(s, "eos");
      else s.state = "waiting";
      return;
    }
    if (s.queue.length > 0) return; // injected right after this token, no pause
    if (s.outstanding.size === 0 && !this.expectsUserInterrupt(s)) {
      // No call is outstanding, so only a user could wake it: unless a script says one
      // is coming, the trap ends the turn (waiting would hold the slot indefinitely).
      this.finish(s, "eos");
      return;
    }
    this.enterTrap(s);
  }

  /** A script that still needs a user interrupt (AsyncLM §6.6 workloads) waits for it at a trap. */
  private expectsUserInterrupt(s: SessionState): boolean {
    return s.policy?.expectsInterrupt?.(s.view) ?? false;
  }

  /** Pauses the session until its next interrupt; the KV manager decides keep / swap / recompute. */
  private enterTrap(s: SessionState): void {
    s.usage.traps++;
    const pending = [...s.outstanding.values()].map((c) => ({
      startedAt: c.startedAt,
      ...(c.estimatedLatencyMs !== undefined ? { estimatedLatencyMs: c.estimatedLatencyMs } : {}),
    }));
    const wait = expectedWaitMs(pending, Date.now());
    const pressure = this.slots.busy / this.slots.size;
    const contextTokens = s.seq.nextTokenIndex;
    const verdict = this.kv.decide({ expectedWaitMs: wait, contextTokens, kvPressure: pressure, override: s.config.kvPolicy });
    s.trapDecision = verdict.decision;
    s.emit({
      type: "trap",
      decision: verdict.decision,
      expectedWaitMs: Number.isFinite(wait) ? Math.round(wait) : -1,
      contextTokens,
      t: s.now(),
    });
    s.state = "trapped";
    this.background(s, async () => {
      if (verdict.decision !== "keep") {
        // The KV manager requires no live generator on the sequence.
        const gen = s.gen;
        s.gen = null;
        await gen?.return();
      }
      const outcome = await this.kv.trap({ sequence: s.seq, expectedWaitMs: wait, kvPressure: pressure, override: verdict.decision });
      s.paused = outcome.paused;
      s.trapPauseMs = outcome.pauseMs;
      if (outcome.paused.decision !== "keep") {
        // The state lives outside the context now: lend the slot to other sessions until resume.
        this.slots.release(s.slot);
        s.slot = -1;
        // Restore ahead of the expected interrupt, so the restore adds no latency (AsyncLM §5.4).
        if (Number.isFinite(wait)) {
          const lead = Math.max(0, wait - outcome.pauseMs - verdict.restoreLeadMs);
          s.prefetchTimer = setTimeout(() => this.prefetch(s), lead);
          s.prefetchTimer.unref();
        }
      }
      s.state = "trapped";
    });
  }

  /** The expected interrupt is near: take a slot and restore the paused state now, still trapped. */
  private prefetch(s: SessionState): void {
    s.prefetchTimer = undefined;
    const paused = s.paused;
    if (s.state !== "trapped" || paused === undefined || s.slot >= 0 || s.queue.length > 0) return;
    const grant = this.slots.acquire();
    if (grant === null) return; // the interrupt path restores it once a slot frees
    s.slot = grant.slot;
    s.seq = this.runtime.sequences[grant.slot]!;
    this.background(s, async () => {
      const r = await this.kv.resume(paused, s.seq);
      s.paused = undefined;
      s.trapPauseMs = (s.trapPauseMs ?? 0) + r.resumeMs;
      if (r.evaluatedTokens > 0) this.countPrefill(s, r.evaluatedTokens);
      s.state = "trapped";
    });
  }

  /** A trapped session can resume now: it kept its slot, or one is available. */
  private canResume(s: SessionState): boolean {
    return s.slot >= 0 || this.slots.available > 0;
  }

  /** A trapped session's interrupt arrived: take a slot if it lent its own, restore its KV state, then inject. */
  private resume(s: SessionState): void {
    clearTimeout(s.prefetchTimer);
    s.prefetchTimer = undefined;
    if (s.slot < 0) {
      const grant = this.slots.acquire();
      if (grant === null) return; // retried when a slot is released
      s.slot = grant.slot;
      s.seq = this.runtime.sequences[grant.slot]!;
    }
    const paused = s.paused;
    this.background(s, async () => {
      let costMs = s.trapPauseMs ?? 0;
      if (paused !== undefined) {
        // Into whichever sequence the session holds now (a cleared one, possibly not the original).
        const r = await this.kv.resume(paused, s.seq);
        costMs += r.resumeMs;
        if (r.evaluatedTokens > 0) this.countPrefill(s, r.evaluatedTokens);
      }
      s.paused = undefined;
      s.trapPauseMs = undefined;
      s.emit({ type: "resume", decision: s.trapDecision ?? "keep", costMs: Math.round(costMs * 1000) / 1000, t: s.now() });
      s.state = "active";
      this.maybeInject(s);
    });
  }

  /** syncParallel: the turn's calls are complete; run them together, then re-enter. */
  private endTurn(s: SessionState, why: "text" | "eos" | "trap" | "max_tokens"): void {
    if (why === "text" || why === "eos") s.feed = [];
    s.turnCalls = 0;
    const calls = s.collected.splice(0);
    for (const c of calls) this.dispatch(s, c.id, c.tool, c.arguments);
    if (s.config.kind === "completion") {
      s.finishReason = "tool_calls";
      this.finish(s, "eos");
      return;
    }
    if (calls.length === 0 && s.queue.length === 0) {
      this.finish(s, why === "max_tokens" ? "max_tokens" : "eos");
      return;
    }
    s.state = "waiting";
  }

  /**
   * Sync modes: the turn's results are in. Re-enter as a NEW request whose
   * tokens are the whole history plus the results: with prefix reuse only the
   * tokens past the resident prefix are evaluated; without, the sequence is
   * erased and everything is prefilled again.
   */
  private reenter(s: SessionState): void {
    const full = [...s.context, ...s.feed, ...this.takeInterrupts(s, "reenter")];
    this.background(s, async () => {
      const gen = s.gen;
      s.gen = null;
      await gen?.return();
      if (s.config.prefixReuse) {
        const r = await this.kv.reusePrefix(s.seq, full);
        s.context = full.slice(0, r.reusedTokens);
        s.feed = r.suffix;
      } else {
        if (s.seq.nextTokenIndex > 0) await s.seq.clearHistory();
        s.context = [];
        s.feed = full;
      }
      this.countPrefill(s, s.feed.length);
      if (s.usage.decodedTokens >= s.config.maxTokens) {
        s.state = "active";
        this.finish(s, "max_tokens");
        return;
      }
      s.state = "active";
    });
  }

  private countPrefill(s: SessionState, n: number): void {
    s.usage.prefilledTokens += n;
    this.counters.tokensPrefilled += n;
  }

  /**
   * A fresh grammar state for one call block (the grammar is per tool set and
   * cached). The grammar is active only between `[CALL]` and `[END]`: outside
   * call blocks, and whenever tokens are injected, there is none to keep in step.
   */
  private callGrammarState(s: SessionState): LlamaGrammarEvaluationState | undefined {
    if (s.config.tools.size === 0) return undefined;
    const key = JSON.stringify([...s.config.tools.values()].map((t) => [t.name, t.parameters]));
    let grammar = this.grammarCache.get(key);
    if (grammar === undefined) {
      try {
        const gbnf = buildCallGrammar([...s.config.tools.values()], { markerTokens: this.runtime.markerTokens, ...GRAMMAR_BOUNDS });
        grammar = new LlamaGrammar(this.runtime.llama, { grammar: gbnf });
      } catch (err) {
        this.log.warn({ err }, "call grammar unavailable for this tool set; call blocks are unconstrained");
        grammar = null;
      }
      // Tool sets come with requests: bound the cache (grammars are cheap to rebuild).
      if (this.grammarCache.size >= MAX_GRAMMARS) this.grammarCache.clear();
      this.grammarCache.set(key, grammar);
    }
    return grammar === null ? undefined : new LlamaGrammarEvaluationState({ model: this.runtime.model, grammar });
  }

  // ── the end ───────────────────────────────────────────────────────────────

  /** Finished sessions stay readable (late event subscribers) up to a bound, oldest dropped first. */
  private forgetOldSessions(): void {
    let excess = this.sessions.size - this.live.size - MAX_DONE_SESSIONS;
    if (excess <= 0) return;
    for (const [id, s] of this.sessions) {
      if (excess <= 0) break;
      if (s.state === "done" && !this.live.has(s)) {
        this.sessions.delete(id);
        excess--;
      }
    }
  }

  private fail(s: SessionState, err: unknown): void {
    if (s.state === "done") return;
    const message = err instanceof Error ? err.message : String(err);
    s.emit({ type: "error", code: ErrorCode.Internal, message, t: s.now() });
    this.finish(s, "error");
  }

  /**
   * Ends a session: final text, then the KV cleanup in the background (the
   * slot stays busy until its cells are cleared or kept as an idle prefix),
   * then `done`.
   */
  private finish(s: SessionState, reason: DoneReason): void {
    if (s.state === "done") return;
    s.state = "done";
    s.feed = [];
    if (reason === "eos" || reason === "max_tokens") {
      const tail = s.detok.flush();
      const events = tail === "" ? [] : s.monitor.push(-1, tail);
      for (const ev of [...events, ...s.monitor.flush()]) {
        if (ev.type === "text") {
          s.content += ev.text;
          s.raw += ev.text;
          s.emit({ type: "text", text: ev.text, t: s.now() });
        }
      }
    }
    if (reason === "cancelled" || reason === "error") s.abort.abort();
    clearTimeout(s.prefetchTimer);
    const gen = s.gen;
    s.gen = null;
    const paused = s.paused;
    s.paused = undefined;
    // An aborted completion's cells are still a valid prefix: async-naive clients
    // abort and restart with the same history plus an interrupt, so keep them.
    const reusable = reason === "eos" || reason === "max_tokens" || (reason === "cancelled" && s.config.kind === "completion");
    const keepResident = reusable && this.options.prefixCache && s.config.prefixReuse;
    const cleanup = async (): Promise<void> => {
      await gen?.return();
      if (paused !== undefined) await this.kv.discard(paused);
      if (s.slot < 0) return; // a paused session that lent its slot holds no cells
      if (keepResident && s.seq.nextTokenIndex > 0) this.slots.release(s.slot, s.seq.contextTokens);
      else {
        if (s.seq.nextTokenIndex > 0) await s.seq.clearHistory();
        this.slots.release(s.slot);
      }
    };
    cleanup()
      .catch(async (err: unknown) => {
        this.log.warn({ err, session: s.id }, "sequence cleanup failed; clearing it");
        if (s.slot < 0) return;
        await s.seq.clearHistory().catch(() => undefined);
        this.slots.release(s.slot);
      })
      .finally(() => {
        this.live.delete(s);
        this.forgetOldSessions();
        const end = performance.now();
        this.log.debug({ session: s.id, reason, usage: s.usage }, "session done");
        s.emit({
          type: "done",
          reason,
          usage: { ...s.usage },
          timings: {
            ttftMs: round3((s.firstTokenAt ?? end) - s.acceptedAt),
            tpotMs: round3(median(s.stepMs)),
            e2eMs: round3((s.lastTokenAt ?? end) - (s.firstTokenAt ?? end)),
            totalMs: round3(end - s.acceptedAt),
            decodeMs: round3(s.decodeMs),
            prefillMs: round3(s.prefillMs),
          },
          scripted: s.scripted,
          t: s.now(),
        });
        this.wake();
      });
  }
}

const MAX_DONE_SESSIONS = 1024;
/** A running completion holding this share of a new prompt is taken to be superseded by it (an async-naive restart). */
const SUPERSEDED_SHARE = 0.9;
/** Tokens of a fill evaluated per step (see `EngineOptions.prefillChunk`). */
const DEFAULT_PREFILL_CHUNK = 128;
/** Decode steps a session must still have ahead (by its maxTokens) to be worth moving. */
const COMPACTION_MIN_REMAINING = 16;
const MAX_GRAMMARS = 64;

/** The `[INTR]` ban plus a test's extra logits, summed per token. */
function combinedBias(runtime: Runtime, extra: ReadonlyMap<Token, number>): TokenBias {
  const sum = new Map<Token, number>(intrLogitBias(runtime.markerTokens));
  for (const [token, logit] of extra) sum.set(token, (sum.get(token) ?? 0) + logit);
  const bias = new TokenBias(runtime.model.tokenizer);
  for (const [token, logit] of sum) bias.set(token, { logit });
  return bias;
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}

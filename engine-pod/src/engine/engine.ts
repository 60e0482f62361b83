/**
 * @module The `Engine` implementation as callers see it: request checks,
 * admission (scheduler grant, capacity, context overflow, the superseded
 * completion race), sessions and completions over the engine core, stats and
 * shutdown. Everything per step lives in `engine-core.ts`.
 */
import { randomUUID } from "node:crypto";
import type { LlamaContextSequence, Token } from "node-llama-cpp";
import { appSegmentCount, ErrorCode, InterlaceError, prefixHashChain, type ChatMessage, type CreateSessionRequest, type Logger, type RetentionHint, type ToolChoice, type ToolSpec } from "../../../common/src/index.js";
import { validateRetentionHint } from "../../../common/src/wire/index.js";
import { answerInstruction, createTokenMonitor } from "../cml/index.js";
import { costModelKey, KvManager, readCachedCostModel, sharedCostModelKey, writeCachedCostModel, type CostModelKey, type SharedCostModelKey, type SharedCostModels } from "../kv/index.js";
import { createPolicy, scanTranscript } from "../policy/index.js";
import { commonPrefix, PREFIX_STORE_MIN_TOKENS, PrefixStore, Scheduler, type OfferedPrefix } from "../scheduler/index.js";
import { OneWarmAtATime } from "./prefix-warming.js";
import { StreamDetokenizer } from "./detokenizer.js";
import { LogprobLedger } from "./logprob-ledger.js";
import type { AdvertisedPrefixes, CancelReason, CompletionRequest, CompletionResult, Engine, EngineSession, EngineStats, InterruptInput, PrefixWarmOutcome, PrefixWarmResult, SessionPlacement } from "./engine-api.js";
import type { PrefixRole } from "../../../common/src/protocol/index.js";
import { isPrefilling, type StoreFill } from "./prefix-followers.js";
import { EngineCore } from "./engine-core.js";
import { defaultRetained, type EngineOptions } from "./engine-options.js";
import type { Executor } from "./executor.js";
import type { InterruptInbox } from "./interrupt-inbox.js";
import type { SpeculationHook } from "./speculation-hook.js";
import { continuationTokens, promptTokens, sharedPrefixLength } from "./prompt-tokens.js";
import { ResidentPrefixes } from "./resident-prefixes.js";
import { loadRuntime, type Runtime } from "./runtime.js";
import { Sampling } from "./sampling.js";
import { SessionState, type SessionConfig, type SessionInit } from "./session-state.js";
import { completionPolicy, sessionTurnPolicy } from "./turn/index.js";
import { answerFormatOf, checkSampling, toMessages, validatePolicy, validateTools } from "./validate-request.js";

/** Extra engine options for tests, benchmarks and the pod's wiring. */
export interface EngineExtras {
  /** Calibrate the KV cost model at start (default true). */
  calibrate?: boolean;
  /** Calibrated cost models shared with the pool's other pods (NATS): adopted instead of calibrating, written after. */
  sharedCostModels?: SharedCostModels;
  /**
   * Test hook: logits ADDED to the model's in every decode step, to simulate a
   * model that strongly prefers some tokens. The `[INTR]` ban is added on top,
   * so it must still win.
   */
  extraLogitBias?: ReadonlyMap<Token, number>;
  /** A runtime the caller loaded (`loadRuntime`) and keeps observing; default: loaded from `options`. The engine closes it. */
  runtime?: Runtime;
  /** Where user and agent interrupts from other transports arrive (the NATS executor posts there). */
  inbox?: InterruptInbox;
  /** Engine-side speculation (O2, O3); the speculation layer implements it. */
  speculation?: SpeculationHook;
}

/** A running completion holding this share of a new prompt is taken to be superseded by it (an async-naive restart). */
const SUPERSEDED_SHARE = 0.9;
/** Tokens of a fill evaluated per step (see `EngineOptions.prefillChunk`). */
const DEFAULT_PREFILL_CHUNK = 128;

/** Loads the model, creates the context and starts the decode loop. */
export async function createEngine(options: EngineOptions, executor: Executor, log: Logger, extras: EngineExtras = {}): Promise<Engine> {
  const runtime = extras.runtime ?? (await loadRuntime(options, log));
  const kv = new KvManager({ policy: options.kvPolicy, log, ...(options.swapDir !== undefined ? { swapRoot: options.swapDir } : {}) });
  if (extras.calibrate ?? true) await calibrateOrReuse(kv, runtime, options, log, extras.sharedCostModels);
  const scheduler = new Scheduler({
    sequences: runtime.sequences.length,
    prefillChunk: options.prefillChunk ?? DEFAULT_PREFILL_CHUNK,
    compaction: options.compaction ?? true,
    retention: {
      ttlMs: options.responseRetentionMs ?? 60_000,
      maxRetained: options.maxRetainedResponses ?? defaultRetained(runtime.sequences.length),
    },
  });
  const sampling = new Sampling(runtime, log, extras.extraLogitBias);
  // Store sequences follow the session slots; without the prefix cache nothing is reused, so nothing is stored.
  const prefixStore = new PrefixStore(runtime.sequences.length, options.prefixCache ? runtime.prefixStore.length : 0);
  const core = new EngineCore({
    runtime,
    kv,
    scheduler,
    executor,
    sampling,
    log,
    prefixCache: options.prefixCache,
    prefixStore,
    ...(extras.speculation !== undefined ? { speculation: extras.speculation } : {}),
    retention: { policy: options.kvRetention ?? "eta", ttlMs: options.kvRetentionTtlMs ?? 30_000 },
  });
  const engine = new LlamaEngine(options, runtime, kv, scheduler, prefixStore, core, extras.inbox, log);
  core.start();
  return engine;
}

/**
 * Calibrates the KV cost model on a free sequence, or adopts the one in
 * `options.costModelFile` when that was measured on the same model file and
 * settings, else the one `shared` holds for the same model content,
 * settings and hardware (and writes both after calibrating, best effort).
 */
async function calibrateOrReuse(kv: KvManager, runtime: Runtime, options: EngineOptions, log: Logger, shared?: SharedCostModels): Promise<void> {
  const file = options.costModelFile;
  let key: CostModelKey | undefined;
  if (file !== undefined) {
    try {
      key = costModelKey(options.modelPath, options);
      const cached = readCachedCostModel(file, key);
      if (cached !== undefined) {
        kv.adopt(cached);
        log.info({ file, calibratedAt: cached.calibratedAt }, "kv cost model reused; not calibrating");
        return;
      }
    } catch (err) {
      log.warn({ err, file }, "kv cost model file unusable; calibrating");
    }
  }
  let sharedKey: SharedCostModelKey | undefined;
  if (shared !== undefined) {
    try {
      sharedKey = sharedCostModelKey(options.modelPath, options, options.gpu !== false ? await runtime.llama.getGpuDeviceNames() : []);
      const adopted = await shared.read(sharedKey);
      if (adopted !== undefined) {
        kv.adopt(adopted);
        log.info({ hardware: sharedKey.hardware, calibratedAt: adopted.calibratedAt }, "kv cost model adopted from the pool's shared models; not calibrating");
        return;
      }
    } catch (err) {
      log.warn({ err }, "shared kv cost models unreadable; calibrating");
    }
  }
  try {
    const model = await kv.calibrate(runtime.sequences[runtime.sequences.length - 1]!);
    if (file !== undefined && key !== undefined) {
      try {
        writeCachedCostModel(file, key, model);
      } catch (err) {
        log.warn({ err, file }, "kv cost model not written");
      }
    }
    if (shared !== undefined && sharedKey !== undefined && model.source === "measured") {
      await shared.write(sharedKey, model).catch((err: unknown) => log.warn({ err }, "kv cost model not shared"));
    }
  } catch (err) {
    log.warn({ err }, "kv calibration failed; using the default cost model");
  }
}

class LlamaEngine implements Engine {
  private closed = false;
  /** Prompts whose KV cells are resident, as prefix-hash chains (engine heartbeats). */
  private readonly resident: ResidentPrefixes;
  /** Admissions that found every sequence held: given a paused session's cells (delayed by its eviction), or refused. */
  private readonly retentionCounters = { admissionsDelayed: 0, admissionsRefused: 0 };
  /** Sessions and completions admitted so far (stats().admissions; heartbeats carry it). */
  private admissions = 0;
  /** Prefix warms (`warmPrefix`): one at a time; a second ask for the one running joins it. */
  private readonly warming = new OneWarmAtATime();
  /** The running warm's fill of a store sequence, if any: admissions with its prefix follow it. */
  private storeFill: StoreFill | undefined;

  constructor(
    private readonly options: EngineOptions,
    private readonly runtime: Runtime,
    private readonly kv: KvManager,
    private readonly scheduler: Scheduler,
    private readonly store: PrefixStore,
    private readonly core: EngineCore,
    private readonly inbox: InterruptInbox | undefined,
    private readonly log: Logger,
  ) {
    inbox?.open((sessionId, input) => this.interrupt(sessionId, input));
    this.resident = new ResidentPrefixes(4 * runtime.sequences.length + 16);
  }

  get contextSize(): number {
    return this.runtime.contextSize;
  }

  get ready(): boolean {
    return !this.closed;
  }

  createSession(request: CreateSessionRequest, placement: SessionPlacement = {}): EngineSession {
    this.ensureOpen();
    const declared = validateTools(request.tools ?? []);
    const mode = request.mode ?? "async";
    const toolChoice = checkToolChoice(request.toolChoice, declared, request.policy !== undefined);
    // `none`: the model is told of no tools, so it writes no call.
    const tools = request.toolChoice === "none" ? new Map<string, ToolSpec>() : declared;
    const turn = sessionTurnPolicy(mode);
    if (request.policy !== undefined) validatePolicy(request.policy, tools);
    const answerFormat = answerFormatOf(request.responseFormat);
    if (answerFormat !== undefined) {
      if (request.policy !== undefined) throw new InterlaceError(ErrorCode.BadRequest, "responseFormat applies to the model's own answer: not with a scripted policy");
      // Compiled here so that a schema llama.cpp cannot take is this request's 400, not a failed session.
      this.core.checkAnswerFormat(answerFormat, tools.size > 0, "responseFormat");
    }
    const { messages, prompt } = this.sessionPrompt(request, tools, answerFormat);
    this.checkPromptFits(prompt.length);
    const maxTokens = request.maxTokens ?? this.options.maxTokens;
    if (!Number.isInteger(maxTokens) || maxTokens < 1) throw new InterlaceError(ErrorCode.BadRequest, "maxTokens must be a positive integer");
    checkSampling(request.temperature, request.seed);
    const priority = request.priority ?? 0;
    if (!Number.isFinite(priority)) throw new InterlaceError(ErrorCode.BadRequest, "priority must be a finite number");
    if (request.maxBatch !== undefined && (!Number.isInteger(request.maxBatch) || request.maxBatch < 1)) {
      throw new InterlaceError(ErrorCode.BadRequest, "maxBatch must be a positive integer");
    }
    const prefixReuse = request.prefixReuse ?? true;
    const retention = checkRetentionHint(request.retention);
    const config: SessionConfig = {
      mode,
      tools,
      maxTokens,
      temperature: request.temperature ?? 0,
      ...(request.seed !== undefined ? { seed: request.seed } : {}),
      grammar: (request.grammar ?? true) && request.policy === undefined,
      kvPolicy: request.kvPolicy ?? "auto",
      ...(retention !== undefined ? { retention } : {}),
      prefixReuse,
      ...(placement.prefixRole !== undefined ? { prefixRole: placement.prefixRole } : {}),
      priority,
      ...(request.maxBatch !== undefined ? { maxBatch: request.maxBatch } : {}),
      ...(toolChoice !== undefined ? { toolChoice } : {}),
      ...(answerFormat !== undefined ? { answerFormat, answerAcrossCalls: true } : {}),
    };
    const script = request.policy !== undefined ? createPolicy(request.policy, this.runtime) : undefined;
    const s = this.admit({ id: randomUUID(), config, turn, prompt, ...(script !== undefined ? { script } : {}) }, { messages, tools: [...tools.values()] }, prefixReuse && this.options.prefixCache);
    this.core.started(s);
    return s;
  }

  /** A session's messages and prompt tokens: one code path for sessions and prefix warms, so a warm's tokens are a session's. */
  private sessionPrompt(request: CreateSessionRequest, tools: ReadonlyMap<string, ToolSpec>, answerFormat: ReturnType<typeof answerFormatOf>): { messages: ChatMessage[]; prompt: Token[] } {
    const messages = toMessages(request.prompt, request.system, answerFormat !== undefined ? answerInstruction(answerFormat) : undefined);
    return { messages, prompt: promptTokens(this.runtime, { messages, tools: [...tools.values()] }) };
  }

  async warmPrefix(request: CreateSessionRequest): Promise<PrefixWarmResult> {
    this.ensureOpen();
    const declared = validateTools(request.tools ?? []);
    const tools = request.toolChoice === "none" ? new Map<string, ToolSpec>() : declared;
    const { messages, prompt } = this.sessionPrompt(request, tools, answerFormatOf(request.responseFormat));
    this.checkPromptFits(prompt.length);
    const app = { messages, tools: [...tools.values()] };
    const none = (outcome: PrefixWarmOutcome, reason: string, tokens = 0, hashes: string[] = []): PrefixWarmResult => ({ outcome, tokens, hashes, prefilledTokens: 0, reason });
    if (!this.options.prefixCache || this.store.size === 0) return none("no-store", "this engine keeps no prefix store (--prefix-store 0 or no prefix cache)");
    // A warm copies a prefix another engine holds: a replica here, which never replaces an app homed on this engine.
    const shared = this.sharedPrefix(app, prompt, prefixHashChain(app), "replica");
    if (shared === undefined || shared.tokens.length < PREFIX_STORE_MIN_TOKENS) return none("no-prefix", "the request has no shared prefix (system prompt, tools) long enough to store");
    return this.warming.run(shared, () => this.warmShared(shared));
  }

  /** Puts `shared` into the store: copied from a sequence that holds it, else prefilled when the engine is idle enough. */
  private async warmShared(shared: OfferedPrefix): Promise<PrefixWarmResult> {
    const result = (outcome: PrefixWarmOutcome, prefilledTokens = 0, reason?: string): PrefixWarmResult => ({
      outcome,
      tokens: shared.tokens.length,
      hashes: [...shared.hashes],
      prefilledTokens,
      ...(reason !== undefined ? { reason } : {}),
    });
    if (this.store.holds(shared.tokens)) return result("held");
    // A session slot holds it (a live session or an idle prefix cache): a cell copy, no prefill.
    const source = this.runtime.sequences.find((seq) => commonPrefix(seq.contextTokens, shared.tokens) >= shared.tokens.length);
    const filling = this.core.fillingPrompts().some((p) => p !== undefined);
    if (source === undefined) {
      if (filling) return result("busy", 0, "a session is prefilling; a warm would slow its first token");
      if (this.scheduler.available === 0) return result("busy", 0, "no free sequence");
    }
    const target = this.store.offer(shared);
    // Held was answered above: no entry may take a replica.
    if (target === null) return result("full", 0, "every prefix-store entry holds an app homed on this engine");
    const seq = this.allSequences()[target]!;
    this.log.debug({ app: shared.hashes[0], sequence: target, replaced: this.store.held().find((e) => e.sequence === target)?.hashes[0], copied: source !== undefined }, "prefix store: warming");
    // Not advertised as held, nor offered to a session's store copy, while its cells change; sessions admitted
    // meanwhile with this prefix follow the fill and fork from the store once it ends (prefix-followers.ts).
    this.store.fill(target);
    let ended!: () => void;
    this.storeFill = { sequence: target, tokens: shared.tokens, hashes: shared.hashes, done: new Promise<void>((resolve) => (ended = resolve)) };
    try {
      if (source !== undefined && (await this.kv.copyPrefix(seq, source, shared.tokens.length))) {
        this.store.stored(target, shared);
        return result("warmed");
      }
      await this.kv.clear(seq);
      // In chunks, so the decode loop's steps interleave with the fill.
      for (let i = 0; i < shared.tokens.length; i += DEFAULT_PREFILL_CHUNK) {
        this.ensureOpen();
        await seq.evaluateWithoutGeneratingNewTokens(shared.tokens.slice(i, i + DEFAULT_PREFILL_CHUNK));
      }
      this.core.counters.tokensPrefilled += shared.tokens.length;
      this.store.stored(target, shared);
      return result("warmed", shared.tokens.length);
    } catch (err) {
      this.store.emptied(target);
      await this.kv.clear(seq).catch(() => undefined);
      throw err;
    } finally {
      // After a failure's clear: a follower then copies nothing and prefills its whole prompt.
      this.storeFill = undefined;
      ended();
    }
  }

  getSession(id: string): EngineSession | undefined {
    return this.core.sessions.get(id);
  }

  interrupt(sessionId: string, input: InterruptInput): boolean {
    const s = this.core.sessions.get(sessionId);
    if (s === undefined || s.state === "done" || s.cancelRequested) return false;
    this.core.enqueue(s, input.id ?? `intr_${randomUUID().slice(0, 8)}`, input.kind, input.value);
    return true;
  }

  cancel(sessionId: string, reason?: CancelReason): boolean {
    const s = this.core.sessions.get(sessionId);
    if (s === undefined) return false;
    this.cancelState(s, reason);
    return true;
  }

  cancelAll(reason: CancelReason): number {
    const live = [...this.core.live].filter((s) => s.state !== "done" && !s.cancelRequested);
    for (const s of live) this.cancelState(s, reason);
    return live.length;
  }

  /** With a reason, a live session says why before its `done: cancelled` (complete() reads it back). */
  private cancelState(s: SessionState, reason: CancelReason | undefined): void {
    if (reason !== undefined && s.state !== "done" && !s.cancelRequested) s.emit({ type: "error", code: reason.code, message: reason.message, t: s.now() });
    this.core.cancel(s);
  }

  async complete(request: CompletionRequest): Promise<CompletionResult> {
    this.ensureOpen();
    const declared = validateTools(request.tools);
    if (request.policy !== undefined) validatePolicy(request.policy, declared);
    const toolChoice = checkToolChoice(request.toolChoice, declared, request.policy !== undefined);
    // A named choice: every call of the completion is of that tool (the prompt still lists them all).
    const tools = typeof toolChoice === "object" ? new Map([[toolChoice.name, declared.get(toolChoice.name)!]]) : declared;
    checkSampling(request.temperature, request.seed);
    checkGeneration(request);
    if (request.answerFormat !== undefined) {
      if (request.policy !== undefined || request.stopAtCalls === "never") throw new InterlaceError(ErrorCode.BadRequest, "an answer format applies to the model's own answer: not with a scripted policy or raw CML output");
      // Compiled here so that a schema llama.cpp cannot take is this request's 400, not a failed completion.
      this.core.checkAnswerFormat(request.answerFormat, tools.size > 0);
    }
    if (request.maxTokens !== undefined && (!Number.isInteger(request.maxTokens) || request.maxTokens < 1)) {
      throw new InterlaceError(ErrorCode.BadRequest, "maxTokens must be a positive integer");
    }
    const messages = request.messages;
    if (messages.length === 0) throw new InterlaceError(ErrorCode.BadRequest, "messages must not be empty");
    const continued = this.continuation(request);
    const prompt =
      continued?.prompt ??
      promptTokens(this.runtime, {
        messages,
        tools: request.tools,
        ...(request.continueAssistant !== undefined ? { continueAssistant: request.continueAssistant } : {}),
      });
    this.checkPromptFits(prompt.length);
    const config: SessionConfig = {
      mode: "async",
      tools,
      maxTokens: request.maxTokens ?? this.options.maxTokens,
      temperature: request.temperature ?? 0,
      ...(request.seed !== undefined ? { seed: request.seed } : {}),
      grammar: request.policy === undefined,
      kvPolicy: "keep",
      prefixReuse: true,
      priority: 0,
      ...(request.retainAs !== undefined ? { retainAs: request.retainAs } : {}),
      ...(request.topP !== undefined ? { topP: request.topP } : {}),
      ...(toolChoice !== undefined ? { toolChoice } : {}),
      ...(request.answerFormat !== undefined ? { answerFormat: request.answerFormat } : {}),
      ...(request.stop !== undefined ? { stop: request.stop } : {}),
      ...(request.frequencyPenalty !== undefined || request.presencePenalty !== undefined
        ? { penalties: { frequency: request.frequencyPenalty ?? 0, presence: request.presencePenalty ?? 0 } }
        : {}),
    };
    const raw = request.stopAtCalls === "never";
    if (raw && request.logprobs !== undefined) throw new InterlaceError(ErrorCode.BadRequest, "log-probabilities cover the content tokens, which raw CML output does not separate");
    const logprobs = request.logprobs !== undefined ? new LogprobLedger(request.logprobs.top, (token) => this.runtime.model.detokenize([token], true)) : undefined;
    const script = request.policy !== undefined ? createPolicy(request.policy, this.runtime) : undefined;
    if (request.sibling !== true) await this.settleSupersededCompletions(prompt);
    const s = this.admit(
      {
        id: `cmpl-${randomUUID()}`,
        config,
        turn: completionPolicy(request.stopAtCalls ?? "turn", request.maxCalls !== undefined ? { maxCalls: request.maxCalls } : {}),
        prompt,
        ...(script !== undefined ? { script, history: scriptHistory(messages) } : {}),
        // Raw output streams every token's text, markers included; otherwise the text outside blocks.
        ...(raw && request.onText !== undefined ? { onRaw: request.onText } : {}),
        ...(request.onCallStream !== undefined ? { onCallStream: request.onCallStream } : {}),
        ...(logprobs !== undefined ? { logprobs } : {}),
      },
      { messages, tools: request.tools },
      this.options.prefixCache,
      continued?.key,
    );
    const onText = request.onText;
    if (!raw && onText !== undefined) {
      s.subscribe((e) => {
        if (e.type === "text") onText(e.text, logprobs?.drain());
      });
    }
    const signal = request.signal;
    const onAbort = (): void => void this.cancel(s.id);
    if (signal !== undefined) {
      if (signal.aborted) onAbort();
      else signal.addEventListener("abort", onAbort, { once: true });
    }
    const done = await s.finished;
    signal?.removeEventListener("abort", onAbort);
    this.core.sessions.delete(s.id);
    if (done.reason === "error") {
      const err = s.events.find((e) => e.type === "error");
      throw new InterlaceError(ErrorCode.Internal, err?.type === "error" ? err.message : "completion failed");
    }
    if (done.reason === "cancelled") {
      const why = s.events.find((e) => e.type === "error");
      throw why?.type === "error" ? new InterlaceError(why.code as ErrorCode, why.message) : new InterlaceError(ErrorCode.Cancelled, "completion cancelled");
    }
    // Tokens settled after the last text (trailing ones the end dropped never reach here).
    const lastEntries = logprobs?.drain() ?? [];
    if (!raw && onText !== undefined && lastEntries.length > 0) onText("", lastEntries);
    return {
      content: s.content,
      ...(logprobs !== undefined ? { logprobs: [...logprobs.entries] } : {}),
      raw: s.raw,
      toolCalls: s.heldCalls.map((c) => ({ id: c.id, name: c.tool, arguments: c.arguments })),
      finishReason: s.finishReason ?? (done.reason === "max_tokens" ? "length" : "stop"),
      scripted: s.scripted,
      continued: continued !== undefined,
      usage: {
        promptTokens: prompt.length,
        completionTokens: s.usage.decodedTokens,
        prefilledTokens: s.usage.prefilledTokens,
        reusedPrefixTokens: s.reusedPrefixTokens,
      },
    };
  }

  stats(): EngineStats {
    let kvCellsUsed = 0;
    for (const seq of this.allSequences()) kvCellsUsed += seq.nextTokenIndex;
    const kv = this.kv.stats();
    const store = this.store.stats;
    const interrupts = this.core.interrupts.counters;
    return {
      activeSessions: this.core.live.size,
      maxSessions: this.runtime.sequences.length,
      totalSequences: this.scheduler.size,
      freeSequences: this.scheduler.available,
      queuedSessions: this.scheduler.queued(this.core.views()),
      kvCellsUsed,
      kvCellsTotal: this.runtime.contextSize * this.allSequences().length,
      lastBatchSize: this.core.counters.lastBatchSize,
      admissions: this.admissions,
      tokensDecoded: this.core.counters.tokensDecoded,
      tokensPrefilled: this.core.counters.tokensPrefilled,
      interruptsQueued: interrupts.interruptsQueued,
      interruptsInjected: interrupts.interruptsInjected,
      interruptsDeferred: interrupts.interruptsDeferred,
      trapsByDecision: { ...kv.trapsByDecision },
      retention: {
        policy: this.options.kvRetention ?? "eta",
        keptCells: kv.keptCells,
        reclaimableSequences: this.core.reclaimable(),
        evictionsByDecision: { swap: kv.evictionsByDecision.swap, recompute: kv.evictionsByDecision.recompute },
        bytesSwappedOut: kv.bytesSwappedOut,
        tokensRecomputedByCause: { ...kv.tokensRecomputedByCause },
        ...this.retentionCounters,
      },
      compactions: kv.moves,
      prefixForks: kv.prefixForks,
      prefixForkedTokens: kv.prefixForkedTokens,
      prefixFillWaits: this.core.followers.waits,
      prefixStoreSize: this.store.size,
      prefixStoreEntries: store.entries,
      prefixStoreHomes: store.homes,
      prefixStoreInserts: store.inserts,
      prefixStoreEvictions: store.evictions,
      prefixStoreHits: store.hits,
      decodeTokensPerSec: this.core.decodeRate.perSecond(),
    };
  }

  advertisedPrefixes(): AdvertisedPrefixes {
    const live = (id: string): "running" | "prefilling" | undefined => {
      const s = this.core.sessions.get(id);
      if (s === undefined || s.state === "done") return undefined;
      return isPrefilling(s) ? "prefilling" : "running";
    };
    const sequences = this.allSequences().map((seq) => seq.contextTokens);
    const { held, filling } = this.resident.hashes(sequences, live);
    // Store entries advertise their app's hashes even after every record of the app is gone.
    for (const entry of this.store.held()) for (const h of entry.hashes) (held.add(h), filling.delete(h));
    for (const h of this.storeFill?.hashes ?? []) if (!held.has(h)) filling.add(h);
    return { hashes: [...held, ...filling], filling: [...filling] };
  }

  /** What each sequence is being filled with now (index = sequence id): sessions' prompts, and a warm's prefix in its store sequence. */
  private fillingPrompts(): (readonly Token[] | undefined)[] {
    const filling = this.core.fillingPrompts();
    if (this.storeFill !== undefined) filling[this.storeFill.sequence] = this.storeFill.tokens;
    return filling;
  }

  /** The session slots, then the prefix-store sequences (index = sequence id). */
  private allSequences(): LlamaContextSequence[] {
    return [...this.runtime.sequences, ...this.runtime.prefixStore];
  }

  /** The app's shared prefix of a prompt (system prompt, tool block) with its hashes, which the session offers to the prefix store at its end. */
  private sharedPrefix(app: PromptApp, prompt: readonly Token[], chain: readonly string[], role?: PrefixRole): OfferedPrefix | undefined {
    if (this.store.size === 0) return undefined;
    const segments = appSegmentCount(app);
    const length = segments === 0 ? 0 : sharedPrefixLength(this.runtime, app, prompt);
    return length > 0 ? { tokens: prompt.slice(0, length), hashes: chain.slice(0, segments), ...(role !== undefined ? { role } : {}) } : undefined;
  }

  queuedInterrupts(sessionId: string): number {
    const s = this.core.sessions.get(sessionId);
    return s === undefined || s.state === "done" ? 0 : this.core.interrupts.pending(s);
  }

  countTokens(text: string): number {
    return this.runtime.tokenizeText(text).length;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.inbox?.close();
    for (const s of this.core.live) this.core.cancel(s);
    // Let the loop finish the cancellations, then stop it.
    const deadline = Date.now() + 5000;
    while (this.core.live.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    this.closed = true;
    await this.core.stop();
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
   * is nearly all of the new prompt (it may still be filling it), give it a
   * moment (bounded) to be cancelled and to release its cells into the prefix
   * cache, instead of re-prefilling the whole history next to it.
   */
  private async settleSupersededCompletions(prompt: readonly Token[], limitMs = 1000): Promise<void> {
    const superseded = [...this.core.live].filter(
      (x) =>
        x.cancelRequested ||
        (x.turn.restartable && x.state !== "done" && commonPrefix(x.tokens.prompt, prompt) >= SUPERSEDED_SHARE * prompt.length),
    );
    if (superseded.length === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(superseded.map((x) => x.finished)), new Promise<void>((resolve) => (timer = setTimeout(resolve, limitMs)))]);
    clearTimeout(timer);
  }

  /**
   * The prompt of a request that continues a retained sequence: its resident
   * tokens exactly as they are in the KV cells, then the new messages. None
   * when nothing is retained under the key (expired, evicted, never) or the
   * new messages cannot be appended exactly: the caller renders the whole
   * conversation instead (a re-prefill, less what the prefix cache holds).
   */
  private continuation(request: CompletionRequest): { key: string; prompt: Token[] } | undefined {
    const c = request.continuation;
    if (c === undefined || !this.options.prefixCache || c.appended < 1 || c.appended >= request.messages.length) return undefined;
    const resident = this.scheduler.retained(c.key);
    if (resident === undefined) return undefined;
    const split = request.messages.length - c.appended;
    const suffix = continuationTokens(this.runtime, { prior: request.messages.slice(0, split), append: request.messages.slice(split), tools: request.tools });
    return suffix === undefined ? undefined : { key: c.key, prompt: [...resident, ...suffix] };
  }

  /**
   * Admits a session (scheduler grant, or a capacity error) and hands it to
   * the core; records its prompt's prefix hashes (heartbeats) and the app's
   * shared prefix it will offer to the prefix store.
   */
  private admit(init: AdmitInit, app: PromptApp, reuse: boolean, continues?: string): SessionState {
    const { config, prompt } = init;
    const inputs = reuse
      ? { resident: this.allSequences().map((seq) => seq.contextTokens), filling: this.fillingPrompts(), ...(continues !== undefined ? { continues } : {}) }
      : undefined;
    const views = this.core.views();
    let admission = this.scheduler.admit(prompt, config.priority, views, inputs);
    // Every sequence held: a paused session may give its cells up (retention policy), unless a resumed one waits for a slot first.
    const handover = admission === null && this.scheduler.queued(views) === 0 ? this.core.handOver(config.priority) : null;
    if (handover !== null) {
      admission = this.scheduler.handedOver(handover.slot, prompt, inputs);
      this.retentionCounters.admissionsDelayed++;
    }
    if (admission === null) {
      this.retentionCounters.admissionsRefused++;
      throw new InterlaceError(ErrorCode.Capacity, `all ${this.scheduler.size} sequences are busy; retry later`);
    }
    const fork = admission.fork;
    // A fork from a warm still filling uses the store entry once the warm has stored it.
    if (fork !== null && fork.filling && this.storeFill?.sequence === fork.from) void this.storeFill.done.then(() => this.store.used(fork.from));
    else if (fork !== null) this.store.used(fork.from);
    const chain = prefixHashChain(app);
    const shared = config.prefixReuse ? this.sharedPrefix(app, prompt, chain, config.prefixRole) : undefined;
    const s = new SessionState({
      ...init,
      monitor: createTokenMonitor({ markerTokens: this.runtime.markerTokens, streamCallBody: init.onCallStream !== undefined }),
      detok: new StreamDetokenizer(this.runtime.model, this.runtime.markerTokens),
      slot: admission.slot,
      seq: this.runtime.sequences[admission.slot]!,
      ...(shared !== undefined ? { sharedPrefix: shared } : {}),
    });
    this.resident.record(s.id, prompt, chain);
    this.core.add(s, admission, reuse, handover ?? undefined, this.storeFill);
    // Counted once the session is in the figures a heartbeat reads (same tick): a beat with this count shows it.
    this.admissions++;
    return s;
  }
}

/** What admission is given; it adds the monitor, the detokenizer, the slot and the shared prefix. */
type AdmitInit = Omit<SessionInit, "monitor" | "detok" | "slot" | "seq" | "sharedPrefix">;

/** The parts of a request that make its prompt (and its prefix hashes). */
interface PromptApp {
  messages: readonly ChatMessage[];
  tools: readonly ToolSpec[];
}

/** The completion's generation bounds that the HTTP layer checks too: an in-process caller gets the same errors. */
function checkGeneration(request: CompletionRequest): void {
  const inRange = (v: number | undefined, lo: number, hi: number, loOpen = false): boolean => v === undefined || (Number.isFinite(v) && (loOpen ? v > lo : v >= lo) && v <= hi);
  if (!inRange(request.topP, 0, 1, true)) throw new InterlaceError(ErrorCode.BadRequest, "topP must be a number in (0, 1]");
  if (!inRange(request.frequencyPenalty, -2, 2) || !inRange(request.presencePenalty, -2, 2)) throw new InterlaceError(ErrorCode.BadRequest, "frequencyPenalty and presencePenalty must be numbers in -2..2");
  if (request.maxCalls !== undefined && !(Number.isInteger(request.maxCalls) && request.maxCalls >= 1)) throw new InterlaceError(ErrorCode.BadRequest, "maxCalls must be a positive integer");
  if (request.stop !== undefined && (request.stop.length > 4 || request.stop.some((s) => typeof s !== "string" || s === ""))) throw new InterlaceError(ErrorCode.BadRequest, "stop takes at most 4 non-empty strings");
}

/**
 * OpenAI `tool_choice` on this engine: `required` and a named tool are what
 * the session forces (undefined: `auto` and `none`, which need nothing).
 * A scripted policy writes its own calls, so it takes no forced one.
 */
function checkToolChoice(choice: ToolChoice | undefined, tools: ReadonlyMap<string, ToolSpec>, scripted: boolean): SessionConfig["toolChoice"] {
  if (choice === undefined || choice === "auto" || choice === "none") return undefined;
  if (scripted) throw new InterlaceError(ErrorCode.BadRequest, "toolChoice: a scripted policy writes its own calls; a call cannot be forced on it");
  if (tools.size === 0) throw new InterlaceError(ErrorCode.BadRequest, "toolChoice forces a call, but the request has no tools");
  if (choice === "required") return "required";
  if (!tools.has(choice.name)) throw new InterlaceError(ErrorCode.UnknownTool, `toolChoice names "${choice.name}", which is not one of the request's tools`);
  return { name: choice.name };
}

/** A session's retention hint, checked here too with the wire schema: an in-process caller gets the HTTP layer's errors. */
function checkRetentionHint(hint: RetentionHint | undefined): SessionConfig["retention"] {
  if (hint === undefined) return undefined;
  const checked = validateRetentionHint(hint);
  if (!checked.ok) throw new InterlaceError(ErrorCode.BadRequest, `retention: ${checked.error}`);
  return {
    ...(hint.expectedToolMs !== undefined ? { expectedToolMs: hint.expectedToolMs } : {}),
    ...(hint.retentionSeconds !== undefined ? { retentionMs: hint.retentionSeconds * 1000 } : {}),
  };
}

/** A completion's history as a script sees it: the calls and results after the last user message. */
function scriptHistory(messages: readonly (ChatMessage & { toolCallId?: string })[]): { emittedCalls: Set<string>; injected: Set<string> } {
  const after = messages.slice(messages.map((m) => m.role).lastIndexOf("user") + 1);
  const history = scanTranscript(after.map((m) => m.content).join("\n"));
  const injected = new Set(history.injected);
  for (const m of after) if (m.role === "tool" && m.toolCallId !== undefined) injected.add(m.toolCallId);
  return { emittedCalls: new Set(history.emittedCalls), injected };
}

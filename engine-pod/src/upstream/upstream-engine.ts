/**
 * @module The `openai` backend's `Engine`: the sessions API and the
 * OpenAI-compatible endpoint served over an upstream OpenAI-compatible
 * server (vLLM, SGLang, llama.cpp's server, ...). It holds no model and no
 * KV state; `--sequences` bounds the sessions it runs at once (429 beyond).
 * `async` (in-place interrupt injection into a live sequence) needs the own
 * engine and is refused with a 400 that says so.
 */
import { randomUUID } from "node:crypto";
import { Counter, Histogram, type Registry } from "prom-client";
import {
  ErrorCode,
  type AnswerFormat,
  InterlaceError,
  type CreateSessionRequest,
  type Logger,
} from "../../../common/src/index.js";
import { checkSampling, toMessages, validatePolicy, validateTools } from "../engine/validate-request.js";
import type { AdvertisedPrefixes, CancelReason, CompletionRequest, CompletionResult, Engine, EngineSession, EngineStats, InterruptInput } from "../engine/index.js";
import type { Executor } from "../executor/index.js";
import { ScriptedTurns } from "./scripted-turns.js";
import { UpstreamCallStream } from "./upstream-call-stream.js";
import { UpstreamClient, type UpstreamMessage, type UpstreamRequest, type UpstreamToolCall, type UpstreamTurn } from "./upstream-client.js";
import type { UpstreamOptions } from "./upstream-options.js";
import { ASYNC_NEEDS_OWN_ENGINE, upstreamMode } from "./upstream-modes.js";
import { UpstreamSession } from "./upstream-session.js";
import { fromUpstreamCalls, toUpstreamConversation, UpstreamCallIds } from "./upstream-messages.js";

export interface UpstreamEngineOptions {
  upstream: UpstreamOptions;
  /** Sessions at once (`--sequences`). */
  maxSessions: number;
  /** Default token budget of a session (`--max-tokens`). */
  maxTokens: number;
  /** Reported as the engine's context size (`--context-size`); the upstream enforces its own. */
  contextSize: number;
  /** Where upstream metrics are registered. */
  registry?: Registry;
  /** Tool call deadline, ms. */
  callTimeoutMs?: number;
  /** Observes every request a session sends upstream (tests, debugging). */
  onRequest?: (sessionId: string, request: UpstreamRequest) => void;
}

export { ASYNC_NEEDS_OWN_ENGINE };

class UpstreamMetrics {
  readonly requests: Counter<"outcome">;
  readonly tokens: Counter<"kind">;
  readonly duration: Histogram<"outcome">;
  constructor(registry: Registry | undefined) {
    const registers = registry === undefined ? [] : [registry];
    this.requests = new Counter({ name: "interlace_engine_upstream_requests_total", help: "Upstream chat-completion requests by outcome (ok, restarted, or an error code).", labelNames: ["outcome"], registers });
    this.tokens = new Counter({ name: "interlace_engine_upstream_tokens_total", help: "Tokens the upstream reported: prompt, cached (prefix-cache hits, where reported), completion.", labelNames: ["kind"], registers });
    this.duration = new Histogram({ name: "interlace_engine_upstream_request_seconds", help: "Upstream request duration.", labelNames: ["outcome"], buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120], registers });
    for (const kind of ["prompt", "cached", "completion"]) this.tokens.inc({ kind }, 0);
  }
}

export class UpstreamEngine implements Engine {
  private readonly sessions = new Map<string, UpstreamSession>();
  private readonly client: UpstreamClient;
  private readonly metrics: UpstreamMetrics;
  private closed = false;
  private readonly totals = { decoded: 0, prefilled: 0, interrupts: 0 };

  constructor(
    private readonly options: UpstreamEngineOptions,
    private readonly executor: Executor,
    private readonly log: Logger,
  ) {
    this.client = new UpstreamClient(options.upstream, log.child({ subsystem: "upstream" }));
    this.metrics = new UpstreamMetrics(options.registry);
  }

  get contextSize(): number {
    return this.options.contextSize;
  }

  get ready(): boolean {
    return !this.closed;
  }

  /** No tokenizer of the upstream's model here: an estimate (≈4 bytes a token) for limits and reports. */
  countTokens(text: string): number {
    return Math.ceil(Buffer.byteLength(text, "utf8") / 4);
  }

  private live(): number {
    let n = 0;
    for (const s of this.sessions.values()) if (!s.done) n++;
    return n;
  }

  private onTurn = (turn: UpstreamTurn | undefined, outcome: string, ms: number): void => {
    this.metrics.requests.inc({ outcome });
    this.metrics.duration.observe({ outcome }, ms / 1000);
    const u = turn?.usage;
    if (u === undefined) return;
    this.metrics.tokens.inc({ kind: "prompt" }, u.promptTokens);
    this.metrics.tokens.inc({ kind: "cached" }, u.cachedTokens ?? 0);
    this.metrics.tokens.inc({ kind: "completion" }, u.completionTokens);
    this.totals.decoded += u.completionTokens;
    this.totals.prefilled += u.promptTokens - (u.cachedTokens ?? 0);
  };

  createSession(request: CreateSessionRequest): EngineSession {
    if (this.closed) throw new InterlaceError(ErrorCode.Cancelled, "engine is shutting down");
    const mode = request.mode ?? "sync";
    const row = upstreamMode(mode);
    checkSampling(request.temperature, request.seed);
    const tools = validateTools(request.tools ?? []);
    const messages = toMessages(request.prompt, request.system);
    // The same checks as the own engine: known tools, identifier ids, known dependencies.
    if (request.policy !== undefined) validatePolicy(request.policy, tools);
    const script = request.policy === undefined ? undefined : new ScriptedTurns(request.policy, row);
    // Never ignored: this backend does not carry a session's answer format to its upstream yet.
    if (request.responseFormat !== undefined && request.responseFormat.type !== "text") {
      throw new InterlaceError(ErrorCode.BadRequest, "responseFormat: sessions on --backend openai do not support structured answers; use the own engine, or chat completions' response_format");
    }
    const toolChoice = request.toolChoice;
    if (toolChoice !== undefined) {
      if (row.calls !== "tools" || script !== undefined) throw new InterlaceError(ErrorCode.BadRequest, `toolChoice applies to the upstream's own function calling (unscripted sync and syncParallel sessions), not to ${script !== undefined ? "scripted sessions" : mode}`);
      if (typeof toolChoice === "object" && !tools.has(toolChoice.name)) throw new InterlaceError(ErrorCode.UnknownTool, `toolChoice names "${toolChoice.name}", which is not one of the session's tools`);
    }
    const promptTokens = this.countTokens(messages.map((m) => m.content).join("\n"));
    if (promptTokens >= this.options.contextSize) {
      throw new InterlaceError(ErrorCode.ContextOverflow, `prompt of ~${promptTokens} tokens does not fit the context of ${this.options.contextSize} tokens (--context-size)`);
    }
    if (this.live() >= this.options.maxSessions) {
      throw new InterlaceError(ErrorCode.Capacity, `all ${this.options.maxSessions} upstream session slots are busy (--sequences)`);
    }
    const id = `sess_${randomUUID()}`;
    const session = new UpstreamSession(
      {
        id,
        mode,
        row,
        ...(request.system !== undefined ? { system: request.system } : {}),
        messages,
        tools,
        maxTokens: request.maxTokens ?? this.options.maxTokens,
        ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
        ...(request.seed !== undefined ? { seed: request.seed } : {}),
        ...(script !== undefined ? { script } : {}),
        callStyle: request.policy?.type === "lpt-dag" ? (request.policy.callStyle ?? "json") : "json",
        callTimeoutMs: this.options.callTimeoutMs ?? 60_000,
        ...(toolChoice !== undefined ? { toolChoice } : {}),
      },
      {
        client: this.client,
        executor: this.executor,
        log: this.log,
        countTokens: (t) => this.countTokens(t),
        onTurn: this.onTurn,
        ...(this.options.onRequest !== undefined ? { onRequest: this.options.onRequest } : {}),
      },
    );
    this.sessions.set(id, session);
    void session.run();
    void session.finished.then((done) => {
      this.totals.interrupts += done.usage.interrupts;
      // Finished sessions stay readable for late subscribers for a while.
      setTimeout(() => this.sessions.delete(id), 10 * 60_000).unref();
    });
    return session;
  }

  /** The upstream holds the KV cache; this pod knows nothing resident, so routers place its sessions by load only. */
  advertisedPrefixes(): AdvertisedPrefixes {
    return { hashes: [], filling: [] };
  }

  queuedInterrupts(sessionId: string): number {
    return this.sessions.get(sessionId)?.queuedArrivals ?? 0;
  }

  getSession(id: string): EngineSession | undefined {
    return this.sessions.get(id);
  }

  interrupt(sessionId: string, input: InterruptInput): boolean {
    const s = this.sessions.get(sessionId);
    if (s === undefined) return false;
    return s.interrupt({ ...input, id: input.id ?? `intr_${randomUUID().slice(0, 8)}` });
  }

  cancel(sessionId: string, reason?: CancelReason): boolean {
    const s = this.sessions.get(sessionId);
    if (s === undefined) return false;
    s.cancel(reason);
    return true;
  }

  /**
   * The OpenAI-compatible endpoint, passed through to the upstream (tool
   * calls stay the client's). The upstream's text and calls stream to the
   * client as they arrive (`onText`, `onCallStream`).
   */
  async complete(request: CompletionRequest): Promise<CompletionResult> {
    if (this.closed) throw new InterlaceError(ErrorCode.Cancelled, "engine is shutting down");
    if (request.policy !== undefined) throw new InterlaceError(ErrorCode.BadRequest, "interlace_policy needs the llama-cpp backend");
    if (request.continueAssistant === true) throw new InterlaceError(ErrorCode.BadRequest, "interlace_continue needs the llama-cpp backend: OpenAI-compatible upstreams cannot continue an assistant message");
    checkSampling(request.temperature, request.seed);
    const raw = request.stopAtCalls === "never";
    const messages: UpstreamMessage[] = toUpstreamConversation(request.messages);
    const tools = raw ? [] : request.tools.map((t) => ({ type: "function" as const, function: { name: t.name, description: t.description, parameters: t.parameters } }));
    if ((request.toolChoice !== undefined || request.maxCalls !== undefined) && tools.length === 0) {
      throw new InterlaceError(ErrorCode.BadRequest, "tool_choice and parallel_tool_calls apply to the upstream's function calling, which a raw CML request does not use");
    }
    if (request.maxCalls !== undefined && request.maxCalls > 1) throw new InterlaceError(ErrorCode.BadRequest, "max_tool_calls above 1 has no upstream equivalent (parallel_tool_calls: false is 1)");
    const choice = request.toolChoice;
    const started = performance.now();
    const ids = new UpstreamCallIds();
    // Calls stream to the client as the upstream sends them; without tools there are none to stream.
    const onCallStream = request.onCallStream;
    const callStream = onCallStream !== undefined && tools.length > 0 ? new UpstreamCallStream(ids, onCallStream) : undefined;
    let turn: UpstreamTurn;
    try {
      turn = await this.client.stream(
        {
          messages,
          ...(tools.length > 0 ? { tools } : {}),
          ...(request.maxTokens !== undefined ? { maxTokens: request.maxTokens } : {}),
          ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
          ...(request.seed !== undefined ? { seed: request.seed } : {}),
          // The generation parameters go to the upstream as the client sent them: it applies them (or refuses them) itself.
          ...(choice !== undefined ? { toolChoice: typeof choice === "string" ? choice : { type: "function" as const, function: { name: choice.name } } } : {}),
          ...(request.maxCalls !== undefined ? { parallelToolCalls: false } : {}),
          ...(request.topP !== undefined ? { topP: request.topP } : {}),
          ...(request.stop !== undefined ? { stop: request.stop } : {}),
          ...(request.frequencyPenalty !== undefined ? { frequencyPenalty: request.frequencyPenalty } : {}),
          ...(request.presencePenalty !== undefined ? { presencePenalty: request.presencePenalty } : {}),
          ...(request.answerFormat !== undefined ? { responseFormat: upstreamResponseFormat(request.answerFormat) } : {}),
          // Relayed as the upstream computes them (its model, its sampler); a server that sends none fails the turn.
          ...(request.logprobs !== undefined ? { logprobs: request.logprobs } : {}),
        },
        {
          ...(request.signal !== undefined ? { signal: request.signal } : {}),
          ...(request.onText !== undefined ? { onText: request.onText } : {}),
          ...(callStream !== undefined ? { onToolCall: (call: UpstreamToolCall) => callStream.update(call) } : {}),
        },
      );
    } catch (err) {
      this.onTurn(undefined, err instanceof InterlaceError ? err.code : "error", performance.now() - started);
      throw err;
    }
    this.onTurn(turn, "ok", performance.now() - started);
    callStream?.finish();
    const toolCalls = fromUpstreamCalls(turn.toolCalls, ids);
    const u = turn.usage;
    return {
      content: turn.content,
      ...(turn.logprobs !== undefined ? { logprobs: turn.logprobs } : {}),
      raw: turn.content,
      toolCalls,
      finishReason: toolCalls.length > 0 ? "tool_calls" : turn.finishReason === "length" ? "length" : "stop",
      usage: {
        promptTokens: u?.promptTokens ?? this.countTokens(messages.map((m) => m.content ?? "").join("\n")),
        completionTokens: u?.completionTokens ?? 0,
        prefilledTokens: (u?.promptTokens ?? 0) - (u?.cachedTokens ?? 0),
        reusedPrefixTokens: u?.cachedTokens ?? 0,
      },
    };
  }

  stats(): EngineStats {
    const live = this.live();
    return {
      activeSessions: live,
      maxSessions: this.options.maxSessions,
      totalSequences: this.options.maxSessions,
      freeSequences: this.options.maxSessions - live,
      queuedSessions: 0,
      compactions: 0,
      prefixForks: 0,
      prefixForkedTokens: 0,
      prefixFillWaits: 0,
      prefixStoreSize: 0,
      prefixStoreEntries: 0,
      prefixStoreHomes: 0,
      prefixStoreInserts: 0,
      prefixStoreEvictions: 0,
      prefixStoreHits: 0,
      decodeTokensPerSec: 0,
      kvCellsUsed: 0,
      kvCellsTotal: 0,
      lastBatchSize: 0,
      tokensDecoded: this.totals.decoded,
      tokensPrefilled: this.totals.prefilled,
      interruptsQueued: this.totals.interrupts,
      interruptsInjected: 0,
      interruptsDeferred: 0,
      trapsByDecision: { keep: 0, swap: 0, recompute: 0 },
    };
  }

  /** Sessions only: an upstream completion in flight is ended by its HTTP request (the server's close). */
  cancelAll(reason: CancelReason): number {
    const live = [...this.sessions.values()].filter((s) => !s.done);
    for (const s of live) s.cancel(reason);
    return live.length;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const live = [...this.sessions.values()].filter((s) => !s.done);
    for (const s of live) s.cancel();
    await Promise.allSettled(live.map((s) => s.finished));
  }
}

/** The answer format in OpenAI's `response_format` shape, for the upstream's own structured outputs. */
function upstreamResponseFormat(format: AnswerFormat): Record<string, unknown> {
  return format.type === "json_object" ? { type: "json_object" } : { type: "json_schema", json_schema: { name: "answer", schema: format.schema, strict: true } };
}

/**
 * @module One session of the `openai` backend: the sessions API's events
 * over a loop of upstream requests.
 *
 * - `sync` / `syncParallel` (the standard tool loop): the tools go upstream
 *   as OpenAI function tools; the upstream's `tool_calls` run on our
 *   executor (ToolPools over NATS) one at a time (sync) or all at once
 *   (syncParallel); their results go back as `tool` messages in the next
 *   request. User/agent interrupts join the next request as user messages.
 *   A session's `toolChoice` goes with the first request only (then the
 *   upstream's default applies, as the Agents SDK resets a forced choice).
 * - `asyncNaive` (AsyncLM §4.4): the CML system prompt goes upstream; call
 *   blocks are parsed from the streamed text (the token-free text mode of the
 *   CML monitor) and dispatched the moment their `[END]` arrives; every
 *   arrival stops the request (outside a call block, the client-side
 *   critical section) and restarts it with the history plus the interrupt
 *   blocks. The upstream's prefix cache is what keeps restarts cheap.
 * - A scripted `lpt-dag` policy (benchmarks) is replayed through a literal
 *   grammar per request (`scripted-turns.ts`); its calls are CML text in
 *   every mode.
 *
 * What differs between modes is a row of `upstream-modes.ts`. In every mode
 * the session ends only once the model has read every arrival it accepted
 * (an arrival during the last turn gets one more request), as the own
 * engine's sync re-entry does.
 */
import {
  ErrorCode,
  formatInterruptBlock,
  InterlaceError,
  type CallingMode,
  type ChatMessage,
  type InterruptKind,
  type SessionEvent,
  type SessionUsage,
  type ToolChoice,
  type ToolSpec,
  type Logger,
} from "../../../common/src/index.js";
import { errorOutcome, formatErrorLine } from "../../../common/src/wire/index.js";
import { createTokenMonitor, formatCallError, parseCallBody, type TokenMonitor } from "../cml/index.js";
import type { CancelReason, EngineSession, InterruptInput, SessionSnapshot } from "../engine/index.js";
import type { Executor, ToolResult } from "../executor/index.js";
import { buildCmlSystemPrompt } from "../prompt/index.js";
import { READ_ONLY, type ScriptedTurns, type ScriptStep } from "./scripted-turns.js";
import type { UpstreamMode } from "./upstream-modes.js";
import type { UpstreamClient, UpstreamMessage, UpstreamRequest, UpstreamTool, UpstreamTurn } from "./upstream-client.js";

type DoneEvent = Extract<SessionEvent, { type: "done" }>;

export interface UpstreamSessionConfig {
  id: string;
  /** Reported in `started` events; the row carries the behaviour. */
  mode: CallingMode;
  row: UpstreamMode;
  system?: string;
  messages: ChatMessage[];
  tools: ReadonlyMap<string, ToolSpec>;
  maxTokens: number;
  temperature?: number;
  seed?: number;
  script?: ScriptedTurns;
  callStyle: "json" | "python";
  /** Deadline given to each tool call, ms. */
  callTimeoutMs: number;
  /** The first request's `tool_choice` (sync/syncParallel); dropped once its tools have run. */
  toolChoice?: ToolChoice;
}

export interface UpstreamSessionDeps {
  client: UpstreamClient;
  executor: Executor;
  log: Logger;
  countTokens: (text: string) => number;
  /** Told of every finished upstream request (metrics, engine stats). */
  onTurn: (turn: UpstreamTurn | undefined, outcome: string, ms: number) => void;
  /** Observes every request sent upstream (tests, debugging). */
  onRequest?: (sessionId: string, request: UpstreamRequest) => void;
}

interface Arrival {
  id: string;
  kind: InterruptKind;
  value: string;
  arrivedAt: number;
}

/** An upstream call id as an identifier our events, subjects and CML accept. */
function safeCallId(raw: string, n: number): string {
  const cleaned = raw.replace(/[^A-Za-z0-9_]/g, "_").slice(0, 64);
  return /^[A-Za-z_]/.test(cleaned) ? cleaned : `call_${n}`;
}

export class UpstreamSession implements EngineSession {
  readonly events: SessionEvent[] = [];
  readonly finished: Promise<DoneEvent>;
  private resolveFinished!: (e: DoneEvent) => void;
  private readonly listeners = new Set<(e: SessionEvent) => void>();
  private readonly abort = new AbortController();
  private readonly acceptedAt = performance.now();
  private firstTokenAt: number | undefined;
  private lastTokenAt: number | undefined;
  private readonly queue: Arrival[] = [];

  /** Arrivals queued and not yet part of the history. */
  get queuedArrivals(): number {
    return this.queue.length;
  }
  private wake: (() => void) | undefined;
  private outstanding = 0;
  private readonly emitted = new Set<string>();
  private readonly injected = new Set<string>();
  private readonly usedIds = new Set<string>();
  private readonly usage: SessionUsage = { promptTokens: 0, prefilledTokens: 0, decodedTokens: 0, injectedTokens: 0, calls: 0, interrupts: 0, traps: 0 };
  private readonly upstream = { requests: 0, promptTokens: 0, cachedTokens: null as number | null, completionTokens: 0 };
  private isDone = false;
  /** The conversation after the system prompt, in upstream messages. */
  private readonly history: UpstreamMessage[];
  /** Arrivals went into the history after the last request: the model has not read them yet. */
  private unread = false;

  constructor(
    readonly config: UpstreamSessionConfig,
    private readonly deps: UpstreamSessionDeps,
  ) {
    this.finished = new Promise((r) => (this.resolveFinished = r));
    const system = config.messages.find((m) => m.role === "system")?.content ?? config.system;
    const cml = this.usesCml;
    const systemText = cml ? buildCmlSystemPrompt({ ...(system !== undefined ? { system } : {}), tools: [...config.tools.values()], callStyle: config.callStyle }) : system;
    this.history = [
      ...(systemText !== undefined && systemText !== "" ? [{ role: "system" as const, content: systemText }] : []),
      ...config.messages.filter((m) => m.role !== "system").map(toUpstreamMessage),
    ];
  }

  get id(): string {
    return this.config.id;
  }

  /** Calls as CML text in the stream (the mode's row, or a script), else the upstream's own tool calls. */
  private get usesCml(): boolean {
    return this.config.row.calls === "cml" || this.config.script !== undefined;
  }

  get done(): boolean {
    return this.isDone;
  }

  get scripted(): boolean {
    return this.config.script !== undefined;
  }

  /** No KV state here: the run state only (the upstream holds the sequence). */
  inspect(): SessionSnapshot {
    return { state: this.isDone ? "done" : this.outstanding > 0 ? "waiting" : "active", sequence: null, tokens: { context: [], generated: [], sampled: [] } };
  }

  subscribe(listener: (event: SessionEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private now(): number {
    return Math.round((performance.now() - this.acceptedAt) * 1000) / 1000;
  }

  private emit(event: SessionEvent): void {
    this.events.push(event);
    for (const l of this.listeners) {
      try {
        l(event);
      } catch {
        // A failing subscriber must not break the session.
      }
    }
  }

  /** Queues a user/agent interrupt; false once the session is done. */
  interrupt(input: InterruptInput & { id: string }): boolean {
    if (this.isDone) return false;
    this.arrive({ id: input.id, kind: input.kind, value: input.value, arrivedAt: performance.now() });
    return true;
  }

  /** Ends the session as cancelled; with `reason`, an `error` event saying why comes first. */
  cancel(reason?: CancelReason): void {
    if (this.isDone) return;
    if (reason !== undefined && !this.abort.signal.aborted) this.emit({ type: "error", code: reason.code, message: reason.message, t: this.now() });
    this.abort.abort();
    this.finish("cancelled");
  }

  private arrive(a: Arrival): void {
    this.queue.push(a);
    this.wake?.();
  }

  /** Resolves at the next arrival (or at once when one is queued or the session is cancelled). */
  private async nextArrival(): Promise<void> {
    while (this.queue.length === 0 && !this.abort.signal.aborted) await new Promise<void>((r) => (this.wake = r));
    this.wake = undefined;
  }

  /** Runs the session to its `done` event; never rejects. */
  async run(): Promise<void> {
    const prompt = this.history.map((m) => ("content" in m && typeof m.content === "string" ? m.content : "")).join("\n");
    this.usage.promptTokens = this.deps.countTokens(prompt);
    this.emit({ type: "started", sessionId: this.id, mode: this.config.mode, promptTokens: this.usage.promptTokens, scripted: this.scripted, t: this.now() });
    try {
      const reason = this.usesCml ? await this.runCml() : await this.runToolLoop();
      this.finish(reason);
    } catch (err) {
      if (this.isDone) return;
      if (this.abort.signal.aborted) return this.finish("cancelled");
      const e = err instanceof InterlaceError ? err : new InterlaceError(ErrorCode.Internal, (err as Error).message ?? String(err));
      this.deps.log.warn({ session: this.id, code: e.code, err: e.message }, "upstream session failed");
      this.emit({ type: "error", code: e.code, message: e.message, t: this.now() });
      this.finish("error");
    }
  }

  private remainingTokens(): number {
    return this.config.maxTokens - this.usage.decodedTokens;
  }

  /** One upstream request, accounted; `signal` may stop it early (a restart). */
  private async request(req: Omit<UpstreamRequest, "maxTokens" | "temperature" | "seed">, onText: (text: string) => void, signal?: AbortSignal): Promise<UpstreamTurn> {
    const started = performance.now();
    let chunks = 0;
    const sig = signal === undefined ? this.abort.signal : AbortSignal.any([this.abort.signal, signal]);
    const full: UpstreamRequest = {
      ...req,
      maxTokens: Math.max(1, this.remainingTokens()),
      ...(this.config.temperature !== undefined ? { temperature: this.config.temperature } : {}),
      ...(this.config.seed !== undefined ? { seed: this.config.seed } : {}),
    };
    this.unread = false;
    this.deps.onRequest?.(this.id, full);
    try {
      const turn = await this.deps.client.stream(
        full,
        {
          signal: sig,
          onText: (text) => {
            chunks++;
            const t = performance.now();
            this.firstTokenAt ??= t;
            this.lastTokenAt = t;
            onText(text);
          },
        },
      );
      this.account(turn, chunks);
      this.deps.onTurn(turn, "ok", performance.now() - started);
      return turn;
    } catch (err) {
      const restarted = signal?.aborted === true && !this.abort.signal.aborted;
      if (restarted) {
        // Stopped by us for a restart: what streamed so far counts; the upstream's usage never came.
        const turn: UpstreamTurn = { content: "", toolCalls: [], finishReason: "aborted", attempts: 1 };
        this.account(turn, chunks);
        this.deps.onTurn(undefined, "restarted", performance.now() - started);
        return turn;
      }
      // What streamed before the failure was delivered as text events: it counts.
      this.account({ content: "", toolCalls: [], finishReason: "aborted", attempts: 1 }, chunks);
      this.deps.onTurn(undefined, err instanceof InterlaceError ? err.code : "error", performance.now() - started);
      throw err;
    }
  }

  private account(turn: UpstreamTurn, chunks: number): void {
    this.upstream.requests++;
    const u = turn.usage;
    // Without reported usage (or a request we stopped), each streamed delta counts as one token.
    const completion = u?.completionTokens ?? chunks;
    this.usage.decodedTokens += completion;
    this.upstream.completionTokens += completion;
    if (u !== undefined) {
      this.upstream.promptTokens += u.promptTokens;
      if (u.cachedTokens !== undefined) this.upstream.cachedTokens = (this.upstream.cachedTokens ?? 0) + u.cachedTokens;
      this.usage.prefilledTokens += u.promptTokens - (u.cachedTokens ?? 0);
    }
  }

  /** Emits `interrupt` events for queued arrivals and returns them (now part of the history). */
  private takeArrivals(): Arrival[] {
    const arrivals = this.queue.splice(0);
    if (arrivals.length > 0) this.unread = true;
    for (const a of arrivals) {
      this.injected.add(a.id);
      this.usage.interrupts++;
      const tokens = this.deps.countTokens(a.value);
      this.usage.injectedTokens += tokens;
      this.emit({ type: "interrupt", id: a.id, kind: a.kind, value: a.value, tokens, delayMs: Math.round((performance.now() - a.arrivedAt) * 1000) / 1000, delayTokens: 0, t: this.now() });
    }
    return arrivals;
  }

  private nextId(proposed: string | undefined): string {
    let id = proposed !== undefined && /^[A-Za-z_][A-Za-z0-9_]{0,63}$/.test(proposed) && !this.usedIds.has(proposed) ? proposed : undefined;
    let n = this.usedIds.size + 1;
    while (id === undefined) {
      const candidate = `call_${n++}`;
      if (!this.usedIds.has(candidate)) id = candidate;
    }
    this.usedIds.add(id);
    return id;
  }

  /**
   * Validates and dispatches one call; its result (or error) arrives later as
   * an interrupt. Returns the promise of that arrival.
   */
  private dispatch(id: string, body: string): Promise<void> {
    const parsed = parseCallBody(body, this.config.tools);
    this.emitted.add(id);
    if (!parsed.ok) {
      this.emit({ type: "call_error", callId: id, code: parsed.code, message: parsed.message, t: this.now() });
      this.arrive({ id, kind: "tool_error", value: formatCallError(parsed), arrivedAt: performance.now() });
      return Promise.resolve();
    }
    this.usage.calls++;
    this.emit({ type: "call", callId: id, tool: parsed.tool, arguments: parsed.arguments, t: this.now() });
    const spec = this.config.tools.get(parsed.tool)!;
    this.outstanding++;
    return this.deps.executor
      .execute(
        { id, sessionId: this.id, tool: parsed.tool, arguments: parsed.arguments, spec, deadline: Date.now() + this.config.callTimeoutMs },
        this.abort.signal,
      )
      .catch((err: unknown): ToolResult => ({ callId: id, ...errorOutcome(ErrorCode.ToolFailed, err instanceof Error ? err.message : String(err)) }))
      .then((result) => {
        this.outstanding--;
        this.arrive({ id, kind: result.ok ? "tool_result" : "tool_error", value: result.output, arrivedAt: performance.now() });
      });
  }

  /** sync / syncParallel over the upstream's own function calling. */
  private async runToolLoop(): Promise<DoneEvent["reason"]> {
    const tools: UpstreamTool[] = [...this.config.tools.values()].map((t) => ({
      type: "function",
      function: { name: t.name, description: t.description, parameters: t.parameters },
    }));
    let n = 0;
    let choice = this.config.toolChoice;
    for (;;) {
      // User/agent interrupts that came in meanwhile join the next request.
      for (const a of this.takeArrivals()) this.history.push({ role: "user", content: a.value });
      const toolChoice = choice === undefined ? undefined : typeof choice === "string" ? choice : { type: "function" as const, function: { name: choice.name } };
      const turn = await this.request(
        { messages: this.history, ...(tools.length > 0 ? { tools, parallelToolCalls: this.config.row.dispatch === "together", ...(toolChoice !== undefined ? { toolChoice } : {}) } : {}) },
        (text) => this.emit({ type: "text", text, t: this.now() }),
      );
      const calls = turn.toolCalls.map((c) => ({ ...c, id: this.nextId(safeCallId(c.id, ++n)) }));
      // "" rather than null beside tool_calls: llama-cpp-python's server rejects a null assistant content.
      this.history.push({ role: "assistant", content: turn.content, ...(calls.length > 0 ? { tool_calls: calls } : {}) });
      if (calls.length === 0) {
        if (turn.finishReason === "length" || this.remainingTokens() <= 0) return "max_tokens";
        // What arrived during the last turn is read in one more turn, not dropped.
        if (this.queue.length > 0) continue;
        return "eos";
      }
      if (this.remainingTokens() <= 0) return "max_tokens";
      const body = (c: (typeof calls)[number]): string => {
        let args: unknown;
        try {
          args = c.function.arguments.trim() === "" ? {} : JSON.parse(c.function.arguments);
        } catch {
          args = c.function.arguments; // parseCallBody reports it as malformed
        }
        return JSON.stringify({ name: c.function.name, arguments: args });
      };
      if (this.config.row.dispatch === "sequential") {
        for (const c of calls) await this.dispatch(c.id, body(c));
      } else {
        await Promise.all(calls.map((c) => this.dispatch(c.id, body(c))));
      }
      // The forced choice did its work: from now on the model decides (the upstream's default).
      choice = undefined;
      // Results in call order, then any user/agent interrupt as its own message.
      const arrivals = this.takeArrivals();
      for (const c of calls) {
        const r = arrivals.find((a) => a.id === c.id);
        this.history.push({ role: "tool", tool_call_id: c.id, content: r?.value ?? formatErrorLine(ErrorCode.ToolFailed, "no result") });
      }
      for (const a of arrivals) if (!calls.some((c) => c.id === a.id)) this.history.push({ role: "user", content: a.value });
    }
  }

  /** asyncNaive (and scripted sessions in every mode): CML in the streamed text. */
  private async runCml(): Promise<DoneEvent["reason"]> {
    const script = this.config.script;
    const restartOnArrival = this.config.row.restartOnArrival;
    for (;;) {
      const arrivals = this.takeArrivals();
      if (arrivals.length > 0) this.history.push({ role: "user", content: arrivals.map((a) => formatInterruptBlock(a.id, a.value)).join("") });
      let grammar: string | undefined;
      if (script !== undefined) {
        let step: ScriptStep = script.next({ emitted: this.emitted, injected: this.injected });
        if (step.type === "finish") {
          if (!this.unread) return "eos";
          // The script has nothing more to write, but something arrived since the last request: the model reads it.
          step = READ_ONLY;
        }
        if (step.type === "wait") {
          await this.nextArrival();
          continue;
        }
        grammar = step.grammar;
      }
      const monitor: TokenMonitor = createTokenMonitor({ textMarkers: true });
      const restart = new AbortController();
      let text = "";
      const dispatched: Promise<void>[] = [];
      const onMonitor = (events: ReturnType<TokenMonitor["push"]>): void => {
        for (const e of events) {
          if (e.type === "text") this.emit({ type: "text", text: e.text, t: this.now() });
          else if (e.type === "call") dispatched.push(this.dispatch(this.nextId(e.id), e.body));
          else if (e.type === "trap") {
            this.usage.traps++;
            // The model said it waits: stop the request instead of paying for what follows.
            if (!script) restart.abort();
          } else if (e.type === "malformed") this.deps.log.debug({ session: this.id, reason: e.reason }, "malformed CML block in upstream text");
        }
      };
      // An arrival stops the request, unless a call block is still streaming (critical section).
      if (restartOnArrival) this.wake = () => (monitor.inCriticalSection ? undefined : restart.abort());
      const turn = await this.request(
        { messages: this.history, ...(grammar !== undefined ? { grammar } : {}) },
        (delta) => {
          text += delta;
          onMonitor(monitor.push(-1, delta));
          if (restartOnArrival && this.queue.length > 0 && !monitor.inCriticalSection) restart.abort();
        },
        restart.signal,
      );
      this.wake = undefined;
      onMonitor(monitor.flush());
      if (text !== "") this.history.push({ role: "assistant", content: text });
      if (!restartOnArrival) await Promise.all(dispatched); // sync modes: the turn's calls run before the next request
      if (turn.finishReason === "length" || this.remainingTokens() <= 0) return "max_tokens";
      if (this.queue.length > 0) continue; // restart with what arrived
      if (this.outstanding > 0) {
        // Trapped, or the model ended its turn with results pending: the next arrival restarts it.
        await this.nextArrival();
        continue;
      }
      if (script !== undefined) continue; // the script decides: more calls, the final text, or finish
      return "eos";
    }
  }

  private finish(reason: DoneEvent["reason"]): void {
    if (this.isDone) return;
    this.isDone = true;
    this.abort.abort();
    this.wake?.();
    const end = this.lastTokenAt ?? performance.now();
    const first = this.firstTokenAt;
    const decoded = this.usage.decodedTokens;
    const e2e = first === undefined ? 0 : end - first;
    const r3 = (x: number): number => Math.round(x * 1000) / 1000;
    const event: DoneEvent = {
      type: "done",
      reason,
      usage: { ...this.usage, upstream: { ...this.upstream } },
      timings: {
        ttftMs: first === undefined ? 0 : r3(first - this.acceptedAt),
        tpotMs: decoded > 1 ? r3(e2e / (decoded - 1)) : 0,
        e2eMs: r3(e2e),
        // The upstream does both; seen from here: accepted → first token, and the streaming after it.
        prefillMs: first === undefined ? 0 : r3(first - this.acceptedAt),
        decodeMs: r3(e2e),
        totalMs: r3(performance.now() - this.acceptedAt),
      },
      scripted: this.scripted,
      t: this.now(),
    };
    this.emit(event);
    this.listeners.clear();
    this.resolveFinished(event);
  }
}

function toUpstreamMessage(m: ChatMessage): UpstreamMessage {
  if (m.role === "assistant") return { role: "assistant", content: m.content };
  if (m.role === "tool") return { role: "user", content: m.content };
  return { role: m.role === "system" ? "system" : "user", content: m.content };
}

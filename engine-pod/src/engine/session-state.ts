/**
 * @module One session's (or completion's) state inside the engine: a
 * read-only config, the run state (changed only through `transition()`, which
 * checks the table in `run-state.ts`), the token log, usage and timing
 * records, the outstanding calls, and the event log with its subscribers.
 * Only the engine core and its KV work write it (turn policies read a plain
 * view and return decisions); outside callers see it only as an `EngineSession`.
 */
import type { LlamaContextSequence, LlamaGrammarEvaluationState, Token } from "node-llama-cpp";
import type { AnswerFormat, CallingMode, KvPolicy, SessionEvent, SessionUsage, ToolSpec, TrapDecision } from "../../../common/src/index.js";
import type { TokenMonitor } from "../cml/index.js";
import type { PausedSequence } from "../kv/index.js";
import type { TokenPolicy } from "../policy/index.js";
import type { OfferedPrefix } from "../scheduler/index.js";
import type { StreamDetokenizer } from "./detokenizer.js";
import type { LogprobLedger } from "./logprob-ledger.js";
import type { InterruptEvent } from "./interrupt-manager.js";
import type { CallStreamEvent, EngineSession, SessionSnapshot } from "./engine-api.js";
import type { PrefixRole } from "../../../common/src/protocol/index.js";
import { checkedMove, type RunState } from "./run-state.js";
import { StopSequences } from "./stop-sequences.js";
import type { TokenDistribution } from "./token-distribution.js";
import type { FinishReason, TurnCall, TurnPolicy } from "./turn/index.js";

export type { RunState } from "./run-state.js";

export interface OutstandingCall {
  tool: string;
  startedAt: number;
  estimatedLatencyMs?: number;
}

/** Generation settings fixed per session. */
export interface SessionConfig {
  /** Reported in `started` events; the turn policy carries the behaviour. */
  readonly mode: CallingMode;
  readonly tools: ReadonlyMap<string, ToolSpec>;
  readonly maxTokens: number;
  readonly temperature: number;
  readonly seed?: number;
  readonly grammar: boolean;
  readonly kvPolicy: KvPolicy;
  /** The request's retention hint, checked: a call's wait estimate where its tool gives none, and its TTL. */
  readonly retention?: { readonly expectedToolMs?: number; readonly retentionMs?: number };
  /** The session's cells may be reused as a prefix (its own re-entries, later requests). */
  readonly prefixReuse: boolean;
  /** What the session's shared prefix may replace in the prefix store: the placing router's word (absent: home). */
  readonly prefixRole?: PrefixRole;
  /** Admission priority, higher first (0 when the request gave none). */
  readonly priority: number;
  /** Most sequences in a step's batch while this session is in it (absent: no cap). */
  readonly maxBatch?: number;
  /** Keep the finished sequence retained under this key (a Responses API response id). */
  readonly retainAs?: string;
  /** Nucleus sampling (OpenAI `top_p`); absent: 1, the whole vocabulary. */
  readonly topP?: number;
  /**
   * OpenAI `tool_choice` beyond `auto`: the session's first call block is
   * opened for the model (`[CALL]` fed as its first token), and with a name
   * that call's grammar admits only that tool.
   */
  readonly toolChoice?: "required" | { readonly name: string };
  /** The answer (text outside call blocks) is this JSON (OpenAI `response_format`). */
  readonly answerFormat?: AnswerFormat;
  /**
   * Sessions: the answer format holds across calls — a fresh answer grammar
   * after each call block, trap and delivered interrupt, in its awaiting form
   * while calls are unanswered. Completions (absent) answer in a later
   * request once they call.
   */
  readonly answerAcrossCalls?: boolean;
  /** A completion's text ends before the first of these (OpenAI `stop`). */
  readonly stop?: readonly string[];
  /** OpenAI's frequency and presence penalties over the generated tokens. */
  readonly penalties?: { readonly frequency: number; readonly presence: number };
}

/** Tokens of one session, as the engine tracks them. */
export interface TokenLog {
  /** The request's prompt (what it fills before generating). */
  prompt: readonly Token[];
  /** Tokens that are (logically) in the sequence's KV state: prompt, fed tokens, injections. */
  context: Token[];
  /** Tokens to evaluate in the next step (the last emitted token, injections, a fill). */
  feed: Token[];
  /** Tokens emitted by decode steps (sampled or scripted), as fed. */
  generated: Token[];
  /** What the model sampled at each step (a scripted policy may have fed something else). */
  sampled: Token[];
}

/** Timing record (performance.now() ms). */
export interface SessionTiming {
  readonly acceptedAt: number;
  firstTokenAt: number | undefined;
  lastTokenAt: number | undefined;
  /** Decode steps that evaluated only the previous token (TPOT samples). */
  stepMs: number[];
  decodeSteps: number;
  /** Step evaluation time after the first token: one-token steps (decode), and steps of more (injections, re-entry fills). */
  decodeMs: number;
  prefillMs: number;
}

/** What the KV side holds for a session between steps. */
export interface SessionKv {
  /** node-llama-cpp's generator on the sequence; null when none is open. */
  gen: AsyncGenerator<Token, void, Token | Token[] | void> | null;
  grammarState: LlamaGrammarEvaluationState | undefined;
  /** The answer grammar (`answerFormat`), active outside call blocks until a block opens or the answer ends (EOS). */
  answerGrammar: LlamaGrammarEvaluationState | undefined;
  paused: PausedSequence | undefined;
  trapDecision: TrapDecision | undefined;
  /** Time the trap's pause (and an early restore) took, until the resume reports the total. */
  trapPauseMs: number | undefined;
  /** Restores a paused state shortly before its expected interrupt. */
  prefetchTimer: NodeJS.Timeout | undefined;
  /** When the session last paused (its last activity), epoch ms. */
  pausedAt: number | undefined;
}

type DoneEvent = Extract<SessionEvent, { type: "done" }>;

/** What a session starts with (the engine's admission builds it). */
export interface SessionInit {
  readonly id: string;
  readonly config: SessionConfig;
  readonly turn: TurnPolicy;
  readonly monitor: TokenMonitor;
  readonly detok: StreamDetokenizer;
  readonly script?: TokenPolicy;
  /** The admitted slot and its sequence. */
  readonly slot: number;
  readonly seq: LlamaContextSequence;
  readonly prompt: readonly Token[];
  /** The app's shared prefix of the prompt, offered to the prefix store at the end. */
  readonly sharedPrefix?: OfferedPrefix;
  /** A completion's history as a script sees it: calls already emitted (their ids taken) and results already in. */
  readonly history?: { emittedCalls: Iterable<string>; injected: Iterable<string> };
  /** Completions with raw output: every emitted token's text, markers included. */
  readonly onRaw?: (text: string) => void;
  /** Completions that stream their calls' arguments. */
  readonly onCallStream?: (event: CallStreamEvent) => void;
  /** Completions that report their content tokens' log-probabilities. */
  readonly logprobs?: LogprobLedger;
}

export class SessionState implements EngineSession {
  private runState: RunState = "filling";
  readonly id: string;
  readonly config: SessionConfig;
  readonly turn: TurnPolicy;
  readonly monitor: TokenMonitor;
  readonly detok: StreamDetokenizer;
  readonly script: TokenPolicy | undefined;
  /** The sequence slot held; -1 while paused with swap/recompute (the slot is lent out). */
  slot: number;
  seq: LlamaContextSequence;
  readonly tokens: TokenLog;
  readonly timing: SessionTiming = { acceptedAt: performance.now(), firstTokenAt: undefined, lastTokenAt: undefined, stepMs: [], decodeSteps: 0, decodeMs: 0, prefillMs: 0 };
  readonly usage: SessionUsage;
  readonly kv: SessionKv = { gen: null, grammarState: undefined, answerGrammar: undefined, paused: undefined, trapDecision: undefined, trapPauseMs: undefined, prefetchTimer: undefined, pausedAt: undefined };
  readonly outstanding = new Map<string, OutstandingCall>();
  /** Call blocks (valid or not) since the turn began; an `endTurn` decision resets it. */
  turnCalls = 0;
  /** Valid calls a `hold` decision kept: the turn's calls until its end (syncParallel), a completion's tool calls. */
  readonly heldCalls: TurnCall[] = [];
  /** How a completion ended, from its policy's `finish` decision. */
  finishReason: FinishReason | undefined;
  /** What a scripted policy may know (calls emitted, results injected). */
  readonly view = { emittedCalls: new Set<string>(), injected: new Set<string>() };
  private readonly usedCallIds = new Set<string>();
  reusedPrefixTokens = 0;
  /** The app's shared prefix of the prompt (system prompt, tool block) and its hashes: offered to the prefix store when the session ends. */
  readonly sharedPrefix: OfferedPrefix | undefined;
  cancelRequested = false;
  readonly abort = new AbortController();
  /** Text outside call blocks, and every generated token's text (completions read these). */
  content = "";
  /** Where in `content` the current answer starts: after the last call block, trap or delivered interrupt. */
  answerFrom = 0;
  raw = "";
  /** Completions with raw output: every emitted token's text, markers included. */
  readonly onRaw: ((text: string) => void) | undefined;
  /** Tokens fed in place of the next samples (the call opener a `toolChoice` forces). */
  readonly forced: Token[] = [];
  /** The completion's `stop` sequences over its text. */
  readonly stop: StopSequences | undefined;
  readonly onCallStream: ((event: CallStreamEvent) => void) | undefined;
  /** The id of the call block whose body is being generated (taken when the body opens). */
  openCallId: string | undefined;
  /** The content tokens' log-probabilities, when the completion asked for them. */
  readonly logprobs: LogprobLedger | undefined;
  /** The distribution the last token was sampled from (set by the generator, taken by the token path). */
  nextDistribution: TokenDistribution | undefined;

  readonly events: SessionEvent[] = [];
  private readonly listeners = new Set<(event: SessionEvent) => void>();
  readonly finished: Promise<DoneEvent>;
  private resolveFinished!: (event: DoneEvent) => void;

  constructor(init: SessionInit) {
    this.id = init.id;
    this.config = init.config;
    this.turn = init.turn;
    this.monitor = init.monitor;
    this.detok = init.detok;
    this.script = init.script;
    this.slot = init.slot;
    this.seq = init.seq;
    this.tokens = { prompt: init.prompt, context: [], feed: [], generated: [], sampled: [] };
    this.usage = { promptTokens: init.prompt.length, prefilledTokens: 0, decodedTokens: 0, injectedTokens: 0, calls: 0, interrupts: 0, traps: 0 };
    this.sharedPrefix = init.sharedPrefix;
    this.onRaw = init.onRaw;
    this.onCallStream = init.onCallStream;
    this.logprobs = init.logprobs;
    this.stop = init.config.stop !== undefined && init.config.stop.length > 0 ? new StopSequences(init.config.stop) : undefined;
    for (const id of init.history?.emittedCalls ?? []) (this.view.emittedCalls.add(id), this.usedCallIds.add(id));
    for (const id of init.history?.injected ?? []) this.view.injected.add(id);
    this.finished = new Promise((resolve) => (this.resolveFinished = resolve));
  }

  get state(): RunState {
    return this.runState;
  }

  /** The one way the run state changes; throws `IllegalTransitionError` on a move the table does not allow. */
  transition(to: RunState): void {
    this.runState = checkedMove(this.runState, to);
  }

  /**
   * A constrained answer has begun and not ended: a critical section like a
   * call block (interrupts wait for its end, no marker may be sampled).
   */
  get answering(): boolean {
    return this.kv.answerGrammar !== undefined && this.answer !== "";
  }

  /** The text since the last call block, trap or delivered interrupt: the final answer once the session ends. */
  get answer(): string {
    return this.content.slice(this.answerFrom).trim();
  }

  get scripted(): boolean {
    return this.script !== undefined;
  }

  /** ms since the session was accepted. */
  now(): number {
    return Math.round((performance.now() - this.timing.acceptedAt) * 1000) / 1000;
  }

  subscribe(listener: (event: SessionEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  emit(event: SessionEvent): void {
    this.events.push(event);
    for (const l of this.listeners) {
      try {
        l(event);
      } catch {
        // A failing subscriber must not break the decode loop.
      }
    }
    if (event.type === "done") {
      this.listeners.clear();
      this.resolveFinished(event);
    }
  }

  /** Interrupts taken from the queue into the sequence (injected, or in a re-entry's prompt): the script's view, usage and events. */
  delivered(events: readonly InterruptEvent[]): void {
    for (const e of events) {
      this.view.injected.add(e.id);
      this.usage.interrupts++;
      this.emit(e);
    }
  }

  inspect(): SessionSnapshot {
    return {
      state: this.runState,
      sequence: this.slot >= 0 ? this.slot : null,
      tokens: { context: this.tokens.context.slice(), generated: this.tokens.generated.slice(), sampled: this.tokens.sampled.slice() },
    };
  }

  /** Next call id: the model's own when valid and unused, else `call_<n>`. */
  callId(proposed: string | undefined): string {
    if (proposed !== undefined && /^[A-Za-z_][A-Za-z0-9_]{0,63}$/.test(proposed) && !this.usedCallIds.has(proposed)) {
      this.usedCallIds.add(proposed);
      return proposed;
    }
    let n = this.usedCallIds.size + 1;
    while (this.usedCallIds.has(`call_${n}`)) n++;
    const id = `call_${n}`;
    this.usedCallIds.add(id);
    return id;
  }
}

/** Median of a list (0 when empty). */
export function median(values: readonly number[]): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

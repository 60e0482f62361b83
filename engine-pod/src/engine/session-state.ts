/**
 * @module One session's (or completion's) state inside the engine: run state,
 * tokens, monitor, interrupt queue, outstanding calls, usage and timings, and
 * the event log with its subscribers. The decode loop (`engine.ts`) drives it;
 * outside callers see it only as an `EngineSession`.
 */
import type { LlamaContextSequence, LlamaGrammarEvaluationState, Token } from "node-llama-cpp";
import type {
  CallingMode,
  InterruptKind,
  KvPolicy,
  SessionEvent,
  SessionUsage,
  ToolSpec,
  TrapDecision,
} from "../../../common/src/index.js";
import type { TokenMonitor } from "../cml/index.js";
import type { PausedSequence } from "../kv/index.js";
import type { TokenPolicy } from "../policy/index.js";
import type { StreamDetokenizer } from "./detokenizer.js";
import type { EngineSession } from "./engine-api.js";

/**
 * - `filling`: admitted; the slot is being prepared (cleared or its cached prefix trimmed).
 * - `active`: in the lockstep batch.
 * - `trapped`: paused until its next interrupt (trap, or EOS with results outstanding).
 * - `waiting`: sync modes, stopped until the turn's calls return.
 * - `busy`: a background KV operation (pause, resume, re-entry) is running.
 * - `done`: finished; the slot is (being) released.
 */
export type RunState = "filling" | "active" | "trapped" | "waiting" | "busy" | "done";

/** A queued interrupt (tool result, tool error, user or agent message). */
export interface QueuedInterrupt {
  id: string;
  kind: InterruptKind;
  value: string;
  /** performance.now() at arrival. */
  arrivedAt: number;
  /** The session's decode step count at arrival. */
  arrivedStep: number;
  /** Held back at least once by a critical section. */
  deferred: boolean;
}

export interface OutstandingCall {
  tool: string;
  startedAt: number;
  estimatedLatencyMs?: number;
}

/** Generation settings fixed per session. */
export interface SessionConfig {
  kind: "session" | "completion";
  mode: CallingMode;
  tools: ReadonlyMap<string, ToolSpec>;
  maxTokens: number;
  temperature: number;
  seed?: number;
  grammar: boolean;
  kvPolicy: KvPolicy;
  prefixReuse: boolean;
  /** Completions only. */
  stopAtCalls: "turn" | "never";
}

type DoneEvent = Extract<SessionEvent, { type: "done" }>;

export class SessionState implements EngineSession {
  state: RunState = "filling";
  /** The sequence slot held; -1 while paused with swap/recompute (the slot is lent out). */
  slot: number;
  seq: LlamaContextSequence;
  /** Tokens that are (logically) in the sequence's KV state: prompt, fed tokens, injections. */
  context: Token[] = [];
  /** Tokens to evaluate in the next step (the last emitted token, injections, a fill). */
  feed: Token[] = [];
  gen: AsyncGenerator<Token, void, Token | Token[] | void> | null = null;
  promptTokens = 0;
  /** The request's prompt (what it fills before generating). */
  prompt: readonly Token[] = [];
  /** Tokens emitted by decode steps (sampled or scripted), as fed. */
  generated: Token[] = [];
  /** What the model sampled at each step (the policy may have fed something else). */
  sampled: Token[] = [];
  queue: QueuedInterrupt[] = [];
  outstanding = new Map<string, OutstandingCall>();
  /** Calls of the current turn (syncParallel / completion turn end). */
  turnCalls = 0;
  /** syncParallel: validated calls waiting for the turn's end. */
  collected: { id: string; tool: string; arguments: Record<string, unknown> }[] = [];
  usedCallIds = new Set<string>();
  view = { emittedCalls: new Set<string>(), injected: new Set<string>() };
  grammarState: LlamaGrammarEvaluationState | undefined;
  paused: PausedSequence | undefined;
  trapDecision: TrapDecision | undefined;
  cancelRequested = false;
  readonly abort = new AbortController();
  /** Completion bookkeeping. */
  content = "";
  raw = "";
  toolCalls: { id: string; name: string; arguments: Record<string, unknown> }[] = [];
  reusedPrefixTokens = 0;
  finishReason: "stop" | "length" | "tool_calls" | "trap" | undefined;
  /** Completions with raw output: every emitted token's text, markers included. */
  onRaw: ((text: string) => void) | undefined;
  /** Time the trap's pause (and an early restore) took, until the resume reports the total. */
  trapPauseMs: number | undefined;
  /** Restores a paused state shortly before its expected interrupt. */
  prefetchTimer: NodeJS.Timeout | undefined;

  decodeSteps = 0;
  stepMs: number[] = [];
  /** Step evaluation time after the first token: one-token steps, and steps of more (injections, re-entry fills). */
  decodeMs = 0;
  prefillMs = 0;
  firstTokenAt: number | undefined;
  lastTokenAt: number | undefined;
  readonly acceptedAt = performance.now();
  usage: SessionUsage = { promptTokens: 0, prefilledTokens: 0, decodedTokens: 0, injectedTokens: 0, calls: 0, interrupts: 0, traps: 0 };

  readonly events: SessionEvent[] = [];
  private readonly listeners = new Set<(event: SessionEvent) => void>();
  readonly finished: Promise<DoneEvent>;
  private resolveFinished!: (event: DoneEvent) => void;

  constructor(
    readonly id: string,
    readonly config: SessionConfig,
    readonly monitor: TokenMonitor,
    readonly detok: StreamDetokenizer,
    readonly policy: TokenPolicy | undefined,
    slot: number,
    seq: LlamaContextSequence,
  ) {
    this.slot = slot;
    this.seq = seq;
    this.finished = new Promise((resolve) => (this.resolveFinished = resolve));
  }

  get scripted(): boolean {
    return this.policy !== undefined;
  }

  /** ms since the session was accepted. */
  now(): number {
    return Math.round((performance.now() - this.acceptedAt) * 1000) / 1000;
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

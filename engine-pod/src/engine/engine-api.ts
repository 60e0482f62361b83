/**
 * @module The engine's public surface, as the HTTP server, the NATS executor's
 * interrupt subscription and the benchmarks see it. The implementation lives
 * beside this file; callers import only these types (through `engine/index.ts`).
 */
import type {
  ErrorCode,
  AnswerFormat,
  ChatMessage,
  CreateSessionRequest,
  InterruptKind,
  SessionEvent,
  ToolChoice,
  ToolSpec,
} from "../../../common/src/index.js";
import type { PrefixRole } from "../../../common/src/protocol/index.js";

/** A session as seen from outside the decode loop. */
export interface EngineSession {
  readonly id: string;
  /** Every event so far, in order (late subscribers replay from here). */
  readonly events: readonly SessionEvent[];
  /** Calls `listener` for each future event; returns an unsubscribe function. */
  subscribe(listener: (event: SessionEvent) => void): () => void;
  /** Resolves with the final `done` event (also on cancel or error). */
  readonly finished: Promise<Extract<SessionEvent, { type: "done" }>>;
  /** A copy of what the engine holds for the session now (tests, benchmarks, debugging). */
  inspect(): SessionSnapshot;
}

/** A session as the engine holds it at one moment. Plain data (copies). */
export interface SessionSnapshot {
  /** Run state: filling, active, trapped, waiting, busy or done. */
  state: string;
  /**
   * The sequence id (slot) the session holds; null while a paused session has
   * lent its sequence out. After `done`, the sequence it last held.
   */
  sequence: number | null;
  tokens: {
    /** Tokens in the session's KV state, as the engine tracks them. */
    context: number[];
    /** Tokens emitted by decode steps and fed. */
    generated: number[];
    /** What the model sampled at each step (differs from `generated` under a scripted policy). */
    sampled: number[];
  };
}

/**
 * Why a session is cancelled: its client gets an `error` event with it before
 * `done: cancelled`; a completion fails with it (not "completion cancelled").
 */
export interface CancelReason {
  code: ErrorCode;
  message: string;
}

export interface InterruptInput {
  /** Defaults to a generated id. */
  id?: string;
  kind: InterruptKind;
  value: string;
}

/**
 * One stateless completion with sync semantics (the OpenAI-compatible path):
 * fill the messages, generate until EOS, max tokens or the end of the turn's
 * call blocks, and return what was generated. Resident KV prefixes are reused.
 */
export interface CompletionRequest {
  /**
   * The conversation. A `tool` message carries the raw result as `content` and
   * the id of the call it answers as `toolCallId`; the renderer writes it as
   * `[INTR] toolCallId [HEAD] content [END]` (do not wrap it yourself).
   */
  messages: (ChatMessage & { toolCallId?: string })[];
  tools: ToolSpec[];
  maxTokens?: number;
  temperature?: number;
  seed?: number;
  /**
   * `turn` (default): stop after the call blocks of the turn (OpenAI `tool_calls`).
   * `never`: raw CML continuation for async-naive clients — calls do not stop
   * generation; it ends at EOS, max tokens, or `[TRAP][END]`.
   */
  stopAtCalls?: "turn" | "never";
  /** Continue the last assistant message instead of opening a new turn. */
  continueAssistant?: boolean;
  policy?: CreateSessionRequest["policy"];
  /**
   * Keep this completion's sequence resident under this key after it ends,
   * for `--response-retention-ms` (at most `--max-retained-responses` at once):
   * the Responses API's response id. Backends without KV state ignore it.
   */
  retainAs?: string;
  /**
   * This request continues the completion retained under `key`: the last
   * `appended` messages are new, the ones before are that completion's
   * conversation. While the sequence is retained, the prompt is its resident
   * tokens plus the new messages (no re-prefill of the history); otherwise
   * the whole conversation is rendered as usual.
   */
  continuation?: { key: string; appended: number };
  signal?: AbortSignal;
  /**
   * Streaming callback for generated text (markers included when raw). With
   * `logprobs`, `logprobs` are the content tokens settled by this text (see
   * `CompletionResult.logprobs`); a last call may carry only entries (`text` "").
   */
  onText?: (text: string, logprobs?: readonly TokenLogprob[]) => void;
  /**
   * Report each content token's log-probability, with this many most likely
   * alternatives (OpenAI `logprobs: true` and `top_logprobs`, 0..20). Costs a
   * vocabulary-sized distribution per token, so only when asked.
   */
  logprobs?: { top: number };
  /** Nucleus sampling (OpenAI `top_p`), in (0, 1]; default 1. */
  topP?: number;
  /** OpenAI `tool_choice`: `required` or a named tool forces the first call block (`none` is the caller's: it sends no tools). */
  toolChoice?: ToolChoice;
  /** The completion ends at this many calls (OpenAI `parallel_tool_calls: false` is 1, Responses' `max_tool_calls`). */
  maxCalls?: number;
  /** OpenAI's repetition penalties, -2..2, over the completion's generated tokens. */
  frequencyPenalty?: number;
  presencePenalty?: number;
  /** The answer (text outside call blocks) is this JSON, under a grammar (OpenAI `response_format`). */
  answerFormat?: AnswerFormat;
  /** The text ends before the first of these, which the content does not include (OpenAI `stop`). */
  stop?: string[];
  /**
   * One of a request's `n` choices, all sent at once with the same prompt:
   * it does not wait for running completions of that prompt (they are its
   * siblings, not a superseded restart), so it follows the first one's fill
   * and forks its cells instead of prefilling them again.
   */
  sibling?: boolean;
  /** The completion's call blocks as they are generated, for clients that stream arguments. */
  onCallStream?: (event: CallStreamEvent) => void;
}

/**
 * A call block of a completion while it is generated: its body opens (the
 * call's id is known), its text arrives, and it ends as a valid call or a
 * refused one. A block cut off by the token limit gets no end. A backend
 * whose calls arrive as a name and argument pieces (an upstream's streamed
 * `tool_calls`) sends `arguments` instead of `text`.
 */
export type CallStreamEvent =
  | { type: "open"; id: string }
  | { type: "text"; id: string; text: string }
  | { type: "arguments"; id: string; name: string; text: string }
  | { type: "done"; id: string; name: string; arguments: Record<string, unknown> }
  | { type: "refused"; id: string };

/** One content token's log-probability, in OpenAI's shape (`logprobs.content[]`, camel-cased). */
export interface TokenLogprob {
  /** The text the token put in the content ("" for a token that completes no character). */
  token: string;
  /** Natural log of its probability (see token-distribution.ts for which distribution); -9999 for none. */
  logprob: number;
  /** UTF-8 bytes of `token` (node-llama-cpp exposes no raw token bytes: an alternative that is part of a character reads U+FFFD). */
  bytes: number[];
  /** The most likely tokens at this position, most likely first. */
  topLogprobs: { token: string; logprob: number; bytes: number[] }[];
}

export interface CompletionResult {
  /** Generated text outside call blocks. */
  content: string;
  /** Raw generated CML text. */
  raw: string;
  toolCalls: { id: string; name: string; arguments: Record<string, unknown> }[];
  finishReason: "stop" | "length" | "tool_calls" | "trap";
  /** Produced under a scripted policy (every token still a real forward pass). */
  scripted?: boolean;
  /** The request continued a retained sequence (see `CompletionRequest.continuation`). */
  continued?: boolean;
  /**
   * With `CompletionRequest.logprobs`: one entry per token of `content`,
   * whose texts concatenate to it (tokens in call blocks have none).
   */
  logprobs?: TokenLogprob[];
  usage: { promptTokens: number; completionTokens: number; prefilledTokens: number; reusedPrefixTokens: number };
}

export interface EngineStats {
  activeSessions: number;
  maxSessions: number;
  /** Sequences (slots) of the context, and those a new session could take now (free or idle prefix cache). */
  totalSequences: number;
  freeSequences: number;
  /** Sessions waiting for a sequence to (re)enter the batch: paused ones whose interrupt arrived while their slot was lent out. */
  queuedSessions: number;
  /** KV cells in use across all sequences. */
  kvCellsUsed: number;
  kvCellsTotal: number;
  /** Sequences in the last decode step. */
  lastBatchSize: number;
  /** Sessions and completions admitted so far (monotonic; heartbeats carry it so routers know which admissions they show). Absent: not counted (upstream). */
  admissions?: number;
  tokensDecoded: number;
  tokensPrefilled: number;
  interruptsQueued: number;
  interruptsInjected: number;
  /** Interrupts that had to wait for a critical section (call block) to end. */
  interruptsDeferred: number;
  trapsByDecision: { keep: number; swap: number; recompute: number };
  /** KV retention across tool waits (kv/retention.ts); absent on engines that hold no KV (upstream). */
  retention?: RetentionStats;
  /** Sessions moved to a lower sequence id so batches stay contiguous. */
  compactions: number;
  /** Prompt prefixes copied from another resident sequence instead of being prefilled, and their tokens. */
  prefixForks: number;
  prefixForkedTokens: number;
  /** Admissions that waited for another session's prefill of their prefix, or a prefix warm's fill of it, then forked it. */
  prefixFillWaits: number;
  /** The prefix store (apps' shared prefixes kept beyond the session slots): its sequences, entries held now, and prefixes stored, replaced and forked from so far. */
  prefixStoreSize: number;
  prefixStoreEntries: number;
  /** Of the entries, those the placing router named this engine the app's home for (a replica never replaces one). */
  prefixStoreHomes: number;
  prefixStoreInserts: number;
  prefixStoreEvictions: number;
  prefixStoreHits: number;
  /** Tokens decoded per second over the last few seconds (all sessions). */
  decodeTokensPerSec: number;
}

/**
 * Prefix hashes (common/prefix-hash chains of admitted prompts) an engine
 * holds: in KV cells now, or being prefilled by a live session. A router may
 * still send a session there (the engine forks the prefix once the fill is
 * done), but an engine whose cells already hold it serves it sooner.
 */
export interface AdvertisedPrefixes {
  /** Every hash held or being filled. */
  hashes: string[];
  /** The subset only a live session's prefill is putting into cells. */
  filling: string[];
}

/**
 * What the router that placed a session says about it (its
 * `x-interlace-prefix-role` header): whether this engine is the app's home
 * in the pool or holds its prefix as a replica, which decides what the
 * session's shared prefix may replace in the prefix store (absent: home).
 */
export interface SessionPlacement {
  prefixRole?: PrefixRole;
}

/**
 * What a prefix warm did (`POST /v1/prefixes`): the app's shared prefix
 * prefilled into a prefix-store sequence (`warmed`), already held there or
 * in a session slot (`held`: a second router asking the same is a no-op),
 * or refused: `busy` (a session is prefilling, no sequence is free, or
 * another warm runs), `full` (every store entry holds a prefix homed on
 * this engine, which a warm, a replica, does not replace), `no-store` (this engine keeps no prefix store),
 * `no-prefix` (the request has no system prompt or tools, or too few
 * tokens to be worth a sequence).
 */
export type PrefixWarmOutcome = "warmed" | "held" | "busy" | "full" | "no-store" | "no-prefix";

export interface PrefixWarmResult {
  outcome: PrefixWarmOutcome;
  /** Tokens of the app's shared prefix (0 when none). */
  tokens: number;
  /** Its prefix hashes (what the heartbeats advertise once it is held). */
  hashes: string[];
  /** Tokens prefilled by this warm (0 unless `warmed` by evaluation; a copy from a slot costs none). */
  prefilledTokens: number;
  /** Why, for a refusal. */
  reason?: string;
}

export interface Engine {
  /**
   * Validates and admits a session; throws `InterlaceError` with code
   * `capacity` (all sequences busy), `context_overflow`, `unknown_tool`,
   * `bad_request`.
   */
  createSession(request: CreateSessionRequest, placement?: SessionPlacement): EngineSession;
  getSession(id: string): EngineSession | undefined;
  /** Queues an interrupt for a live session; false when the session is unknown or done. */
  interrupt(sessionId: string, input: InterruptInput): boolean;
  /**
   * Ends a session (`done: cancelled`) and frees its KV cells; false when
   * unknown. With `reason`, a live session first gets an `error` event with
   * `reason.code` and its message, so its client
   * learns why it was cut.
   */
  cancel(sessionId: string, reason?: CancelReason): boolean;
  /** Cancels every live session and completion with `reason` (a drain's end); returns how many. */
  cancelAll(reason: CancelReason): number;
  complete(request: CompletionRequest): Promise<CompletionResult>;
  stats(): EngineStats;
  /**
   * Prefills the shared prefix (system prompt and tool block) of a session
   * like `request` into the prefix store, without admitting a session, so a
   * later session of the app forks it instead of prefilling it. Validates
   * `request` as `createSession` does (same errors). Absent on engines
   * without KV cells of their own.
   */
  warmPrefix?(request: CreateSessionRequest): Promise<PrefixWarmResult>;
  /** What engine heartbeats advertise to the routers: see {@link AdvertisedPrefixes}. */
  advertisedPrefixes(): AdvertisedPrefixes;
  /** Interrupts queued for a live session and not yet injected (0 when unknown). */
  queuedInterrupts(sessionId: string): number;
  /** Tokens in a text under the model's tokenizer (for 400s on oversized prompts). */
  countTokens(text: string): number;
  readonly contextSize: number;
  readonly ready: boolean;
  close(): Promise<void>;
}

/** What KV retention across tool waits has done. */
export interface RetentionStats {
  policy: string;
  /** Cells (tokens) held now by sessions paused with their cells kept. */
  keptCells: number;
  /** Sequences those sessions hold that the policy would give a request now (advertised in heartbeats). */
  reclaimableSequences: number;
  /** Paused sessions that gave their cells to a waiting request, by how. */
  evictionsByDecision: { swap: number; recompute: number };
  /** Bytes of KV state written to host memory (traps and evictions). */
  bytesSwappedOut: number;
  /** Tokens re-evaluated on resume, by why the cells had gone. */
  tokensRecomputedByCause: { trap: number; eviction: number };
  /** Requests admitted into a paused session's sequence (each waited for its eviction). */
  admissionsDelayed: number;
  /** Requests refused because every sequence was held and the policy freed none. */
  admissionsRefused: number;
}

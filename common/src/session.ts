/**
 * @module Session wire types: the body of `POST /v1/sessions` and the events
 * streamed by `GET /v1/sessions/{id}/events`. Plain JSON data only; the engine's
 * HTTP server, the router, tests and benchmarks all speak these.
 */
import type { JsonSchema, ToolSpec } from "./tools.js";

/**
 * How the engine treats tool calls (AsyncLM §6.1 baselines, all on one engine):
 * - `async`: keep decoding; results arrive as interrupts.
 * - `sync`: stop at each call, run it, re-enter with the result as a new request.
 * - `syncParallel`: stop at the end of a turn's calls, run them concurrently, re-enter.
 * - `asyncNaive` (AsyncLM §4.4): calls parsed from the streamed text, each
 *   interrupt restarts the request with the history. The `openai` backend
 *   serves it as a session mode; on the own engine it runs client-side over
 *   the OpenAI-compatible endpoint (the engine rejects it as a session mode).
 */
export type CallingMode = "async" | "sync" | "syncParallel" | "asyncNaive";

export type KvPolicy = "keep" | "swap" | "recompute" | "auto";

export interface ChatMessage {
  role: "system" | "user" | "assistant" | "tool";
  content: string;
}

/** One call of a scripted workload (the paper's "cheat sheet"). */
export interface ScriptedCall {
  /** `[A-Za-z_][A-Za-z0-9_]*`, as CML call ids are. */
  id: string;
  tool: string;
  arguments: Record<string, unknown>;
  /** Ids of calls whose results must be injected before this call may be emitted. */
  dependsOn: string[];
  /** Known tool duration, used by the LPT oracle to order ready calls (longest first). */
  estimatedLatencyMs?: number;
  /**
   * Id of a user-triggered interrupt that introduces this call's task: the call
   * is not ready until that interrupt has been injected (AsyncLM §6.6 workload).
   */
  afterInterrupt?: string;
}

/**
 * A scripted policy decides which tokens come next while every token is still
 * a real forward pass and every call, interrupt and trap goes through the real
 * machinery. Sessions that carry one are labelled `scripted: true` in their output.
 */
export type ScriptedPolicySpec =
  | {
      /** Emit ready calls longest-first; trap when nothing is ready; finish when all results are in. */
      type: "lpt-dag";
      calls: ScriptedCall[];
      /** Call body syntax: JSON (`{"name":..,"arguments":..}`) or Python (`name(a=1)`). Default json. */
      callStyle?: "json" | "python";
      /** Tokens of ordinary text generated between consecutive calls ("thinking"). Default 0. */
      thinkTokens?: number;
      /** Tokens of ordinary text before the first call (the first turn's reasoning). Default 0. */
      leadTokens?: number;
      /** Text generated after the last result arrives. */
      finalText?: string;
    }
  | {
      /** Emit exactly these text pieces in order (CML markers included), each token a forward pass. */
      type: "text";
      pieces: string[];
    };

/**
 * Speculative tool calls for one session (an AgentApp's `speculation`, which
 * the router copies onto each session request; or a client's own).
 */
export interface SessionSpeculation {
  enabled: boolean;
  /** Calls the draft predicts per turn (λ). Default 1. */
  lambda?: number;
  /** Speculative calls of the session running at once. Default 2. */
  maxInFlight?: number;
  /** ToolPools (`namespace/name`) whose speculative tools may start early; absent: every pool. */
  pools?: string[];
  /**
   * Engine-side speculation as well (O2: validate the cached call's tokens in
   * one pass when a call block opens; O3: append a cached result at the call's
   * end without a trap). Default true.
   */
  engineSide?: boolean;
  /**
   * The draft policy. `model` (the default when the engine has a draft
   * model): the draft model writes its own next call on the session's
   * context — a call block after `[CALL]`, under the session's call grammar,
   * at most `maxTokens` tokens — and the call is parsed as the main model's
   * are. `scripted` (benchmarks): the draft predicts the script's next call
   * with accuracy `alpha` and a plausible wrong call otherwise, while its
   * tokens are real draft-model passes; the session is labelled scripted.
   * Needs a scripted main policy (it knows the true next call).
   */
  draft?: { type: "model"; maxTokens?: number } | { type: "scripted"; alpha: number; seed?: number };
}

/** OpenAI `tool_choice`, as a session asks for it: let the model decide, no calls, some call, or this function. */
export type ToolChoice = "auto" | "none" | "required" | { name: string };

/** OpenAI `response_format` beyond text: the answer is any JSON object, or a value of this JSON Schema. */
export type AnswerFormat = { type: "json_object" } | { type: "json_schema"; schema: JsonSchema };

/**
 * A session's `responseFormat`, in OpenAI's `response_format` shape: free
 * text, any JSON object, or a value of a JSON Schema (local `$ref`s to its
 * own `$defs` are followed; the engine always applies the schema strictly).
 */
export type ResponseFormat =
  | { type: "text" }
  | { type: "json_object" }
  | { type: "json_schema"; json_schema: { name: string; schema: JsonSchema; strict?: boolean; description?: string } };

/**
 * Which paused session gives its KV cells up when a request finds every
 * sequence held (the engine's `--kv-retention`, an EnginePool's
 * `kvRetention.policy`); engine-pod/src/kv/retention.ts says what each does.
 */
export const KV_RETENTION_POLICIES = ["eta", "ttl", "lru", "pin", "discard"] as const;
export type KvRetentionPolicy = (typeof KV_RETENTION_POLICIES)[number];

/**
 * How long a paused session's KV cells are worth keeping while its tools run,
 * from the caller who knows its tools (SGLang's `retention_seconds`, Dynamo's
 * agent hints). The engine uses them where it knows no better.
 */
export interface RetentionHint {
  /** Expected duration of this session's calls, ms: the wait estimate for a call whose tool declares no `estimatedLatencyMs`. */
  expectedToolMs?: number;
  /** Keep the cells at least this long after each pause: the `ttl` retention policy's TTL for this session. */
  retentionSeconds?: number;
}

/** Body of `POST /v1/sessions`. */
export interface CreateSessionRequest {
  /** The user input; or a full message list (a system message overrides `system`). */
  prompt: string | ChatMessage[];
  system?: string;
  tools?: ToolSpec[];
  mode?: CallingMode;
  /** `sync` only: keep the previous request's KV cache as a prefix cache (default true). */
  prefixReuse?: boolean;
  maxTokens?: number;
  temperature?: number;
  seed?: number;
  /** Constrain call bodies with a GBNF grammar built from the tools' schemas (default true). */
  grammar?: boolean;
  kvPolicy?: KvPolicy;
  /** KV retention across this session's tool waits (validated: a bad hint is a 400). */
  retention?: RetentionHint;
  policy?: ScriptedPolicySpec;
  /**
   * Admission priority, higher first (the router sends 1 for AgentApps whose
   * objective is `latency`, 0 for `throughput`). Optional; an engine without
   * an admission queue ignores it.
   */
  priority?: number;
  /**
   * Most sequences in any step's batch while this session is in it: a
   * latency-critical request's small batches (the router sends it for a
   * program request deduced `latency`). Others wait a step for a place;
   * sessions that set it never wait for each other. Absent: no cap.
   */
  maxBatch?: number;
  speculation?: SessionSpeculation;
  /**
   * `--backend openai`, `sync`/`syncParallel` only: the upstream's
   * `tool_choice` for the session's first request. Once the tools it asked
   * for have run it is dropped (the upstream's default applies), as the
   * OpenAI Agents SDK resets a forced tool choice, so a forced call cannot
   * loop forever.
   */
  toolChoice?: ToolChoice;
  /**
   * The session's answer (its text outside call blocks) is JSON: generated
   * under a grammar built from the schema, while call blocks stay possible.
   * The answer begins once no call is outstanding; the `done` event carries it.
   */
  responseFormat?: ResponseFormat;
}

export interface SessionUsage {
  promptTokens: number;
  /** Tokens evaluated as prompt/prefill (first fill, re-entries, recomputes). */
  prefilledTokens: number;
  /** Tokens produced by decode steps (sampled or scripted). */
  decodedTokens: number;
  /** Interrupt tokens appended to the live sequence. */
  injectedTokens: number;
  calls: number;
  interrupts: number;
  traps: number;
  /**
   * `--backend openai` only: what the upstream server reported over all the
   * session's requests. `cachedTokens` is null when the upstream does not
   * report prefix-cache hits (then `prefilledTokens` counts every prompt token).
   */
  upstream?: { requests: number; promptTokens: number; cachedTokens: number | null; completionTokens: number };
}

export interface SessionTimings {
  /** Request accepted → first generated token. */
  ttftMs: number;
  /** Median time per decode step for this session. */
  tpotMs: number;
  /** First generated token → last token. */
  e2eMs: number;
  totalMs: number;
  /**
   * Within e2e: time spent evaluating steps of one token (decode), and steps of
   * more than one (the previous token plus injected interrupts; in sync modes
   * the re-entry fills). The rest of e2e is waiting (traps, sync turns) and
   * time between steps.
   */
  decodeMs: number;
  prefillMs: number;
}

export type TrapDecision = "keep" | "swap" | "recompute";

/** What speculation did in one session (on its `done` event when speculation was on). */
export interface SpeculationUsage {
  /** Turns at which the draft ran, and its time over them (g summed), ms. */
  draftRuns: number;
  draftMs: number;
  /** Unscripted draft runs that wrote no parseable call (nothing to start). */
  draftNoCall?: number;
  /** Tool calls started before the model asked (only tools marked speculative). */
  started: number;
  /** Model calls served from the tool cache / not found there. */
  hits: number;
  misses: number;
  /** Cached results never used, and the tool time they cost, ms. */
  wasted: number;
  wastedToolMs: number;
  /** Tool time the hits masked, ms. */
  savedToolMs: number;
  /** O2: draft tokens proposed for one-pass validation / accepted. */
  draftTokensProposed: number;
  draftTokensAccepted: number;
  /** O3: cached results appended at a call's end without a trap. */
  o3Appends: number;
}

/** Server-sent events of a session. `t` is ms since the session was accepted. */
export type SessionEvent =
  | { type: "started"; sessionId: string; mode: CallingMode; promptTokens: number; scripted: boolean; t: number }
  | { type: "text"; text: string; t: number }
  | { type: "call"; callId: string; tool: string; arguments: Record<string, unknown>; t: number }
  | { type: "call_error"; callId: string; code: string; message: string; t: number }
  | {
      type: "interrupt";
      id: string;
      kind: InterruptKind;
      value: string;
      tokens: number;
      delayMs: number;
      delayTokens: number;
      /** Held back at least once because it arrived inside a critical section (a call block, or an answer under a `responseFormat`). */
      deferred?: boolean;
      t: number;
    }
  | {
      type: "trap";
      decision: TrapDecision;
      expectedWaitMs: number;
      contextTokens: number;
      /** Cost of the chosen action once it is known (pause + resume), ms. */
      costMs?: number;
      t: number;
    }
  | { type: "resume"; decision: TrapDecision; costMs: number; t: number }
  | {
      type: "done";
      reason: "eos" | "max_tokens" | "cancelled" | "error";
      usage: SessionUsage;
      timings: SessionTimings;
      scripted: boolean;
      speculation?: SpeculationUsage;
      /**
       * The session's final answer: its text outside call blocks after the
       * last call block, trap or delivered interrupt, trimmed. With a
       * `responseFormat`, one JSON value (unless the token limit cut it).
       */
      answer?: string;
      t: number;
    }
  | { type: "error"; code: string; message: string; t: number };

export type InterruptKind = "tool_result" | "tool_error" | "user" | "agent";

/** Body of `POST /v1/sessions/{id}/interrupts`. */
export interface PostInterruptRequest {
  value: string;
  kind?: "user" | "agent";
  /** Defaults to a generated id. */
  id?: string;
  /**
   * Refuse (429) when the session already has this many interrupts queued
   * and not yet injected (the router passes the AgentApp's `interrupts.maxQueued`).
   */
  maxQueued?: number;
}

/**
 * @module One streaming `POST {upstream}/chat/completions` at a time: text
 * deltas as they arrive (with their tokens' `logprobs` when asked for, relayed
 * as the upstream sends them), tool-call deltas assembled by index (and
 * reported as they arrive), the finish reason and the usage of the last
 * chunk. Every failure becomes an `InterlaceError` with a code the session
 * and the HTTP layer understand:
 * `upstream_unavailable` (connection refused or reset before a response),
 * `upstream_error` (5xx, in-band error, malformed or truncated stream),
 * `upstream_timeout` (past `--upstream-timeout-ms`), `capacity` (upstream
 * 429, its `Retry-After` kept), `bad_request` (other 4xx: the upstream
 * rejected what we sent). Only a request that produced no output yet and
 * failed in a transient way (refused, 502/503/504, closed before the first
 * chunk) is retried: nothing of it reached the session, so a retry is safe.
 */
import { createParser, type EventSourceMessage } from "eventsource-parser";
import { ErrorCode, InterlaceError, type Logger } from "../../../common/src/index.js";
import type { TokenLogprob } from "../engine/index.js";
import type { UpstreamOptions } from "./upstream-options.js";

/** A message in OpenAI's chat format, as sent upstream. */
export type UpstreamMessage =
  | { role: "system" | "user"; content: string }
  | { role: "assistant"; content: string | null; tool_calls?: UpstreamToolCall[] }
  | { role: "tool"; content: string; tool_call_id: string };

export interface UpstreamToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

export interface UpstreamTool {
  type: "function";
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

export interface UpstreamRequest {
  messages: UpstreamMessage[];
  tools?: UpstreamTool[];
  toolChoice?: "auto" | "none" | "required" | { type: "function"; function: { name: string } };
  parallelToolCalls?: boolean;
  maxTokens?: number;
  temperature?: number;
  seed?: number;
  topP?: number;
  stop?: string[];
  frequencyPenalty?: number;
  presencePenalty?: number;
  /** OpenAI's `logprobs: true` with this `top_logprobs`; the upstream's come back on the turn. */
  logprobs?: { top: number };
  /** OpenAI's `response_format`, as the client asked for it. */
  responseFormat?: Record<string, unknown>;
  /**
   * A GBNF grammar the output must match (llama.cpp's `grammar` extension;
   * vLLM/SGLang take `guided_grammar`/`ebnf`). Used only to replay scripted
   * policies on an upstream; ordinary sessions never send one.
   */
  grammar?: string;
}

export interface UpstreamUsage {
  promptTokens: number;
  completionTokens: number;
  /** Prompt tokens served from the upstream's prefix cache, when it reports them. */
  cachedTokens?: number;
}

export interface UpstreamTurn {
  content: string;
  toolCalls: UpstreamToolCall[];
  finishReason: "stop" | "length" | "tool_calls" | "content_filter" | "aborted";
  usage?: UpstreamUsage;
  /** Attempts this turn took (1 without retries). */
  attempts: number;
  /** The content tokens' log-probabilities, as the upstream sent them (when asked for). */
  logprobs?: TokenLogprob[];
}

export interface StreamHandlers {
  signal?: AbortSignal;
  /** Each text delta, as it arrives, with its tokens' log-probabilities when asked for. */
  onText?: (text: string, logprobs?: readonly TokenLogprob[]) => void;
  /**
   * After each tool-call delta: the call as assembled so far, to read, not to
   * change (the same object ends in the turn's `toolCalls`).
   */
  onToolCall?: (call: UpstreamToolCall) => void;
}

interface ChunkShape {
  choices?: {
    delta?: { content?: string | null; tool_calls?: { index?: number; id?: string; function?: { name?: string; arguments?: string } }[] };
    finish_reason?: string | null;
    logprobs?: { content?: unknown } | null;
  }[];
  usage?: { prompt_tokens?: number; completion_tokens?: number; prompt_tokens_details?: { cached_tokens?: number } | null } | null;
  error?: { message?: string; code?: unknown } | string;
}

const RETRYABLE_STATUS = new Set([502, 503, 504]);

/** A failure with whether retrying it is safe. */
class Attempt extends Error {
  constructor(
    readonly error: InterlaceError,
    readonly retryable: boolean,
  ) {
    super(error.message);
  }
}

function networkCode(err: unknown): string | undefined {
  let e: unknown = err;
  for (let i = 0; i < 4 && e !== null && typeof e === "object"; i++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string") return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

export class UpstreamClient {
  private readonly endpoint: string;

  constructor(
    readonly options: UpstreamOptions,
    private readonly log: Logger,
  ) {
    this.endpoint = `${options.url}/chat/completions`;
  }

  /** Streams one completion; retries transient failures that produced no output. */
  async stream(request: UpstreamRequest, handlers: StreamHandlers = {}): Promise<UpstreamTurn> {
    for (let attempt = 1; ; attempt++) {
      try {
        return { ...(await this.once(request, handlers)), attempts: attempt };
      } catch (err) {
        if (!(err instanceof Attempt)) throw err;
        if (!err.retryable || attempt > this.options.retries || handlers.signal?.aborted === true) throw err.error;
        const backoffMs = 100 * 2 ** (attempt - 1);
        this.log.warn({ attempt, backoffMs, code: err.error.code, message: err.error.message }, "upstream request failed before any output; retrying");
        await new Promise((r) => setTimeout(r, backoffMs));
      }
    }
  }

  private body(request: UpstreamRequest): Record<string, unknown> {
    return {
      model: this.options.model,
      messages: request.messages,
      stream: true,
      stream_options: { include_usage: true },
      ...(request.tools !== undefined && request.tools.length > 0
        ? {
            tools: request.tools,
            // Unset: the upstream's own default (vLLM refuses an explicit "auto" unless started with --enable-auto-tool-choice).
            ...(request.toolChoice !== undefined ? { tool_choice: request.toolChoice } : {}),
            ...(request.parallelToolCalls !== undefined ? { parallel_tool_calls: request.parallelToolCalls } : {}),
          }
        : {}),
      ...(request.maxTokens !== undefined ? { max_tokens: request.maxTokens } : {}),
      ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
      ...(request.seed !== undefined ? { seed: request.seed } : {}),
      ...(request.topP !== undefined ? { top_p: request.topP } : {}),
      ...(request.stop !== undefined ? { stop: request.stop } : {}),
      ...(request.frequencyPenalty !== undefined ? { frequency_penalty: request.frequencyPenalty } : {}),
      ...(request.presencePenalty !== undefined ? { presence_penalty: request.presencePenalty } : {}),
      ...(request.logprobs !== undefined ? { logprobs: true, top_logprobs: request.logprobs.top } : {}),
      ...(request.responseFormat !== undefined ? { response_format: request.responseFormat } : {}),
      ...(request.grammar !== undefined ? { grammar: request.grammar } : {}),
    };
  }

  private async once(request: UpstreamRequest, handlers: StreamHandlers): Promise<Omit<UpstreamTurn, "attempts">> {
    const timeout = AbortSignal.timeout(this.options.timeoutMs);
    const signal = handlers.signal === undefined ? timeout : AbortSignal.any([handlers.signal, timeout]);
    const where = `upstream ${this.endpoint}`;
    const failed = (err: unknown, produced: boolean): never => {
      if (handlers.signal?.aborted === true) throw new InterlaceError(ErrorCode.Cancelled, "cancelled", { cause: err });
      if (timeout.aborted) {
        throw new Attempt(new InterlaceError(ErrorCode.UpstreamTimeout, `${where} did not finish within ${this.options.timeoutMs} ms (--upstream-timeout-ms)`, { cause: err }), false);
      }
      if (err instanceof Attempt) throw err;
      const code = networkCode(err);
      const message = code === "ECONNREFUSED" ? `${where} refused the connection (ECONNREFUSED)` : `${where} connection failed${code !== undefined ? ` (${code})` : ""}: ${(err as Error).message}`;
      throw new Attempt(new InterlaceError(produced ? ErrorCode.UpstreamError : ErrorCode.UpstreamUnavailable, produced ? `${where} closed the stream mid-response${code !== undefined ? ` (${code})` : ""}` : message, { cause: err }), !produced);
    };

    let res: Response;
    try {
      const headers: Record<string, string> = { "content-type": "application/json", accept: "text/event-stream" };
      if (this.options.apiKey !== undefined) headers["authorization"] = `Bearer ${this.options.apiKey}`;
      res = await fetch(this.endpoint, { method: "POST", headers, body: JSON.stringify(this.body(request)), signal });
    } catch (err) {
      return failed(err, false);
    }
    if (!res.ok) {
      const text = await res.text().catch(() => "");
      const detail = upstreamMessage(text);
      if (res.status === 429) {
        const retryAfter = Number(res.headers.get("retry-after") ?? "");
        throw new InterlaceError(ErrorCode.Capacity, `${where} is rate limited (429)${detail !== "" ? `: ${detail}` : ""}`, {
          retryAfterSeconds: Number.isFinite(retryAfter) && retryAfter > 0 ? Math.ceil(retryAfter) : 1,
        });
      }
      if (res.status >= 500) throw new Attempt(new InterlaceError(ErrorCode.UpstreamError, `${where} answered ${res.status}${detail !== "" ? `: ${detail}` : ""}`), RETRYABLE_STATUS.has(res.status));
      throw new InterlaceError(ErrorCode.BadRequest, `${where} rejected the request (${res.status})${detail !== "" ? `: ${detail}` : ""}`);
    }
    if (res.body === null) throw new Attempt(new InterlaceError(ErrorCode.UpstreamError, `${where} sent no body`), true);

    let content = "";
    const logprobs: TokenLogprob[] = [];
    const calls: UpstreamToolCall[] = [];
    let finishReason: UpstreamTurn["finishReason"] | undefined;
    let usage: UpstreamUsage | undefined;
    let done = false;
    let chunks = 0;
    const events: EventSourceMessage[] = [];
    const parser = createParser({ onEvent: (e) => events.push(e) });
    const decoder = new TextDecoder();
    const malformed = (why: string): never => {
      throw new Attempt(new InterlaceError(ErrorCode.UpstreamError, `${where} sent a malformed stream: ${why}`), false);
    };
    const apply = (data: string): void => {
      if (data === "[DONE]") {
        done = true;
        return;
      }
      let chunk: ChunkShape;
      try {
        chunk = JSON.parse(data) as ChunkShape;
      } catch {
        return malformed(`chunk ${chunks + 1} is not JSON: ${JSON.stringify(data.slice(0, 120))}`);
      }
      chunks++;
      if (chunk.error !== undefined) {
        const msg = typeof chunk.error === "string" ? chunk.error : (chunk.error.message ?? JSON.stringify(chunk.error));
        throw new Attempt(new InterlaceError(ErrorCode.UpstreamError, `${where} reported an error mid-stream: ${msg}`), false);
      }
      if (chunk.usage !== undefined && chunk.usage !== null) {
        const cached = chunk.usage.prompt_tokens_details?.cached_tokens;
        usage = {
          promptTokens: chunk.usage.prompt_tokens ?? 0,
          completionTokens: chunk.usage.completion_tokens ?? 0,
          ...(typeof cached === "number" ? { cachedTokens: cached } : {}),
        };
      }
      if (chunk.choices !== undefined && !Array.isArray(chunk.choices)) malformed(`"choices" is not an array`);
      const choice = chunk.choices?.[0];
      if (choice === undefined) return;
      const delta = choice.delta ?? {};
      const text = typeof delta.content === "string" ? delta.content : "";
      const entries = request.logprobs !== undefined ? relayedLogprobs(choice.logprobs?.content, malformed) : [];
      logprobs.push(...entries);
      if (text !== "" || entries.length > 0) {
        content += text;
        handlers.onText?.(text, entries);
      }
      for (const tc of delta.tool_calls ?? []) {
        const index = tc.index ?? calls.length;
        let call = calls[index];
        if (call === undefined) calls[index] = call = { id: "", type: "function", function: { name: "", arguments: "" } };
        if (tc.id !== undefined && tc.id !== "") call.id = tc.id;
        // OpenAI and vLLM send the name once; llama-cpp-python repeats the whole name in every delta.
        const name = tc.function?.name;
        if (name !== undefined && name !== call.function.name) call.function.name += name;
        if (typeof tc.function?.arguments === "string") call.function.arguments += tc.function.arguments;
        handlers.onToolCall?.(call);
      }
      if (choice.finish_reason !== undefined && choice.finish_reason !== null) {
        const r = choice.finish_reason;
        finishReason = r === "stop" || r === "length" || r === "tool_calls" || r === "content_filter" ? r : r === "function_call" ? "tool_calls" : "stop";
      }
    };
    try {
      for await (const bytes of res.body as unknown as AsyncIterable<Uint8Array>) {
        parser.feed(decoder.decode(bytes, { stream: true }));
        for (const e of events.splice(0)) apply(e.data);
        if (done) break;
      }
    } catch (err) {
      return failed(err, content !== "" || calls.length > 0);
    }
    if (finishReason === undefined) {
      // A closed connection without a finish reason: the server died or cut us off mid-stream.
      const produced = content !== "" || calls.length > 0;
      throw new Attempt(
        new InterlaceError(ErrorCode.UpstreamError, `${where} ended the stream after ${chunks} chunk(s) without a finish_reason (server gone mid-stream?)`),
        !produced,
      );
    }
    if (request.logprobs !== undefined && content !== "" && logprobs.length === 0) {
      throw new Attempt(new InterlaceError(ErrorCode.UpstreamError, `${where} sent no logprobs for its content (does it support "logprobs"?)`), false);
    }
    return { content, toolCalls: calls.filter((c) => c !== undefined), finishReason, ...(usage !== undefined ? { usage } : {}), ...(request.logprobs !== undefined ? { logprobs } : {}) };
  }
}

/** A chunk's `logprobs.content` (OpenAI's shape) as the engine's entries; anything else is a malformed stream. */
function relayedLogprobs(value: unknown, malformed: (why: string) => never): TokenLogprob[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) return malformed(`"logprobs.content" is not an array`);
  const token = (v: unknown): { token: string; logprob: number; bytes: number[] } => {
    const e = v as { token?: unknown; logprob?: unknown; bytes?: unknown } | null;
    if (typeof e?.token !== "string" || typeof e.logprob !== "number") return malformed(`a "logprobs.content" entry is not {token, logprob, bytes}`);
    const bytes = Array.isArray(e.bytes) && e.bytes.every((b) => typeof b === "number") ? (e.bytes as number[]) : [...Buffer.from(e.token, "utf8")];
    return { token: e.token, logprob: e.logprob, bytes };
  };
  return value.map((v) => {
    const top = (v as { top_logprobs?: unknown } | null)?.top_logprobs;
    return { ...token(v), topLogprobs: Array.isArray(top) ? top.map(token) : [] };
  });
}

/** The message of an OpenAI-shaped error body, or the body's start. */
function upstreamMessage(text: string): string {
  try {
    const body = JSON.parse(text) as { error?: { message?: string } | string; message?: string; detail?: unknown };
    if (typeof body.error === "string") return body.error;
    if (body.error?.message !== undefined) return body.error.message;
    if (typeof body.message === "string") return body.message;
    if (body.detail !== undefined) return typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail).slice(0, 300);
  } catch {
    // not JSON
  }
  return text.slice(0, 300);
}

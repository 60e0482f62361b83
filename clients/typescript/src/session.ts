/**
 * @module Sessions: one agent turn on an engine, with its event stream (text,
 * tool calls, interrupts injected, traps, done), user interrupts sent while
 * it decodes, tool outputs the client already has (`cache-tool-output`), and
 * cancel.
 */
import type { Transport } from "./transport.js";

/** A session's events (the engine's `SessionEvent`s, as the router relays them). */
export type SessionEvent =
  | { type: "started"; sessionId: string; mode: string; promptTokens: number; scripted: boolean; t: number }
  | { type: "text"; text: string; t: number }
  | { type: "call"; callId: string; tool: string; arguments: Record<string, unknown>; t: number }
  | { type: "call_error"; callId: string; code: string; message: string; t: number }
  | { type: "interrupt"; id: string; kind: "tool_result" | "tool_error" | "user" | "agent"; value: string; tokens: number; delayMs: number; t: number }
  | { type: "trap"; decision: string; expectedWaitMs: number; contextTokens: number; t: number }
  | { type: "resume"; decision: string; costMs: number; t: number }
  | { type: "done"; reason: "eos" | "max_tokens" | "cancelled" | "error"; usage: Record<string, number>; timings: Record<string, number>; answer?: string; t: number }
  | { type: "error"; code: string; message: string; t: number };

export interface SessionRequest {
  /** A user message, or the conversation after the app's system prompt and few-shot examples. */
  prompt: string | { role: "user" | "assistant" | "tool"; content: string }[];
  maxTokens?: number;
  temperature?: number;
  seed?: number;
  /** Scripts the session, for the engine's generated test model. */
  policy?: Record<string, unknown>;
  /** OpenAI's `response_format` shape: the answer (`done.answer`) is JSON of this schema. */
  responseFormat?: { type: "text" } | { type: "json_object" } | { type: "json_schema"; json_schema: { name: string; schema: Record<string, unknown>; strict?: boolean } };
}

/** An output the client already has for a tool call (`params` absent: any call of the tool); kept `keepAlive` seconds. */
export interface ToolOutput {
  name: string;
  output: unknown;
  params?: Record<string, unknown>;
  keepAlive?: number;
}

/** An interrupt the engine queued for injection. */
export interface InterruptAccepted {
  id: string;
  kind: "user" | "agent";
  sessionId: string;
  engine: string;
}

/** A session opened through the router (`await client.session(...)`). */
export class Session {
  readonly id: string;
  /** The engine pod it was placed on, and why. */
  readonly engine: string;
  /** `queuedMs`: how long the router held the session in its capacity queue, every engine full (absent from routers that predate the queue). */
  readonly placement: { reason: string; matchedSegments: number; segments: number; retries: number; queuedMs?: number };

  /** @internal */
  constructor(
    private readonly transport: Transport,
    created: { id: string; engine: string; placement: Session["placement"] },
  ) {
    this.id = created.id;
    this.engine = created.engine;
    this.placement = created.placement;
  }

  /** The session's events until `done` (past ones first; `lastEventId` resumes after one). */
  async *events(options: { lastEventId?: string; signal?: AbortSignal } = {}): AsyncGenerator<SessionEvent> {
    for await (const e of this.transport.events(`sessions/${encodeURIComponent(this.id)}/events`, options.lastEventId, options.signal)) yield JSON.parse(e.data) as SessionEvent;
  }

  /** Injects `value` into the live session as an interrupt (the app must take user interrupts). */
  async interrupt(value: string, options: { kind?: "user" | "agent"; id?: string } = {}): Promise<InterruptAccepted> {
    const res = await this.transport.request("POST", `sessions/${encodeURIComponent(this.id)}/interrupts`, { value, kind: options.kind ?? "user", ...(options.id !== undefined ? { id: options.id } : {}) });
    return (await res.json()) as InterruptAccepted;
  }

  /** Gives the engine tool outputs the client already has; resolves to how many were cached. */
  async cacheToolOutput(outputs: readonly ToolOutput[]): Promise<number> {
    const body = outputs.map((o) => ({ name: o.name, output: o.output, ...(o.params !== undefined ? { params: o.params } : {}), ...(o.keepAlive !== undefined ? { keep_alive: o.keepAlive } : {}) }));
    const res = await this.transport.request("POST", `sessions/${encodeURIComponent(this.id)}/cache-tool-output`, body);
    return ((await res.json()) as { cached: number }).cached;
  }

  /** Cancels the session on its engine. */
  async cancel(): Promise<void> {
    await this.transport.request("DELETE", `sessions/${encodeURIComponent(this.id)}`);
  }
}

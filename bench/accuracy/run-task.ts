/**
 * @module Runs one BFCL single-turn task on the engine in one calling format
 * and collects the calls the MODEL chose (no policy anywhere):
 * - `cmlAsync`: a CML session in async mode (results arrive as interrupts
 *   while the model decodes);
 * - `cmlSync`: the same session in sync mode (stop at each call, re-enter);
 * - `openaiTools`: one `/v1/chat/completions` request in the OpenAI tools
 *   format (CML underneath), scored on its `tool_calls`;
 * - `native`: the model's own tool-call format, not CML (native-format.ts;
 *   not an engine session, so not run here).
 * Latency is client-side wall time, request to last byte, for every row.
 */
import { SessionClient, type ChatMessage, type SessionEvent, type ToolSpec } from "../../common/src/index.js";
import type { ModelCall } from "./ast-scorer.js";

export type FormatName = "cmlAsync" | "cmlSync" | "openaiTools" | "native";
export const FORMATS: readonly FormatName[] = ["cmlAsync", "cmlSync", "openaiTools", "native"];
/** The formats an engine session serves (the rest run beside the engine). */
export type EngineFormatName = Exclude<FormatName, "native">;

export interface AccuracyTask {
  id: string;
  category: string;
  messages: ChatMessage[];
  tools: ToolSpec[];
}

export interface FormatOutcome {
  calls: ModelCall[];
  /** Call blocks the engine rejected (parse or schema failure); `null` where the format cannot show them. */
  invalidCalls: number | null;
  latencyMs: number;
  tokensGenerated: number;
  /** The turn ended by itself (end of sequence), not at the token budget. */
  eos: boolean;
  endReason: string;
}

export interface RunOptions {
  engineUrl: string;
  maxTokens: number;
  seed: number;
  /** Constrain call blocks with the call grammar (default true; CML formats only). */
  grammar?: boolean;
}

export async function runFormat(task: AccuracyTask, format: EngineFormatName, o: RunOptions): Promise<FormatOutcome> {
  return format === "openaiTools" ? runOpenAi(task, o) : runSession(task, format === "cmlAsync" ? "async" : "sync", o);
}

async function runSession(task: AccuracyTask, mode: "async" | "sync", o: RunOptions): Promise<FormatOutcome> {
  const client = new SessionClient(o.engineUrl);
  const t0 = performance.now();
  const events: SessionEvent[] = await client.run({ prompt: task.messages, tools: task.tools, mode, temperature: 0, seed: o.seed, maxTokens: o.maxTokens, ...(o.grammar === false ? { grammar: false } : {}) });
  const latencyMs = performance.now() - t0;
  const done = events.find((e): e is Extract<SessionEvent, { type: "done" }> => e.type === "done");
  if (done === undefined) throw new Error(`${task.id}/${mode}: no done event`);
  if (done.reason === "error" || done.reason === "cancelled") {
    const err = events.find((e) => e.type === "error");
    throw new Error(`${task.id}/${mode}: session ended with ${done.reason}${err?.type === "error" ? `: ${err.message}` : ""}`);
  }
  if (done.scripted) throw new Error(`${task.id}/${mode}: a scripted session cannot measure accuracy`);
  return {
    calls: events.flatMap((e) => (e.type === "call" ? [{ tool: e.tool, arguments: e.arguments }] : [])),
    invalidCalls: events.filter((e) => e.type === "call_error").length,
    latencyMs,
    tokensGenerated: done.usage.decodedTokens,
    eos: done.reason === "eos",
    endReason: done.reason,
  };
}

interface ChatCompletionResponse {
  choices?: { message?: { tool_calls?: { function?: { name?: string; arguments?: string } }[] }; finish_reason?: string }[];
  usage?: { completion_tokens?: number };
  interlace?: { scripted?: boolean };
}

async function runOpenAi(task: AccuracyTask, o: RunOptions): Promise<FormatOutcome> {
  const t0 = performance.now();
  const res = await fetch(`${o.engineUrl}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model: "interlace",
      messages: task.messages,
      tools: task.tools.map((t) => ({
        type: "function",
        function: { name: t.name, description: t.description, parameters: t.parameters, interlace_estimated_latency_ms: t.estimatedLatencyMs },
      })),
      temperature: 0,
      seed: o.seed,
      max_tokens: o.maxTokens,
    }),
  });
  const text = await res.text();
  const latencyMs = performance.now() - t0;
  if (!res.ok) throw new Error(`${task.id}/openaiTools: HTTP ${res.status}: ${text}`);
  const body = JSON.parse(text) as ChatCompletionResponse;
  if (body.interlace?.scripted === true) throw new Error(`${task.id}/openaiTools: a scripted completion cannot measure accuracy`);
  const choice = body.choices?.[0];
  const calls = (choice?.message?.tool_calls ?? []).map((c) => ({
    tool: String(c.function?.name),
    arguments: JSON.parse(c.function?.arguments ?? "{}") as Record<string, unknown>,
  }));
  const finish = choice?.finish_reason ?? "?";
  return { calls, invalidCalls: null, latencyMs, tokensGenerated: body.usage?.completion_tokens ?? 0, eos: finish !== "length", endReason: finish };
}

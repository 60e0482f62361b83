/**
 * @module Turns a request's messages into prompt tokens for the decode loop.
 * Rendering (the CML system prompt, the tool list with latency hints, the
 * chat template) belongs to the prompt module; this adapter only tokenizes
 * safely: template markers and CML written by the assistant (its own earlier
 * output) become control tokens, while user, system and tool text is
 * tokenized as plain text so it can never forge a marker.
 */
import type { Token } from "node-llama-cpp";
import { CML, type ChatMessage, type ToolSpec } from "../../../common/src/index.js";
import type { Runtime } from "./runtime.js";

export interface PromptInput {
  messages: ChatMessage[];
  tools: ToolSpec[];
  /** Continue the last assistant message instead of opening a new turn. */
  continueAssistant?: boolean;
}

/** The default system prompt: how to call tools with CML, with each tool's latency hint (LPT). */
export function defaultSystemPrompt(tools: readonly ToolSpec[]): string {
  const lines = [
    "You are an assistant that calls tools asynchronously.",
    `Call a tool with ${CML.CALL} id ${CML.HEAD} {"name": "tool", "arguments": {...}} ${CML.END} and keep working while it runs.`,
    `Results arrive as ${CML.INTR} id ${CML.HEAD} value ${CML.END}. When you must wait for a result, write ${CML.TRAP}${CML.END}.`,
    "Call the ready tool with the longest estimated latency first.",
  ];
  if (tools.length > 0) {
    lines.push("Tools:");
    for (const t of tools) {
      const latency = t.estimatedLatencyMs === undefined ? "" : ` (about ${t.estimatedLatencyMs} ms)`;
      lines.push(`- ${t.name}${latency}: ${t.description} parameters: ${JSON.stringify(t.parameters)}`);
    }
  }
  return lines.join("\n");
}

/** ChatML segments: control markers as special tokens, content by role. */
export function promptTokens(runtime: Runtime, input: PromptInput): Token[] {
  const model = runtime.model;
  const special = (s: string): Token[] => model.tokenize(s, true);
  const out: Token[] = [];
  const msgs = input.messages;
  const hasSystem = msgs[0]?.role === "system";
  const all: ChatMessage[] = hasSystem ? msgs : [{ role: "system", content: defaultSystemPrompt(input.tools) }, ...msgs];
  const bos = model.tokens.bos;
  if (bos !== null && model.tokens.shouldPrependBosToken) out.push(bos);
  all.forEach((m, i) => {
    const last = i === all.length - 1;
    out.push(...special("<|im_start|>"), ...runtime.tokenizeText(`${m.role}\n`));
    out.push(...(m.role === "assistant" ? runtime.tokenizeCml(m.content) : runtime.tokenizeText(m.content)));
    if (last && m.role === "assistant" && input.continueAssistant === true) return;
    out.push(...special("<|im_end|>"), ...runtime.tokenizeText("\n"));
  });
  const lastRole = all[all.length - 1]?.role;
  if (!(input.continueAssistant === true && lastRole === "assistant")) {
    out.push(...special("<|im_start|>"), ...runtime.tokenizeText("assistant\n"));
  }
  return out;
}

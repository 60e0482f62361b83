/**
 * @module Turns a request's messages into prompt tokens for the decode loop,
 * through the prompt module: the CML system prompt (instructions, few-shot
 * example, each tool with its latency hint) around the app's own system text,
 * rendered with the model's chat template; user and tool text can never
 * forge a marker.
 */
import type { Token } from "node-llama-cpp";
import type { ChatMessage, ToolSpec } from "../../../common/src/index.js";
import { buildCmlSystemPrompt, renderPrompt, type PromptMessage } from "../prompt/index.js";
import type { Runtime } from "./runtime.js";

export interface PromptInput {
  messages: readonly (ChatMessage | PromptMessage)[];
  tools: readonly ToolSpec[];
  /** Continue the last assistant message instead of opening a new turn. */
  continueAssistant?: boolean;
}

/** The tokens to prefill for `input`. */
export function promptTokens(runtime: Runtime, input: PromptInput): Token[] {
  const [first, ...rest] = input.messages;
  const appSystem = first?.role === "system" ? first.content : undefined;
  const body = first?.role === "system" ? rest : input.messages;
  const system = buildCmlSystemPrompt({ tools: input.tools, ...(appSystem !== undefined ? { system: appSystem } : {}) });
  const messages: PromptMessage[] = [{ role: "system", content: system }, ...body];
  return renderPrompt(runtime.model, messages, input.continueAssistant === true ? { continueAssistant: true } : {}).tokens;
}

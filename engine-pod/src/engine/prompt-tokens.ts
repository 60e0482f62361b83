/**
 * @module Turns a request's messages into prompt tokens for the decode loop,
 * through the prompt module: the CML system prompt (instructions, each tool
 * with its latency hint) around the app's own system text, the few-shot
 * examples as chat turns, rendered with the model's chat template; user and
 * tool text can never forge a marker.
 */
import type { Token } from "node-llama-cpp";
import type { ChatMessage, ToolSpec } from "../../../common/src/index.js";
import { cmlPromptMessages, renderPrompt, type PromptMessage } from "../prompt/index.js";
import type { Runtime } from "./runtime.js";

export interface PromptInput {
  messages: readonly (ChatMessage | PromptMessage)[];
  tools: readonly ToolSpec[];
  /** Continue the last assistant message instead of opening a new turn. */
  continueAssistant?: boolean;
}

/** The tokens to prefill for `input`. */
export function promptTokens(runtime: Runtime, input: PromptInput): Token[] {
  const messages = cmlPromptMessages({ messages: input.messages, tools: input.tools });
  return renderPrompt(runtime.model, messages, input.continueAssistant === true ? { continueAssistant: true } : {}).tokens;
}

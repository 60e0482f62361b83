/**
 * @module Turns a request's messages into prompt tokens for the decode loop,
 * through the prompt module: the CML system prompt (instructions, each tool
 * with its latency hint) around the app's own system text, the few-shot
 * examples as chat turns, rendered with the model's chat template; user and
 * tool text can never forge a marker. Also the tokens that continue a
 * retained sequence with new messages, without rendering its history again.
 */
import type { Token } from "node-llama-cpp";
import { leadingSystem, type ChatMessage, type ToolSpec } from "../../../common/src/index.js";
import { cmlPromptMessages, renderPrompt, type PromptMessage } from "../prompt/index.js";
import { commonPrefix } from "../scheduler/index.js";
import { interruptBlockTokens, type Runtime } from "./runtime.js";

export interface PromptInput {
  messages: readonly (ChatMessage | PromptMessage)[];
  tools: readonly ToolSpec[];
  /** Continue the last assistant message instead of opening a new turn. */
  continueAssistant?: boolean;
}

/** The tokens to prefill for `input`. */
export function promptTokens(runtime: Runtime, input: PromptInput): Token[] {
  const { examples, instructions } = runtime.promptStyle;
  const messages = cmlPromptMessages({ messages: input.messages, tools: input.tools, instructions, ...(examples === "none" ? { examples: [] } : {}) });
  return renderPrompt(runtime.model, messages, input.continueAssistant === true ? { continueAssistant: true } : {}).tokens;
}

/**
 * How many of `prompt`'s first tokens are the app's shared prefix: what its
 * leading system messages and tool block render to (the CML system prompt),
 * the part every session of the app starts with. 0 when there is neither.
 */
export function sharedPrefixLength(runtime: Runtime, input: PromptInput, prompt: readonly Token[]): number {
  const system = leadingSystem(input.messages);
  if (system.length === 0 && input.tools.length === 0) return 0;
  try {
    return commonPrefix(promptTokens(runtime, { messages: system, tools: input.tools }), prompt);
  } catch {
    // A chat template that will not render a conversation without a user turn: no shared prefix known.
    return 0;
  }
}

export interface ContinuationInput {
  /** The conversation the retained sequence holds, ending with its assistant turn. */
  prior: readonly PromptMessage[];
  /** The new messages. */
  append: readonly PromptMessage[];
  tools: readonly ToolSpec[];
}

/**
 * Tokens to append to a retained sequence (resident tokens of `prior`'s
 * completion) for `append`, or undefined when they cannot be derived
 * exactly. Tool results that come first continue the assistant turn as
 * interrupt blocks, tokenized exactly as the engine injects results; later
 * messages close the turn and open new ones: those tokens are what the chat
 * template adds after the open assistant turn, taken as the difference of two
 * renderings (undefined when the first rendering is not a prefix of the
 * second, i.e. the template rewrites earlier turns).
 */
export function continuationTokens(runtime: Runtime, input: ContinuationInput): Token[] | undefined {
  const lead: PromptMessage[] = [];
  for (const m of input.append) {
    if (m.role !== "tool") break;
    lead.push(m);
  }
  const rest = input.append.slice(lead.length);
  // A tool result after a user message belongs in a closed turn: no exact continuation.
  if (rest.some((m) => m.role === "tool")) return undefined;
  const ids = runtime.markerIds;
  const out: Token[] = lead.flatMap((m) => interruptBlockTokens(ids, runtime.tokenizeText, m.toolCallId ?? "result", m.content));
  if (rest.length === 0) return out;
  if (input.prior.at(-1)?.role !== "assistant") return undefined;
  const open = promptTokens(runtime, { messages: input.prior, tools: input.tools, continueAssistant: true });
  const closed = promptTokens(runtime, { messages: [...input.prior, ...rest], tools: input.tools });
  if (commonPrefix(open, closed) !== open.length) return undefined;
  return [...out, ...closed.slice(open.length)];
}

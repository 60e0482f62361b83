/**
 * @module The messages a CML session's prompt is rendered from: the system
 * prompt (the app's text, the CML instructions and the tool list with latency
 * hints), then the few-shot examples as real chat turns, then the
 * conversation itself. Without tools there is nothing to teach: the messages
 * pass through with the app's system text only.
 */
import type { ChatMessage, ToolSpec } from "../../../common/src/index.js";
import { buildCmlSystemPrompt, type CallStyle, type PromptInstructions } from "./cml-instructions.js";
import { builtInExamples, fewShotMessages, type FewShotExample } from "./few-shot.js";
import type { PromptMessage } from "./render-prompt.js";

export interface CmlPromptInput {
  messages: readonly (ChatMessage | PromptMessage)[];
  tools: readonly ToolSpec[];
  /** Default: the built-in examples; `[]`: none. */
  examples?: readonly FewShotExample[];
  callStyle?: CallStyle;
  /** Default `full`. */
  instructions?: PromptInstructions;
}

/** System prompt + few-shot turns + the conversation (a leading system message becomes the app's system text). */
export function cmlPromptMessages(input: CmlPromptInput): PromptMessage[] {
  const [first, ...rest] = input.messages;
  const appSystem = first?.role === "system" ? first.content : undefined;
  const body = first?.role === "system" ? rest : [...input.messages];
  const style = input.callStyle ?? "json";
  const system = buildCmlSystemPrompt({ tools: input.tools, fewShot: false, callStyle: style, ...(input.instructions !== undefined ? { instructions: input.instructions } : {}), ...(appSystem !== undefined ? { system: appSystem } : {}) });
  const shots = input.tools.length > 0 ? fewShotMessages(input.examples ?? builtInExamples(style)) : [];
  return [...(system !== "" ? [{ role: "system" as const, content: system }] : []), ...shots, ...body];
}

/**
 * @module The prompt module's public surface: the system prompt that teaches
 * CML, and rendering chat messages through the model's chat template into
 * tokens (untrusted text never becomes a marker).
 */
export {
  buildCmlSystemPrompt,
  describeTool,
  formatCallBody,
  formatLatency,
  DEFAULT_PROMPT_STYLE,
  PROMPT_EXAMPLES,
  PROMPT_INSTRUCTIONS,
  type CallStyle,
  type CmlSystemPromptOptions,
  type PromptExamples,
  type PromptInstructions,
  type PromptStyle,
} from "./cml-instructions.js";
export { cmlPromptMessages, type CmlPromptInput } from "./cml-prompt.js";
export { builtInExamples, fewShotMessages, type FewShotExample } from "./few-shot.js";
export {
  renderPrompt,
  renderPromptText,
  tokenizeCml,
  plainText,
  trustedText,
  segmentsText,
  type CmlSegment,
  type PromptMessage,
  type RenderOptions,
  type RenderedPrompt,
} from "./render-prompt.js";

/**
 * @module The JSON Schema pieces both OpenAI-compatible request bodies
 * (chat completions and Responses) share: the tool_choice modes, the
 * system roles, the sampling bounds, the identifier parameters and
 * the refused ones both endpoints list. The body schemas, the engine's
 * parsers, the router's merge and the OpenAPI document take them from here.
 * Imports nothing but types, so any wire schema may build on it.
 */
import type { JsonSchema } from "../tools.js";

/** `tool_choice` as a word (a named function is the object form). */
export const TOOL_CHOICE_MODES = ["auto", "none", "required"] as const;
/** Roles that carry the system message: a client of an AgentApp may send neither (the app's systemPrompt is it). */
export const SYSTEM_ROLES = ["system", "developer"] as const;
/** OpenAI's bound on `stop` sequences. */
export const MAX_STOP_SEQUENCES = 4;
/** OpenAI's bounds on `top_logprobs`. */
export const MAX_TOP_LOGPROBS = 20;

/** The parameters both endpoints name and bound alike. */
export const sharedSamplingProperties = {
  temperature: { type: "number", minimum: 0, maximum: 2, description: "Default 0 (greedy)." },
  top_p: { type: "number", exclusiveMinimum: 0, maximum: 1, description: "Nucleus sampling." },
} as const satisfies Record<string, JsonSchema>;

/** Parameters both endpoints list with the same shape (applied, no effect, or refused: `openai-parameters.ts`). */
export const sharedParameterProperties = {
  model: { type: "string", description: "Echoed; the endpoint's path (or the pod) decides the model." },
  ...sharedSamplingProperties,
  parallel_tool_calls: { type: "boolean", description: "false: the turn ends at its first call." },
  stream: { type: "boolean" },
  user: { type: "string" },
  safety_identifier: { type: "string" },
  service_tier: { enum: ["auto", "default", "flex", "scale", "priority"] },
  prompt_cache_key: { type: "string" },
  prompt_cache_retention: { enum: ["in-memory", "24h"] },
  top_logprobs: { type: "integer", minimum: 0, maximum: MAX_TOP_LOGPROBS },
} as const satisfies Record<string, JsonSchema>;

/** `if` the object's `type` is `value` (present), `then` … */
export function whenType(value: string, then: JsonSchema): JsonSchema {
  return { if: { properties: { type: { const: value } }, required: ["type"] }, then };
}

/**
 * The body without its null fields: OpenAI's SDKs send `null` for a
 * parameter left unset, and a null parameter is an absent one.
 */
export function presentFields(body: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(body).filter(([, v]) => v !== null && v !== undefined));
}

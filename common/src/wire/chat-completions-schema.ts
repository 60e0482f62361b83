/**
 * @module The JSON Schema of a `POST /v1/chat/completions` body: every
 * parameter OpenAI documents, with its type, bounds and enums (each one
 * applied or refused by the engine: `engine-pod/src/server/openai-parameters.ts`,
 * checked against these properties by a test), and Interlace's `interlace_*`
 * extensions. The engine validates bodies with it through the one validator;
 * the OpenAPI document serves it as is.
 */
import type { ChatMessage, ScriptedPolicySpec } from "../session.js";
import { TOOL_NAME_PATTERN, type JsonSchema } from "../tools.js";
import { MAX_STOP_SEQUENCES, sharedParameterProperties, SYSTEM_ROLES, TOOL_CHOICE_MODES } from "./openai-shared-schema.js";
import { callIdSchema, CHAT_ROLES, scriptedPolicySchema } from "./request-schemas.js";
import { responseFormatSchema, type ResponseFormatBody } from "./response-format-schema.js";
import { compileSchema } from "./validator.js";

/** Chat-completion message roles: the session roles plus `developer` (a system message). */
export const CHAT_COMPLETION_ROLES = [...SYSTEM_ROLES, ...CHAT_ROLES.filter((r) => r !== "system")] as const;
/** Most choices one request may ask for (`n`): each holds a sequence while it runs. */
export const MAX_CHOICES = 8;

/** `content`: a string, null, or `{type: "text", text}` parts. */
const contentSchema: JsonSchema = {
  anyOf: [
    { type: ["string", "null"] },
    { type: "array", items: { type: "object", properties: { type: { const: "text" }, text: { type: "string" } }, required: ["type", "text"] } },
  ],
  "x-expected": "a string, null or an array of text parts",
};

/** An assistant message's earlier call, written back into its text as a call block. */
const toolCallSchema: JsonSchema = {
  type: "object",
  properties: {
    id: callIdSchema,
    type: { const: "function" },
    function: {
      type: "object",
      properties: { name: { type: "string" }, arguments: { type: ["string", "object"], description: "JSON text (or an object)" } },
      required: ["name"],
    },
  },
  required: ["id", "function"],
};

const messageSchema: JsonSchema = {
  type: "object",
  properties: {
    role: { enum: CHAT_COMPLETION_ROLES },
    content: contentSchema,
    name: { type: "string" },
    tool_calls: { type: ["array", "null"], items: toolCallSchema },
    tool_call_id: { ...callIdSchema, description: "The id of the earlier tool call this message answers" },
  },
  required: ["role"],
  allOf: [{ if: { properties: { role: { const: "tool" } } }, then: { required: ["tool_call_id"] } }],
};

/** A function tool; its `parameters` become the call grammar. */
const chatToolSchema: JsonSchema = {
  type: "object",
  properties: {
    type: { const: "function" },
    function: {
      type: "object",
      properties: {
        name: { type: "string", pattern: TOOL_NAME_PATTERN.source },
        description: { type: "string" },
        parameters: { type: ["object", "null"] },
        strict: { type: ["boolean", "null"] },
        interlace_estimated_latency_ms: { type: "number", minimum: 0, description: "Interlace: the tool's expected latency (longest calls are issued first)" },
      },
      required: ["name"],
    },
  },
  required: ["type", "function"],
  "x-expected": '{"type": "function", "function": {"name", "description", "parameters"}}',
};

/** A chat-completions `tool_choice`: a mode, or one function by name. */
export const chatToolChoiceSchema: JsonSchema = {
  anyOf: [
    { enum: TOOL_CHOICE_MODES },
    {
      type: "object",
      properties: { type: { const: "function" }, function: { type: "object", properties: { name: { type: "string", minLength: 1 } }, required: ["name"] } },
      required: ["type", "function"],
    },
  ],
  "x-expected": `${TOOL_CHOICE_MODES.map((m) => JSON.stringify(m)).join(", ")} or {"type": "function", "function": {"name"}}`,
};

/** `stop`: a string, or up to four. */
const stopSchema: JsonSchema = {
  anyOf: [
    { type: "string", minLength: 1 },
    { type: "array", maxItems: MAX_STOP_SEQUENCES, items: { type: "string", minLength: 1 } },
  ],
  "x-expected": `a non-empty string or an array of at most ${MAX_STOP_SEQUENCES} of them`,
};

const maxTokensSchema: JsonSchema = { type: "integer", minimum: 1, description: "Generated tokens, call blocks included" };

/** `POST /v1/chat/completions`. A parameter sent as null is absent (the parser drops nulls first). */
export const chatCompletionBodySchema: JsonSchema = {
  type: "object",
  description: "OpenAI chat completions; a parameter sent as null is taken as absent. Fields starting with interlace_ are Interlace's extensions.",
  properties: {
    ...sharedParameterProperties,
    messages: { type: "array", minItems: 1, items: messageSchema, "x-expected": "a non-empty array of messages" },
    tools: { type: "array", items: chatToolSchema },
    tool_choice: chatToolChoiceSchema,
    max_completion_tokens: maxTokensSchema,
    max_tokens: maxTokensSchema,
    seed: { type: "integer", minimum: 0, maximum: 0xffffffff },
    frequency_penalty: { type: "number", minimum: -2, maximum: 2 },
    presence_penalty: { type: "number", minimum: -2, maximum: 2 },
    stop: stopSchema,
    response_format: responseFormatSchema,
    stream_options: { type: "object", properties: { include_usage: { type: "boolean" }, include_obfuscation: { type: "boolean" } } },
    n: { type: "integer", minimum: 1, maximum: MAX_CHOICES },
    logprobs: { type: "boolean" },
    logit_bias: { type: "object", additionalProperties: { type: "number", minimum: -100, maximum: 100 } },
    store: { type: "boolean" },
    metadata: { type: "object", maxProperties: 16, additionalProperties: { type: "string", maxLength: 512 } },
    modalities: { type: "array", items: { enum: ["text", "audio"] } },
    audio: { type: "object" },
    prediction: { type: "object" },
    reasoning_effort: { enum: ["none", "minimal", "low", "medium", "high"] },
    verbosity: { enum: ["low", "medium", "high"] },
    web_search_options: { type: "object" },
    functions: { type: "array" },
    function_call: { anyOf: [{ enum: ["none", "auto"] }, { type: "object" }] },
    interlace_raw_cml: { type: "boolean", description: "Interlace: the completion as raw CML text, calls inline; generation stops at the trap" },
    interlace_continue: { type: "boolean", description: "Interlace: continue the last (assistant) message instead of opening a new one" },
    interlace_policy: { ...scriptedPolicySchema, description: "Interlace: a scripted policy instead of the model (tests, benchmarks)" },
  },
  required: ["messages"],
  additionalProperties: false,
};

/** A validated chat message. */
export interface ChatCompletionMessage {
  role: (typeof CHAT_COMPLETION_ROLES)[number];
  content?: string | null | { type: "text"; text: string }[];
  tool_calls?: { id: string; type?: "function"; function: { name: string; arguments?: string | Record<string, unknown> } }[] | null;
  tool_call_id?: string;
}

/** A validated chat-completions body (the fields the engine reads; refused ones are the parameter table's). */
export interface ChatCompletionBody {
  model?: string;
  messages: ChatCompletionMessage[];
  tools?: { type: "function"; function: { name: string; description?: string; parameters?: Record<string, unknown> | null; interlace_estimated_latency_ms?: number } }[];
  tool_choice?: (typeof TOOL_CHOICE_MODES)[number] | { type: "function"; function: { name: string } };
  parallel_tool_calls?: boolean;
  response_format?: ResponseFormatBody;
  stop?: string | string[];
  max_completion_tokens?: number;
  max_tokens?: number;
  temperature?: number;
  top_p?: number;
  seed?: number;
  frequency_penalty?: number;
  presence_penalty?: number;
  n?: number;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  logprobs?: boolean;
  top_logprobs?: number;
  interlace_raw_cml?: boolean;
  interlace_continue?: boolean;
  interlace_policy?: ScriptedPolicySpec;
}

export const validateChatCompletionBody = compileSchema<ChatCompletionBody>(chatCompletionBodySchema, "body", "request");

/** A chat role the engine's prompt renderer knows (`developer` is a system message). */
export function engineRole(role: ChatCompletionMessage["role"]): ChatMessage["role"] {
  return role === "developer" ? "system" : role;
}

/**
 * @module The JSON Schema of a `POST /v1/responses` body (OpenAI's Responses
 * API): every parameter OpenAI documents, with its type, bounds and enums
 * (each applied or refused by the engine: `openai-parameters.ts`, checked
 * against these properties by a test), input items (messages,
 * `function_call`, `function_call_output`), flat function tools, and
 * `interlace_policy`. The engine validates bodies with it through the one
 * validator; the OpenAPI document serves it as is.
 */
import type { ScriptedPolicySpec } from "../session.js";
import { TOOL_NAME_PATTERN, type JsonSchema } from "../tools.js";
import { sharedParameterProperties, SYSTEM_ROLES, TOOL_CHOICE_MODES, whenType } from "./openai-shared-schema.js";
import { callIdSchema, scriptedPolicySchema } from "./request-schemas.js";
import { formatSpecProperties, RESPONSE_FORMAT_TYPES } from "./response-format-schema.js";
import { compileSchema } from "./validator.js";

/** The input items the engine takes (OpenAI's others, e.g. `item_reference`, are a 400 naming them). */
export const INPUT_ITEM_TYPES = ["message", "function_call", "function_call_output"] as const;
/** Roles of an input message (a tool result is a `function_call_output` item). */
export const INPUT_MESSAGE_ROLES = [...SYSTEM_ROLES, "user", "assistant"] as const;
/** Content part types whose text the engine reads. */
export const INPUT_TEXT_PART_TYPES = ["input_text", "output_text", "text"] as const;

const textPartsSchema: JsonSchema = {
  type: "array",
  items: { type: "object", properties: { type: { enum: INPUT_TEXT_PART_TYPES }, text: { type: "string" } }, required: ["type", "text"] },
};
const textSchema: JsonSchema = { anyOf: [{ type: "string" }, textPartsSchema], "x-expected": "a string or an array of input_text parts" };

/** One input item; an item without `type` but with a `role` is a message (as the Agents SDK sends user input). */
const inputItemSchema: JsonSchema = {
  type: "object",
  properties: {
    type: { enum: INPUT_ITEM_TYPES },
    id: { type: "string" },
    status: { type: "string" },
    role: { enum: INPUT_MESSAGE_ROLES },
    content: textSchema,
    call_id: callIdSchema,
    name: { type: "string", minLength: 1 },
    arguments: { type: "string", description: "JSON text" },
    output: textSchema,
  },
  allOf: [
    // No `type` passes this `if` too: such an item is a message.
    { if: { properties: { type: { const: "message" } } }, then: { required: ["role", "content"] } },
    whenType("function_call", { required: ["call_id", "name"] }),
    whenType("function_call_output", { required: ["call_id", "output"] }),
  ],
};

/** A flat function tool (`{type, name, description, parameters, strict}`). */
const functionToolSchema: JsonSchema = {
  type: "object",
  properties: {
    type: { const: "function" },
    name: { type: "string", pattern: TOOL_NAME_PATTERN.source },
    description: { type: ["string", "null"] },
    parameters: { type: ["object", "null"] },
    strict: { type: ["boolean", "null"] },
  },
  required: ["type", "name"],
  "x-expected": 'a function tool: only {"type": "function", "name", "description", "parameters"} tools are supported',
};

/** A Responses `tool_choice`: a mode, or one function by name. */
export const responsesToolChoiceSchema: JsonSchema = {
  anyOf: [{ enum: TOOL_CHOICE_MODES }, { type: "object", properties: { type: { const: "function" }, name: { type: "string", minLength: 1 } }, required: ["type", "name"] }],
  "x-expected": `${TOOL_CHOICE_MODES.map((m) => JSON.stringify(m)).join(", ")} or {"type": "function", "name"}`,
};

/** `text.format`: as chat's `response_format`, the `json_schema` fields beside `type`. */
export const textFormatSchema: JsonSchema = {
  type: "object",
  properties: { type: { enum: RESPONSE_FORMAT_TYPES }, ...formatSpecProperties },
  required: ["type"],
  allOf: [whenType("json_schema", { required: ["name", "schema"] })],
};

const positiveInteger: JsonSchema = { type: "integer", minimum: 1 };

/** `POST /v1/responses`. A parameter sent as null is absent (the parser drops nulls first). */
export const responsesBodySchema: JsonSchema = {
  type: "object",
  description: "OpenAI Responses; a parameter sent as null is taken as absent. interlace_policy is Interlace's extension.",
  properties: {
    ...sharedParameterProperties,
    input: {
      anyOf: [{ type: "string", minLength: 1 }, { type: "array", minItems: 1, items: inputItemSchema }],
      "x-expected": "a non-empty string or a non-empty array of input items",
    },
    instructions: { type: "string", description: "The system message" },
    tools: { type: "array", items: functionToolSchema },
    tool_choice: responsesToolChoiceSchema,
    max_output_tokens: { ...positiveInteger, description: "Generated tokens, call blocks included" },
    max_tool_calls: { ...positiveInteger, description: "The turn ends at that many calls" },
    previous_response_id: { type: "string", minLength: 1 },
    store: { type: "boolean" },
    metadata: { type: "object", maxProperties: 16, additionalProperties: { type: "string", maxLength: 512 } },
    // `text.verbosity` is not applied: only `format` may be set.
    text: { type: "object", properties: { format: { anyOf: [textFormatSchema, { type: "null" }] } }, additionalProperties: { type: "null", "x-expected": 'null: only "text.format" is supported' } },
    truncation: { enum: ["auto", "disabled"] },
    include: { type: "array", items: { type: "string" } },
    reasoning: { type: "object" },
    stream_options: { type: "object" },
    background: { type: "boolean" },
    conversation: { anyOf: [{ type: "string" }, { type: "object" }] },
    prompt: { type: "object" },
    interlace_policy: { ...scriptedPolicySchema, description: "Interlace: a scripted policy instead of the model (tests, benchmarks)" },
  },
  required: ["input"],
  additionalProperties: false,
};

/** A validated input item. */
export interface InputItem {
  type?: (typeof INPUT_ITEM_TYPES)[number];
  role?: (typeof INPUT_MESSAGE_ROLES)[number];
  content?: string | { type: string; text: string }[];
  call_id?: string;
  name?: string;
  arguments?: string;
  output?: string | { type: string; text: string }[];
  [key: string]: unknown;
}

/** A validated `text.format`. */
export interface TextFormat {
  type: (typeof RESPONSE_FORMAT_TYPES)[number];
  name?: string;
  schema?: Record<string, unknown>;
}

/** A validated Responses body (the fields the engine reads; refused ones are the parameter table's). */
export interface ResponsesBody {
  model?: string;
  input: string | InputItem[];
  instructions?: string;
  tools?: { type: "function"; name: string; description?: string | null; parameters?: Record<string, unknown> | null }[];
  tool_choice?: (typeof TOOL_CHOICE_MODES)[number] | { type: "function"; name: string };
  parallel_tool_calls?: boolean;
  max_output_tokens?: number;
  max_tool_calls?: number;
  previous_response_id?: string;
  temperature?: number;
  top_p?: number;
  store?: boolean;
  stream?: boolean;
  metadata?: Record<string, string>;
  text?: { format?: TextFormat | null };
  include?: string[];
  top_logprobs?: number;
  interlace_policy?: ScriptedPolicySpec;
}

export const validateResponsesBody = compileSchema<ResponsesBody>(responsesBodySchema, "body", "request");

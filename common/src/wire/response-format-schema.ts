/**
 * @module The answer format of structured outputs as JSON Schema: OpenAI's
 * `response_format` (chat completions; the sessions API's `responseFormat`
 * takes the same shape) and the fields Responses' `text.format` shares with
 * it. Imports no other request schema, so any of them may use it.
 */
import type { JsonSchema } from "../tools.js";
import { whenType } from "./openai-shared-schema.js";

/** `response_format.type` / `text.format.type`. */
export const RESPONSE_FORMAT_TYPES = ["text", "json_object", "json_schema"] as const;
/** An answer format's `name` (OpenAI's rule). */
export const FORMAT_NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** The `json_schema` format's fields (under `json_schema` in chat completions, beside `type` in Responses). */
export const formatSpecProperties = {
  name: { type: "string", pattern: FORMAT_NAME_PATTERN.source, "x-expected": "1 to 64 letters, digits, _ or -" },
  description: { type: "string" },
  // Local `$ref`s in it are resolved by the engine's parser.
  schema: { type: "object", "x-expected": "a JSON Schema object" },
  strict: { type: ["boolean", "null"] },
} as const satisfies Record<string, JsonSchema>;

/**
 * OpenAI's `response_format`: `{type: "text"}`, `{type: "json_object"}`, or
 * `{type: "json_schema", json_schema: {name, schema, strict?, description?}}`.
 */
export const responseFormatSchema: JsonSchema = {
  type: "object",
  properties: {
    type: { enum: RESPONSE_FORMAT_TYPES },
    json_schema: { type: "object", properties: formatSpecProperties, required: ["name", "schema"] },
  },
  required: ["type"],
  // The schema goes with `json_schema` and only there: never ignored under another type.
  allOf: [whenType("json_schema", { required: ["json_schema"] }), whenType("text", { properties: { json_schema: false } }), whenType("json_object", { properties: { json_schema: false } })],
};

/** A validated `response_format`. */
export interface ResponseFormatBody {
  type: (typeof RESPONSE_FORMAT_TYPES)[number];
  json_schema?: { name: string; schema: Record<string, unknown>; strict?: boolean | null; description?: string };
}

/**
 * @module The JSON Schema of a `cache-tool-output` body (the
 * speculative-tool-calls paper's API shape): one `{name, params?, output,
 * keep_alive?}` entry or an array of them. The engine validates each entry
 * with it through the one validator; the OpenAPI document serves it as is.
 */
import { TOOL_NAME_PATTERN, type JsonSchema } from "../tools.js";
import { compileSchema } from "./validator.js";

/** The most entries one request may carry. */
export const MAX_CACHE_TOOL_OUTPUT_ENTRIES = 64;

export const cacheToolOutputEntrySchema: JsonSchema = {
  type: "object",
  properties: {
    name: { type: "string", pattern: TOOL_NAME_PATTERN.source, "x-expected": `a tool name matching ${TOOL_NAME_PATTERN.source}` },
    params: { type: "object", "x-expected": "an object of arguments", description: "The call's arguments (canonicalized as the cache key); absent: the output answers any call of the tool" },
    output: { description: "Any JSON; a string is kept as it is" },
    keep_alive: { type: "number", exclusiveMinimum: 0, description: "Seconds (capped by the cache's TTL)" },
  },
  required: ["name", "output"],
  additionalProperties: false,
};

/** One entry, or an array of 1 to 64. */
export const cacheToolOutputBodySchema: JsonSchema = {
  anyOf: [cacheToolOutputEntrySchema, { type: "array", items: cacheToolOutputEntrySchema, minItems: 1, maxItems: MAX_CACHE_TOOL_OUTPUT_ENTRIES }],
};

/** A validated entry. */
export interface CacheToolOutputEntryBody {
  name: string;
  params?: Record<string, unknown>;
  output: unknown;
  keep_alive?: number;
}

export const validateCacheToolOutputEntry = compileSchema<CacheToolOutputEntryBody>(cacheToolOutputEntrySchema, "the entry", "request");

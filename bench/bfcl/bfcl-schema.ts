/**
 * @module BFCL parameter schemas → JSON Schema. BFCL uses its own type names
 * (`dict`, `float`, `tuple`, `any`) inside otherwise JSON-Schema-like objects;
 * the engine's validator and grammar need standard JSON Schema.
 */
import type { JsonSchema } from "../../common/src/index.js";

const TYPE_MAP: Record<string, string | undefined> = {
  dict: "object",
  object: "object",
  float: "number",
  number: "number",
  integer: "integer",
  int: "integer",
  string: "string",
  str: "string",
  boolean: "boolean",
  bool: "boolean",
  array: "array",
  list: "array",
  tuple: "array",
  any: undefined,
};

/** Keys of a BFCL schema node that carry meaning in JSON Schema too. */
const KEPT_KEYS = ["description", "enum", "default", "required", "minimum", "maximum", "format"] as const;

export function bfclToJsonSchema(node: unknown): JsonSchema {
  if (typeof node !== "object" || node === null || Array.isArray(node)) return {};
  const src = node as Record<string, unknown>;
  const out: JsonSchema = {};
  const bfclType = typeof src["type"] === "string" ? (src["type"] as string) : undefined;
  if (bfclType !== undefined) {
    if (!(bfclType in TYPE_MAP)) throw new Error(`unknown BFCL parameter type "${bfclType}"`);
    const mapped = TYPE_MAP[bfclType];
    if (mapped !== undefined) out["type"] = mapped;
  }
  for (const key of KEPT_KEYS) if (src[key] !== undefined) out[key] = src[key];
  // BFCL marks some defaults as the string "None"; JSON Schema has no use for them.
  if (out["default"] === "None") delete out["default"];
  if (typeof src["properties"] === "object" && src["properties"] !== null) {
    const props: Record<string, JsonSchema> = {};
    for (const [name, child] of Object.entries(src["properties"] as Record<string, unknown>)) props[name] = bfclToJsonSchema(child);
    out["properties"] = props;
    out["type"] ??= "object";
  }
  if (src["items"] !== undefined) out["items"] = bfclToJsonSchema(src["items"]);
  // Optional parameters are often typed loosely in BFCL (an int documented as
  // float); accepting integers where numbers are expected is JSON Schema already.
  return out;
}

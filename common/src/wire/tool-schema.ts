/**
 * @module Tool-schema normalisation shared by validation and the call
 * grammar: maps the Python-flavoured type names found in function-calling
 * datasets (BFCL's `dict`, `float`, `tuple`, `any`) onto JSON Schema, so both
 * see the same schema.
 */
import type { JsonSchema } from "../tools.js";

const TYPE_ALIASES: Record<string, string | undefined> = {
  dict: "object",
  float: "number",
  double: "number",
  int: "integer",
  long: "integer",
  tuple: "array",
  list: "array",
  str: "string",
  bool: "boolean",
  NoneType: "null",
};

const cache = new WeakMap<object, JsonSchema>();

/** A dataset type name as its JSON Schema type (`dict` → `object`); JSON Schema names pass through. */
export function resolveTypeAlias(name: string): string {
  return TYPE_ALIASES[name] ?? name;
}

function normalizeType(t: unknown): unknown {
  if (typeof t === "string") return resolveTypeAlias(t);
  if (Array.isArray(t)) return t.map(normalizeType);
  return t;
}

/** Object properties in schema order (the order positional Python arguments map onto). */
export function propertyOrder(schema: JsonSchema): string[] {
  const props = schema["properties"];
  return props !== null && typeof props === "object" ? Object.keys(props) : [];
}

/**
 * A JSON Schema equivalent of `schema` with dataset type aliases resolved and
 * `type: "any"` dropped (any value). Memoised per schema object.
 */
export function normalizeSchema(schema: JsonSchema): JsonSchema {
  const hit = cache.get(schema);
  if (hit !== undefined) return hit;
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === "type") {
      if (value === "any") continue;
      out[key] = normalizeType(value);
    } else if (key === "properties" && value !== null && typeof value === "object") {
      out[key] = Object.fromEntries(
        Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, isSchema(v) ? normalizeSchema(v) : v]),
      );
    } else if ((key === "items" || key === "additionalProperties" || key === "not") && isSchema(value)) {
      out[key] = normalizeSchema(value);
    } else if ((key === "anyOf" || key === "oneOf" || key === "allOf" || key === "prefixItems") && Array.isArray(value)) {
      out[key] = value.map((v) => (isSchema(v) ? normalizeSchema(v) : v));
    } else {
      out[key] = value;
    }
  }
  // BFCL writes `"type": "dict"` with `required` naming absent properties at times: keep as is (Ajv reports it).
  cache.set(schema, out);
  return out;
}

function isSchema(v: unknown): v is JsonSchema {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/**
 * @module BFCL parameter schemas → JSON Schema. BFCL uses its own type names
 * (`dict`, `float`, `tuple`, `any`) inside otherwise JSON-Schema-like objects;
 * the names resolve through the CML module's alias table (the one the engine's
 * validator and grammar use), and a name that resolves to no JSON Schema type
 * is an error here rather than passed through.
 */
import type { JsonSchema } from "../../common/src/index.js";
import { resolveTypeAlias } from "../../engine-pod/src/cml/index.js";

/** JSON Schema's types: what a BFCL type must resolve to (anything else is rejected, not guessed). */
const JSON_TYPES = new Set(["object", "number", "integer", "string", "boolean", "array", "null"]);

/** Keys of a BFCL schema node that carry meaning in JSON Schema too. */
const KEPT_KEYS = ["description", "enum", "default", "required", "minimum", "maximum", "format"] as const;

export function bfclToJsonSchema(node: unknown): JsonSchema {
  if (typeof node !== "object" || node === null || Array.isArray(node)) return {};
  const src = node as Record<string, unknown>;
  const out: JsonSchema = {};
  const bfclType = typeof src["type"] === "string" ? (src["type"] as string) : undefined;
  // `any` means any value: no type at all.
  if (bfclType !== undefined && bfclType !== "any") {
    const mapped = resolveTypeAlias(bfclType);
    if (!JSON_TYPES.has(mapped)) throw new Error(`unknown BFCL parameter type "${bfclType}"`);
    out["type"] = mapped;
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

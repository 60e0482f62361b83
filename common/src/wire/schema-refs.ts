/**
 * @module Local `$ref`s of a JSON Schema inlined (`#/$defs/X`,
 * `#/definitions/X`, as pydantic and zod write nested models), so a grammar
 * builder sees one finite tree: the structured-output formats of chat
 * completions, Responses and sessions all go through it.
 */
import type { JsonSchema } from "../tools.js";
import type { Validated } from "./validator.js";

/** Deepest chain of `$ref`s followed: a recursive schema has no finite grammar. */
const MAX_REF_DEPTH = 16;

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

/**
 * The schema with its local `$ref`s replaced by what they name; an error
 * naming `where` for a reference elsewhere or a recursive one.
 */
export function inlineLocalRefs(schema: Record<string, unknown>, where: string): Validated<JsonSchema> {
  const defs = { ...(isObject(schema["definitions"]) ? schema["definitions"] : {}), ...(isObject(schema["$defs"]) ? schema["$defs"] : {}) };
  const walk = (node: unknown, depth: number): unknown => {
    if (Array.isArray(node)) return node.map((x) => walk(x, depth));
    if (!isObject(node)) return node;
    const ref = node["$ref"];
    if (typeof ref === "string") {
      const m = /^#\/(?:\$defs|definitions)\/([^/]+)$/.exec(ref);
      const target = m !== null ? defs[m[1]!] : undefined;
      if (target === undefined) throw new RefError(`"${where}": "$ref" ${ref} does not name one of the schema's own $defs`);
      if (depth >= MAX_REF_DEPTH) throw new RefError(`"${where}": "$ref" ${ref} is recursive; a grammar needs a finite schema`);
      const { $ref: _, ...rest } = node;
      return walk({ ...(target as Record<string, unknown>), ...rest }, depth + 1);
    }
    return Object.fromEntries(Object.entries(node).filter(([k]) => k !== "$defs" && k !== "definitions").map(([k, v]) => [k, walk(v, depth)]));
  };
  try {
    return { ok: true, value: walk(schema, 0) as JsonSchema };
  } catch (err) {
    if (err instanceof RefError) return { ok: false, error: err.message };
    throw err;
  }
}

/** Unwinds the walk at the first bad reference. */
class RefError extends Error {
  override readonly name = "RefError";
}

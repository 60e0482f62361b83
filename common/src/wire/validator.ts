/**
 * @module The one JSON Schema validator of the project (one Ajv instance,
 * draft 2020-12 with formats) behind every boundary: HTTP request bodies,
 * NATS messages, the tool runner's spec file and call arguments against a
 * tool's parameters schema, in the engine and in the runner alike. Results
 * are values: the typed value, or one readable line saying what is wrong.
 */
import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import type { JsonSchema } from "../tools.js";
import { normalizeSchema } from "./tool-schema.js";

// ajv-formats is CommonJS with `exports.default`; under nodenext the default import is the module object.
type FormatsPlugin = (ajv: Ajv2020) => unknown;
const addFormats = ((addFormatsModule as unknown as { default?: FormatsPlugin }).default ?? addFormatsModule) as FormatsPlugin;

// `verbose`: errors carry the failing value and its schema node, which request messages quote.
const ajv = new Ajv2020({ allErrors: true, strict: false, validateFormats: true, verbose: true });
addFormats(ajv);

export type Validated<T> = { ok: true; value: T } | { ok: false; error: string };

/** `/a/b/0` → `"a.b[0]"`; the empty path is `root` itself. */
function pathOf(instancePath: string, root: string): string {
  if (instancePath === "") return root;
  const parts = instancePath.slice(1).split("/").map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"));
  let out = "";
  for (const p of parts) out += /^\d+$/.test(p) ? `[${p}]` : out === "" ? p : `.${p}`;
  return `"${out}"`;
}

/**
 * The annotation a schema node may carry to say, in words, what its value
 * must be (`"x-expected": "a non-empty array of messages"`): every error about
 * that value itself (not about its parts) reads `"<path>" must be <words>`.
 * OpenAPI 3.1 keeps `x-` keys as extensions.
 */
export const EXPECTED = "x-expected";

/**
 * How error lines are written. `plain`: Ajv's wording (tool arguments, NATS
 * messages: the model and the runner read these). `request`: for HTTP
 * clients — bounds as ranges (`"n" must be an integer in 1..8`), a missing
 * field as `"input" is required`, and the value sent after an enum or const
 * mismatch (`…, got "turbo"`).
 */
export type ErrorStyle = "plain" | "request";

const RANGE_KEYWORDS = new Set(["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]);

/** `a number in (0, 1]`, `an integer in 1..8`, `a number > 0`: a numeric node's bounds in words. */
export function rangeText(schema: Record<string, unknown>): string {
  const kind = schema["type"] === "integer" ? "an integer" : "a number";
  const num = (k: string): number | undefined => (typeof schema[k] === "number" ? (schema[k] as number) : undefined);
  const lo = num("minimum") ?? num("exclusiveMinimum");
  const hi = num("maximum") ?? num("exclusiveMaximum");
  const loOpen = num("minimum") === undefined && lo !== undefined;
  const hiOpen = num("maximum") === undefined && hi !== undefined;
  if (lo !== undefined && hi !== undefined) return !loOpen && !hiOpen ? `${kind} in ${lo}..${hi}` : `${kind} in ${loOpen ? "(" : "["}${lo}, ${hi}${hiOpen ? ")" : "]"}`;
  if (lo !== undefined) return `${kind} ${loOpen ? ">" : ">="} ${lo}`;
  if (hi !== undefined) return `${kind} ${hiOpen ? "<" : "<="} ${hi}`;
  return kind;
}

const isNode = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

/**
 * Ajv errors as one line, e.g. `"mode" must be one of "async", "sync";
 * arguments must have required property 'b'`. Unknown properties read as
 * `unknown field "x"`; the summary line of a failed `anyOf`/`oneOf` is left out
 * when its branches said more; a node with an {@link EXPECTED} annotation
 * says its own words for every error about its value.
 */
export function describeErrors(errors: readonly ErrorObject[] | null | undefined, root: string, style: ErrorStyle = "plain"): string {
  if (!errors || errors.length === 0) return `${root} does not match the schema`;
  // Values whose schema node says in words what it expects (the node holding an anyOf reports there too).
  const expected = new Map<string, string>();
  for (const e of errors) {
    const words = isNode(e.parentSchema) ? e.parentSchema[EXPECTED] : undefined;
    if (typeof words === "string" && !expected.has(e.instancePath)) expected.set(e.instancePath, words);
  }
  const detailed = errors.filter((e) => e.keyword !== "anyOf" && e.keyword !== "oneOf" && e.keyword !== "if");
  const lines = (detailed.length > 0 ? detailed : errors).map((e) => {
    const where = pathOf(e.instancePath, root);
    const words = expected.get(e.instancePath);
    if (words !== undefined && e.keyword !== "additionalProperties") return `${where} must be ${words}`;
    if (e.keyword === "additionalProperties") {
      const field = (e.params as { additionalProperty: string }).additionalProperty;
      return `${where === root ? "" : `${where}: `}unknown field "${field}"`;
    }
    const got = style === "request" && (e.data === null || typeof e.data !== "object") ? `, got ${JSON.stringify(e.data)}` : "";
    if (e.keyword === "enum") {
      return `${where} must be one of ${(e.params as { allowedValues: unknown[] }).allowedValues.map((x) => JSON.stringify(x)).join(", ")}${got}`;
    }
    if (e.keyword === "false schema") return `${where} is not allowed here`;
    if (e.keyword === "const") return `${where} must be ${JSON.stringify((e.params as { allowedValue: unknown }).allowedValue)}${got}`;
    if (style === "request") {
      if (e.keyword === "required") return `${pathOf(`${e.instancePath}/${(e.params as { missingProperty: string }).missingProperty}`, root)} is required`;
      if (RANGE_KEYWORDS.has(e.keyword) && isNode(e.parentSchema)) return `${where} must be ${rangeText(e.parentSchema)}`;
    }
    return `${where} ${e.message ?? "is invalid"}`;
  });
  return [...new Set(lines)].join("; ");
}

/** JSON text (or UTF-8 bytes) → a value, or the parser's complaint. */
export function parseJson(data: Uint8Array | string): Validated<unknown> {
  try {
    return { ok: true, value: JSON.parse(typeof data === "string" ? data : Buffer.from(data).toString("utf8")) };
  } catch (err) {
    return { ok: false, error: `body is not valid JSON: ${(err as Error).message}` };
  }
}

function check<T>(validate: ValidateFunction, value: unknown, root: string, style: ErrorStyle = "plain"): Validated<T> {
  if (validate(value)) return { ok: true, value: value as T };
  return { ok: false, error: describeErrors(validate.errors, root, style) };
}

/** Compiles a schema once for repeated use; `root` names the value in error lines, `style` how they read. */
export function compileSchema<T>(schema: JsonSchema, root: string, style: ErrorStyle = "plain"): (value: unknown) => Validated<T> {
  const validate = ajv.compile(schema);
  return (value) => check<T>(validate, value, root, style);
}

/** Null when `schema` (dataset type names resolved) compiles, else the compiler's complaint. */
export function schemaError(schema: JsonSchema): string | null {
  try {
    ajv.compile(normalizeSchema(schema));
    return null;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

/** Compiled argument validators, once per parameters schema object. */
const argValidators = new WeakMap<object, ValidateFunction | string>();

/**
 * Validates call arguments against a tool's parameters schema (dataset type
 * names resolved); a broken schema is reported as such, not blamed on the call.
 */
export function validateArguments(parameters: JsonSchema, args: unknown, tool: string): Validated<Record<string, unknown>> {
  let v = argValidators.get(parameters);
  if (v === undefined) {
    try {
      v = ajv.compile(normalizeSchema(parameters));
    } catch (err) {
      v = `tool "${tool}" has an invalid parameters schema: ${(err as Error).message}`;
    }
    argValidators.set(parameters, v);
  }
  if (typeof v === "string") return { ok: false, error: v };
  return check<Record<string, unknown>>(v, args, "arguments");
}

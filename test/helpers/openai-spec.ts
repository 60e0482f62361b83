/**
 * @module OpenAI's published OpenAPI schemas (the vendored subset in
 * `test/fixtures/openai-openapi/`) as validators: a chat completion, a chat
 * chunk, a Response, a Responses stream event, an input-item list, the
 * delete answer and the error body. The OpenAPI document is read into JSON
 * Schema 2020-12 here, saying what the spec says and nothing more: `nullable`
 * adds null to what the schema allows, a `discriminator` picks the branch its
 * property names (so an error names that branch's missing field rather than
 * every branch's), `$recursiveRef` is the component it sits in, `x-*`
 * extensions and examples are annotations and go. Unknown properties are
 * refused only where the spec sets `additionalProperties: false`.
 */
import { readFileSync } from "node:fs";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { describeErrors } from "../../common/src/wire/validator.js";

type FormatsPlugin = (ajv: Ajv2020) => unknown;
const addFormats = ((addFormatsModule as unknown as { default?: FormatsPlugin }).default ?? addFormatsModule) as FormatsPlugin;

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

interface SpecSubset {
  source: { repository: string; commit: string; file: string; openapi: string; version: string };
  examples: { deleteResponse: JsonObject };
  components: { schemas: Record<string, Json> };
}

/** The vendored subset, as extracted by `hack/extract-openai-schemas.ts`. */
export const SPEC = JSON.parse(readFileSync(new URL("../fixtures/openai-openapi/schemas.json", import.meta.url), "utf8")) as SpecSubset;

/** What Interlace answers with, by the spec's schema names (`DeleteResponse`: the spec's documented example, see {@link deleteResponseSchema}). */
export const SPEC_SCHEMAS = [
  "CreateChatCompletionResponse",
  "CreateChatCompletionStreamResponse",
  "Response",
  "ResponseStreamEvent",
  "ResponseItemList",
  "DeleteResponse",
  "ErrorResponse",
] as const;
export type SpecSchemaName = (typeof SPEC_SCHEMAS)[number];

const COMPONENT_REF = "#/components/schemas/";
const ID = "https://interlace.test/openai-openapi.json";

function isObject(value: Json | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Keywords whose values are schemas, one or a list of them, or a name → schema map. */
const SCHEMA_VALUED = new Set(["items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames", "unevaluatedProperties", "unevaluatedItems"]);
const SCHEMA_LISTS = new Set(["anyOf", "oneOf", "allOf", "prefixItems"]);
const SCHEMA_MAPS = new Set(["properties", "patternProperties", "$defs", "dependentSchemas"]);
/** OpenAPI annotations with no say in validation (examples are data, not schemas). */
const DROPPED = new Set(["nullable", "discriminator", "example", "examples", "$recursiveAnchor"]);

/** The values a discriminated branch gives its `property`, or null when the spec does not pin them. */
function discriminatorValues(branch: Json, property: string, seen = new Set<string>()): Json[] | null {
  if (!isObject(branch)) return null;
  const ref = branch["$ref"];
  if (typeof ref === "string" && ref.startsWith(COMPONENT_REF)) {
    const name = ref.slice(COMPONENT_REF.length);
    if (seen.has(name)) return null;
    return discriminatorValues(SPEC.components.schemas[name] ?? null, property, new Set([...seen, name]));
  }
  const own = isObject(branch["properties"]) ? branch["properties"][property] : undefined;
  if (isObject(own)) {
    if (Array.isArray(own["enum"])) return own["enum"];
    if (own["const"] !== undefined) return [own["const"]];
  }
  for (const keyword of ["allOf", "anyOf", "oneOf"]) {
    const list = branch[keyword];
    if (!Array.isArray(list)) continue;
    const values = list.map((b) => discriminatorValues(b, property, seen));
    if (keyword === "allOf") {
      const pinned = values.find((v) => v !== null);
      if (pinned !== undefined) return pinned;
    } else if (values.every((v) => v !== null)) return values.flat();
  }
  return null;
}

/**
 * `anyOf`/`oneOf` with a discriminator → the branch (or branches) whose
 * property value the instance has; the value must be one the branches name.
 * Null when a branch does not pin its value (the list is then kept as the spec has it).
 */
function discriminated(list: Json[], property: string, component: string): JsonObject | null {
  const byValue = new Map<string, Json[]>();
  for (const branch of list) {
    const values = discriminatorValues(branch, property);
    if (values === null) return null;
    for (const v of values) byValue.set(JSON.stringify(v), [...(byValue.get(JSON.stringify(v)) ?? []), toJsonSchema(branch, component)]);
  }
  return {
    type: "object",
    required: [property],
    properties: { [property]: { enum: [...byValue.keys()].map((v) => JSON.parse(v) as Json) } },
    allOf: [...byValue].map(([v, branches]) => ({
      if: { properties: { [property]: { const: JSON.parse(v) as Json } }, required: [property] },
      then: branches.length === 1 ? branches[0]! : { anyOf: branches },
    })),
  };
}

/** One OpenAPI 3.1 schema (inside component `component`) as JSON Schema 2020-12. */
export function toJsonSchema(schema: Json, component: string): Json {
  if (!isObject(schema)) return schema;
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(schema)) {
    if (DROPPED.has(key) || key.startsWith("x-")) continue;
    if (key === "$ref" && typeof value === "string") out[key] = value.startsWith(COMPONENT_REF) ? `${ID}#/$defs/${value.slice(COMPONENT_REF.length)}` : value;
    else if (key === "$recursiveRef") out["$ref"] = `${ID}#/$defs/${component}`;
    else if (SCHEMA_VALUED.has(key)) out[key] = toJsonSchema(value, component);
    else if (SCHEMA_LISTS.has(key) && Array.isArray(value)) out[key] = value.map((s) => toJsonSchema(s, component));
    else if (SCHEMA_MAPS.has(key) && isObject(value)) out[key] = Object.fromEntries(Object.entries(value).map(([k, s]) => [k, toJsonSchema(s, component)]));
    else out[key] = value;
  }
  const discriminator = schema["discriminator"];
  if (isObject(discriminator) && typeof discriminator["propertyName"] === "string") {
    for (const keyword of ["oneOf", "anyOf"]) {
      const list = schema[keyword];
      if (!Array.isArray(list)) continue;
      const picked = discriminated(list, discriminator["propertyName"], component);
      if (picked === null) continue;
      delete out[keyword];
      if (out["allOf"] !== undefined) picked["allOf"] = [...(picked["allOf"] as Json[]), ...(out["allOf"] as Json[])];
      Object.assign(out, picked);
    }
  }
  return schema["nullable"] === true ? { anyOf: [out, { type: "null" }] } : out;
}

/**
 * The answer of `DELETE /responses/{id}`: the spec gives its 200 no schema,
 * only an example (`{"id", "object": "response", "deleted": true}`). Read as
 * a schema: those fields, required, with the example's types, `object` and
 * `deleted` with the example's values.
 */
export function deleteResponseSchema(example: JsonObject): JsonObject {
  const properties = Object.fromEntries(
    Object.entries(example).map(([key, value]) => [key, key === "id" ? { type: "string" } : { const: value }]),
  );
  return { type: "object", required: Object.keys(example), properties };
}

/** Integer-valued formats of OpenAI's spec; `uri` and the rest come from ajv-formats. */
function addSpecFormats(ajv: Ajv2020): void {
  ajv.addFormat("unixtime", { type: "number", validate: (n: number) => Number.isInteger(n) && n >= 0 });
  ajv.addFormat("float", { type: "number", validate: () => true });
}

function compileAll(): Record<SpecSchemaName, ValidateFunction> {
  const ajv = new Ajv2020({ allErrors: true, strict: false, validateFormats: true });
  addFormats(ajv);
  addSpecFormats(ajv);
  const defs = Object.fromEntries(Object.entries(SPEC.components.schemas).map(([name, s]) => [name, toJsonSchema(s, name)]));
  defs["DeleteResponse"] = deleteResponseSchema(SPEC.examples.deleteResponse);
  ajv.addSchema({ $id: ID, $defs: defs });
  return Object.fromEntries(SPEC_SCHEMAS.map((name) => [name, ajv.compile({ $ref: `${ID}#/$defs/${name}` })])) as Record<SpecSchemaName, ValidateFunction>;
}

let compiled: Record<SpecSchemaName, ValidateFunction> | undefined;

/** Null when `value` is what the spec's `schema` describes, else what is wrong, each error with its JSON path. */
export function specViolation(schema: SpecSchemaName, value: unknown): string | null {
  compiled ??= compileAll();
  const validate = compiled[schema];
  return validate(value) ? null : describeErrors(validate.errors, schema);
}

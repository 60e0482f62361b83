/**
 * @module BFCL's AST scoring of single-turn function calls, as a pure
 * function (upstream's `ast_checker`): the model's calls are right when
 * their number equals the possible answer's, and each possible call is
 * matched (greedily, in answer order, to the first unmatched model call that
 * passes, as upstream does: any order for parallel categories) by a call with
 * the same function name whose arguments
 * - include every parameter the function requires,
 * - name only parameters the function has and the answer lists,
 * - have the parameter's type (an integer is accepted where a number is),
 * - take one of the answer's allowed values (strings compared after
 *   upstream's normalisation: lowercase, without spaces and `,./-_*^`),
 * - and leave out only parameters whose allowed values include `""`.
 */
import type { JsonSchema, ToolSpec } from "../../common/src/index.js";

export interface ModelCall {
  tool: string;
  arguments: Record<string, unknown>;
}

/** One ground-truth call: each parameter's allowed values (`""` among them: may be omitted). */
export interface PossibleCall {
  tool: string;
  params: Record<string, readonly unknown[]>;
}

export type ScoreErrorKind =
  | "wrong_count"
  | "wrong_function"
  | "missing_required"
  | "unexpected_parameter"
  | "type_error"
  | "value_error"
  | "missing_optional";

export type Score = { valid: true } | { valid: false; kind: ScoreErrorKind; message: string };

const ok: Score = { valid: true };
const fail = (kind: ScoreErrorKind, message: string): Score => ({ valid: false, kind, message });

/** Upstream's `standardize_string`. */
export function normalizeString(s: string): string {
  return s.replace(/[ ,./\-_*^]/g, "").toLowerCase().replace(/'/g, '"');
}

function typeOk(value: unknown, schema: JsonSchema | undefined): boolean {
  const type = schema?.["type"];
  switch (type) {
    case undefined:
      return true;
    case "string":
      return typeof value === "string";
    case "integer":
      return typeof value === "number" && Number.isInteger(value);
    case "number":
      return typeof value === "number";
    case "boolean":
      return typeof value === "boolean";
    case "array": {
      if (!Array.isArray(value)) return false;
      const items = schema?.["items"] as JsonSchema | undefined;
      return value.every((v) => typeOk(v, items));
    }
    case "object":
      return value !== null && typeof value === "object" && !Array.isArray(value);
    default:
      return true;
  }
}

/** Whether `value` equals an allowed value `want` (strings normalised, lists in order, dicts key by key). */
export function valueMatches(value: unknown, want: unknown): boolean {
  if (typeof value === "string" && typeof want === "string") return normalizeString(value) === normalizeString(want);
  if (typeof value === "number" && typeof want === "number") return value === want;
  if (Array.isArray(value) && Array.isArray(want)) return value.length === want.length && value.every((v, i) => valueMatches(v, want[i]));
  if (isDict(value) && isDict(want)) {
    // Upstream's dict answers list allowed values per key; a plain value means itself.
    for (const [k, v] of Object.entries(value)) {
      if (!(k in want)) return false;
      const allowed = Array.isArray(want[k]) ? (want[k] as unknown[]) : [want[k]];
      if (!allowed.some((a) => valueMatches(v, a))) return false;
    }
    for (const [k, allowed] of Object.entries(want)) {
      if (k in value) continue;
      const list = Array.isArray(allowed) ? allowed : [allowed];
      if (!list.includes("")) return false;
    }
    return true;
  }
  return value === want;
}

function isDict(x: unknown): x is Record<string, unknown> {
  return x !== null && typeof x === "object" && !Array.isArray(x);
}

/** One model call against one possible call (upstream's `simple_function_checker`). */
export function scoreCall(tool: ToolSpec | undefined, call: ModelCall, answer: PossibleCall): Score {
  if (call.tool !== answer.tool) return fail("wrong_function", `called ${call.tool}, expected ${answer.tool}`);
  const props = (tool?.parameters["properties"] ?? {}) as Record<string, JsonSchema>;
  const required = (tool?.parameters["required"] ?? []) as string[];
  for (const name of required) if (!(name in call.arguments)) return fail("missing_required", `${call.tool}: missing required parameter ${name}`);
  for (const [name, value] of Object.entries(call.arguments)) {
    if (tool !== undefined && !(name in props)) return fail("unexpected_parameter", `${call.tool}: unknown parameter ${name}`);
    const allowed = answer.params[name];
    if (allowed === undefined) return fail("unexpected_parameter", `${call.tool}: parameter ${name} is not in the answer`);
    if (!typeOk(value, props[name])) return fail("type_error", `${call.tool}: ${name}=${JSON.stringify(value)} is not of type ${String(props[name]?.["type"])}`);
    if (!allowed.some((a) => a !== "" && valueMatches(value, a))) {
      return fail("value_error", `${call.tool}: ${name}=${JSON.stringify(value)}, allowed ${JSON.stringify(allowed.filter((a) => a !== ""))}`);
    }
  }
  for (const [name, allowed] of Object.entries(answer.params)) {
    if (!(name in call.arguments) && !allowed.includes("")) return fail("missing_optional", `${call.tool}: parameter ${name} must be given`);
  }
  return ok;
}

/**
 * All the model's calls of one task against its possible answer: the counts
 * must agree, and every possible call must match a distinct model call.
 */
export function scoreCalls(tools: readonly ToolSpec[], calls: readonly ModelCall[], answers: readonly PossibleCall[]): Score {
  if (calls.length !== answers.length) return fail("wrong_count", `${calls.length} call(s), expected ${answers.length}`);
  const byName = new Map(tools.map((t) => [t.name, t]));
  const matched = new Set<number>();
  for (const answer of answers) {
    let last: Score | undefined;
    const index = calls.findIndex((call, i) => {
      if (matched.has(i)) return false;
      last = scoreCall(byName.get(call.tool), call, answer);
      return last.valid;
    });
    if (index < 0) return last ?? fail("wrong_count", `no call left for ${answer.tool}`);
    matched.add(index);
  }
  return ok;
}

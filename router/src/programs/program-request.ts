/**
 * @module The body of `POST /v1/apps/{ns}/{app}/programs`, checked against
 * the app's semantic functions and turned into a DAG. Bad input is a 400
 * naming the call and field (an unknown function or variable, a cycle with
 * the variables on it), or a 413 for a value or a program over the limits.
 *
 * ```json
 * {
 *   "inputs": { "chunk0": "text…", "chunk1": "text…" },
 *   "calls": [
 *     { "id": "map0", "function": "summarize", "inputs": { "text": "chunk0" }, "outputs": { "summary": "s0" } },
 *     { "id": "map1", "function": "summarize", "inputs": { "text": "chunk1" }, "outputs": { "summary": "s1" } },
 *     { "id": "reduce", "function": "combine", "inputs": { "summaries": ["s0", "s1"] }, "outputs": { "summary": "final" } }
 *   ],
 *   "outputs": { "final": "latency" }
 * }
 * ```
 * A call's template input is bound to a variable, or to a list of variables
 * (their values joined by blank lines, in order: a reduce over a map); an
 * unbound input or output uses the variable of the same name. `outputs`
 * gives the criterion of each final output (`latency` or `throughput`);
 * absent, every variable no call consumes is final, with the app's objective.
 * A call's `policy` scripts its sessions as a session's `policy` does.
 */
import { ErrorCode, type ScriptedPolicySpec } from "../../../common/src/index.js";
import type { AppConfig } from "../../../common/src/protocol/index.js";
import { parseTemplate, templateInputs, templateOutputs, VARIABLE_NAME, type SemanticFunction, type TemplatePiece } from "../../../common/src/semantic-function.js";
import { badRequest, HttpError } from "../errors.js";
import { buildDag, describeDagError, type Criterion, type Dag } from "./dag.js";

export interface ProgramLimits {
  /** Largest value of one variable, bytes (given inputs; → 413). */
  maxValueBytes: number;
  /** Most calls in one program (→ 413). */
  maxCalls: number;
}

export interface ProgramCall {
  id: string;
  fn: SemanticFunction;
  pieces: readonly TemplatePiece[];
  /** Template input → the variables whose values fill it. */
  bind: ReadonlyMap<string, readonly string[]>;
  /** Template output → the program variable it produces. */
  produces: ReadonlyMap<string, string>;
  /** Scripts each of the call's engine sessions, as a session's `policy` does (the generated test model). */
  policy?: ScriptedPolicySpec;
}

export interface ParsedProgram {
  inputs: ReadonlyMap<string, string>;
  calls: readonly ProgramCall[];
  finals: Map<string, Criterion>;
  dag: Dag;
}

const FIELDS = ["inputs", "calls", "outputs"];
const CALL_FIELDS = ["id", "function", "inputs", "outputs", "policy"];

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

function tooLarge(message: string): HttpError {
  return new HttpError(413, ErrorCode.PayloadTooLarge, message);
}

function variableName(v: unknown, field: string): string {
  if (typeof v !== "string" || !VARIABLE_NAME.test(v)) throw badRequest(`${field} must be a variable name matching ${VARIABLE_NAME.source}, got ${JSON.stringify(v)}`);
  return v;
}

export function parseProgram(app: AppConfig, body: unknown, limits: ProgramLimits): ParsedProgram {
  if (!isObject(body)) throw badRequest("expected a JSON object body");
  for (const key of Object.keys(body)) if (!FIELDS.includes(key)) throw badRequest(`unknown field "${key}"; expected ${FIELDS.join(", ")}`);
  const inputs = new Map<string, string>();
  const rawInputs = body["inputs"] ?? {};
  if (!isObject(rawInputs)) throw badRequest(`"inputs" must be an object of variable name → string value`);
  for (const [name, value] of Object.entries(rawInputs)) {
    variableName(name, `inputs key`);
    if (typeof value !== "string") throw badRequest(`inputs.${name} must be a string`);
    const bytes = Buffer.byteLength(value);
    if (bytes > limits.maxValueBytes) throw tooLarge(`inputs.${name} is ${bytes} bytes; a variable holds at most ${limits.maxValueBytes} bytes (--max-variable-bytes)`);
    inputs.set(name, value);
  }
  const rawCalls = body["calls"];
  if (!Array.isArray(rawCalls) || rawCalls.length === 0) throw badRequest(`"calls" must be a non-empty array`);
  if (rawCalls.length > limits.maxCalls) throw tooLarge(`the program has ${rawCalls.length} calls; at most ${limits.maxCalls} are taken (--max-program-calls)`);
  const functions = new Map(app.semanticFunctions.map((f) => [f.name, f]));
  const ids = new Set<string>();
  const calls: ProgramCall[] = rawCalls.map((raw, i) => {
    const field = `calls[${i}]`;
    if (!isObject(raw)) throw badRequest(`${field} must be an object`);
    for (const key of Object.keys(raw)) if (!CALL_FIELDS.includes(key)) throw badRequest(`${field}: unknown field "${key}"; expected ${CALL_FIELDS.join(", ")}`);
    const fnName = raw["function"];
    if (typeof fnName !== "string") throw badRequest(`${field}.function must be a string`);
    const fn = functions.get(fnName);
    if (fn === undefined) {
      const known = [...functions.keys()];
      throw badRequest(`${field}.function: AgentApp ${app.namespace}/${app.name} has no semantic function "${fnName}" (${known.length > 0 ? `it has ${known.join(", ")}` : "it declares none: spec.semanticFunctions"})`);
    }
    const id = raw["id"] === undefined ? `${fn.name}_${i}` : variableName(raw["id"], `${field}.id`);
    if (ids.has(id)) throw badRequest(`${field}.id: "${id}" is used by another call`);
    ids.add(id);
    const pieces = parseTemplate(fn.template);
    const wantIn = templateInputs(pieces);
    const wantOut = templateOutputs(pieces);
    const rawIn = raw["inputs"] ?? {};
    const rawOut = raw["outputs"] ?? {};
    if (!isObject(rawIn)) throw badRequest(`${field}.inputs must be an object of template input → variable`);
    if (!isObject(rawOut)) throw badRequest(`${field}.outputs must be an object of template output → variable`);
    for (const k of Object.keys(rawIn)) if (!wantIn.includes(k)) throw badRequest(`${field}.inputs.${k}: function ${fn.name} has no {{input:${k}}} (it takes ${wantIn.join(", ") || "none"})`);
    for (const k of Object.keys(rawOut)) if (!wantOut.includes(k)) throw badRequest(`${field}.outputs.${k}: function ${fn.name} has no {{output:${k}}} (it produces ${wantOut.join(", ")})`);
    const bind = new Map<string, string[]>();
    for (const k of wantIn) {
      const v = rawIn[k] ?? k;
      if (Array.isArray(v)) {
        if (v.length === 0) throw badRequest(`${field}.inputs.${k}: an empty list of variables`);
        bind.set(k, v.map((x, j) => variableName(x, `${field}.inputs.${k}[${j}]`)));
      } else bind.set(k, [variableName(v, `${field}.inputs.${k}`)]);
    }
    const produces = new Map(wantOut.map((k) => [k, variableName(rawOut[k] ?? k, `${field}.outputs.${k}`)]));
    // Passed through as a session's is: the engine validates it and names the field.
    if (raw["policy"] !== undefined && !isObject(raw["policy"])) throw badRequest(`${field}.policy must be an object (a scripted policy)`);
    return { id, fn, pieces, bind, produces, ...(raw["policy"] !== undefined ? { policy: raw["policy"] as unknown as ScriptedPolicySpec } : {}) };
  });
  const built = buildDag(
    calls.map((c) => ({ id: c.id, inputs: [...new Set([...c.bind.values()].flat())], outputs: [...c.produces.values()] })),
    new Set(inputs.keys()),
  );
  if (!built.ok) throw badRequest(describeDagError(built.error));
  const finals = new Map<string, Criterion>();
  const rawFinals = body["outputs"];
  if (rawFinals === undefined) {
    for (const v of built.dag.sinks) finals.set(v, app.objective);
  } else {
    if (!isObject(rawFinals)) throw badRequest(`"outputs" must be an object of variable → "latency" | "throughput"`);
    for (const [v, c] of Object.entries(rawFinals)) {
      if (!built.dag.producer.has(v)) throw badRequest(`outputs.${v}: no call produces variable "${v}"`);
      if (c !== "latency" && c !== "throughput") throw badRequest(`outputs.${v} must be "latency" or "throughput", got ${JSON.stringify(c)}`);
      finals.set(v, c);
    }
  }
  return { inputs, calls, finals, dag: built.dag };
}

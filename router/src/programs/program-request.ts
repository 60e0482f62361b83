/**
 * @module The bodies of `POST /v1/apps/{ns}/{app}/programs` and of
 * `POST .../programs/{id}/calls`, checked against the app and the program so
 * far and turned into a DAG. Bad input is a 400 naming the call and field (an
 * unknown function or variable, a bad function definition, a cycle with the
 * variables on it), or a 413 for a value or a program over the limits.
 *
 * ```json
 * {
 *   "inputs": { "chunk0": "text…", "chunk1": "text…" },
 *   "functions": [
 *     { "name": "summarize", "template": "Summarize:\n{{input:chunk}}\nSummary: {{output:summary}}", "outputs": [{ "name": "summary", "maxTokens": 48 }] }
 *   ],
 *   "calls": [
 *     { "id": "map0", "function": "summarize", "inputs": { "chunk": "chunk0" }, "outputs": { "summary": "s0" } },
 *     { "id": "map1", "function": "summarize", "inputs": { "chunk": "chunk1" }, "outputs": { "summary": "s1" } },
 *     { "id": "reduce", "function": "combine", "inputs": { "summaries": ["s0", "s1"] }, "outputs": { "summary": "final" } }
 *   ],
 *   "outputs": { "final": "latency" }
 * }
 * ```
 * A call names a function of the app (`spec.semanticFunctions`: named,
 * reviewed templates) or one defined in the program (`functions`, checked
 * as the operator checks the app's, within the same size bounds, with
 * `maxTokens` at most the app's and `tools` among the app's tools). A call's
 * template input is bound to a variable, or to a list of variables (their
 * values joined by blank lines, in order: a reduce over a map); an unbound
 * input or output uses the variable of the same name. `outputs` gives the
 * criterion of final outputs (`latency` or `throughput`); absent when the
 * program is closed, every variable no call consumes is final, with the
 * app's objective. A call's `policy` scripts its sessions as a session's
 * `policy` does.
 *
 * A program created with `"open": true` takes more calls later
 * (`POST .../programs/{id}/calls` with the same fields, and `"close": true`
 * to say no more will come): a client submits each call as it is made, so
 * the router sees the DAG before any value is needed (Parrot's front end).
 */
import { ErrorCode, type ScriptedPolicySpec } from "../../../common/src/index.js";
import type { AppConfig } from "../../../common/src/protocol/index.js";
import {
  checkSemanticFunction,
  parseTemplate,
  SEMANTIC_FUNCTION_LIMITS,
  templateInputs,
  templateOutputs,
  VARIABLE_NAME,
  type SemanticFunction,
  type SemanticOutput,
  type TemplatePiece,
} from "../../../common/src/semantic-function.js";
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
  /** Functions the program defined itself (`functions`), by name. */
  functions: ReadonlyMap<string, SemanticFunction>;
  calls: readonly ProgramCall[];
  finals: Map<string, Criterion>;
  dag: Dag;
  /** More calls may come; until it is closed a call runs only once a final output needs it. */
  open: boolean;
}

const CREATE_FIELDS = ["inputs", "functions", "calls", "outputs", "open"];
const EXTEND_FIELDS = ["inputs", "functions", "calls", "outputs", "close"];
const CALL_FIELDS = ["id", "function", "inputs", "outputs", "policy"];
const FUNCTION_FIELDS = ["name", "template", "outputs", "tools"];
const OUTPUT_FIELDS = ["name", "maxTokens", "temperature"];

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

function refuseUnknown(body: Record<string, unknown>, allowed: readonly string[], field: string): void {
  for (const key of Object.keys(body)) if (!allowed.includes(key)) throw badRequest(`${field}unknown field "${key}"; expected ${allowed.join(", ")}`);
}

/** A new program (`POST .../programs`). */
export function parseProgram(app: AppConfig, body: unknown, limits: ProgramLimits): ParsedProgram {
  if (!isObject(body)) throw badRequest("expected a JSON object body");
  refuseUnknown(body, CREATE_FIELDS, "");
  if (body["open"] !== undefined && typeof body["open"] !== "boolean") throw badRequest(`"open" must be a boolean`);
  const open = body["open"] === true;
  const empty: ParsedProgram = { inputs: new Map(), functions: new Map(), calls: [], finals: new Map(), dag: buildDagOrThrow([], new Set()), open };
  return addToProgram(app, empty, body, limits, { requireCalls: !open });
}

/** More of an open program (`POST .../programs/{id}/calls`); the result replaces `program`. */
export function extendProgram(app: AppConfig, program: ParsedProgram, body: unknown, limits: ProgramLimits): ParsedProgram {
  if (!isObject(body)) throw badRequest("expected a JSON object body");
  refuseUnknown(body, EXTEND_FIELDS, "");
  if (body["close"] !== undefined && typeof body["close"] !== "boolean") throw badRequest(`"close" must be a boolean`);
  const next = addToProgram(app, program, body, limits, { requireCalls: false });
  return body["close"] === true ? closeProgram(next, app) : next;
}

/** No more calls: without any final output named so far, every variable no call reads is final with the app's objective. */
export function closeProgram(program: ParsedProgram, app: Pick<AppConfig, "objective">): ParsedProgram {
  const finals = new Map(program.finals);
  if (finals.size === 0) for (const v of program.dag.sinks) finals.set(v, app.objective);
  return { ...program, finals, open: false };
}

function buildDagOrThrow(calls: readonly ProgramCall[], given: ReadonlySet<string>): Dag {
  const built = buildDag(
    calls.map((c) => ({ id: c.id, inputs: [...new Set([...c.bind.values()].flat())], outputs: [...c.produces.values()] })),
    given,
  );
  if (!built.ok) throw badRequest(describeDagError(built.error));
  return built.dag;
}

function addToProgram(app: AppConfig, base: ParsedProgram, body: Record<string, unknown>, limits: ProgramLimits, options: { requireCalls: boolean }): ParsedProgram {
  const inputs = new Map(base.inputs);
  const rawInputs = body["inputs"] ?? {};
  if (!isObject(rawInputs)) throw badRequest(`"inputs" must be an object of variable name → string value`);
  for (const [name, value] of Object.entries(rawInputs)) {
    variableName(name, `inputs key`);
    if (typeof value !== "string") throw badRequest(`inputs.${name} must be a string`);
    if (inputs.has(name) || base.dag.producer.has(name)) throw badRequest(`inputs.${name}: the program already has a variable "${name}"`);
    const bytes = Buffer.byteLength(value);
    if (bytes > limits.maxValueBytes) throw tooLarge(`inputs.${name} is ${bytes} bytes; a variable holds at most ${limits.maxValueBytes} bytes (--max-variable-bytes)`);
    inputs.set(name, value);
  }
  const functions = parseFunctions(app, base.functions, body["functions"]);
  const rawCalls = body["calls"] ?? [];
  if (!Array.isArray(rawCalls) || (options.requireCalls && rawCalls.length === 0)) throw badRequest(`"calls" must be a non-empty array`);
  const total = base.calls.length + rawCalls.length;
  if (total > limits.maxCalls) throw tooLarge(`the program has ${total} calls; at most ${limits.maxCalls} are taken (--max-program-calls)`);
  const ids = new Set(base.calls.map((c) => c.id));
  const calls: ProgramCall[] = rawCalls.map((raw, i) => {
    const call = parseCall(app, functions, raw, `calls[${i}]`, base.calls.length + i);
    if (ids.has(call.id)) throw badRequest(`calls[${i}].id: "${call.id}" is used by another call`);
    ids.add(call.id);
    return call;
  });
  const all = [...base.calls, ...calls];
  const dag = buildDagOrThrow(all, new Set(inputs.keys()));
  const finals = new Map(base.finals);
  const rawFinals = body["outputs"];
  if (rawFinals !== undefined) {
    if (!isObject(rawFinals)) throw badRequest(`"outputs" must be an object of variable → "latency" | "throughput"`);
    for (const [v, c] of Object.entries(rawFinals)) {
      if (!dag.producer.has(v)) throw badRequest(`outputs.${v}: no call produces variable "${v}"`);
      if (c !== "latency" && c !== "throughput") throw badRequest(`outputs.${v} must be "latency" or "throughput", got ${JSON.stringify(c)}`);
      finals.set(v, c);
    }
  }
  const program: ParsedProgram = { inputs, functions, calls: all, finals, dag, open: base.open };
  // A one-shot program (never open) is closed as it arrives.
  return base.open ? program : closeProgram(program, app);
}

function parseCall(app: AppConfig, defined: ReadonlyMap<string, SemanticFunction>, raw: unknown, field: string, index: number): ProgramCall {
  if (!isObject(raw)) throw badRequest(`${field} must be an object`);
  refuseUnknown(raw, CALL_FIELDS, `${field}: `);
  const fnName = raw["function"];
  if (typeof fnName !== "string") throw badRequest(`${field}.function must be a string`);
  const fn = defined.get(fnName) ?? app.semanticFunctions.find((f) => f.name === fnName);
  if (fn === undefined) {
    const known = [...app.semanticFunctions.map((f) => f.name), ...defined.keys()];
    throw badRequest(
      `${field}.function: AgentApp ${app.namespace}/${app.name} has no semantic function "${fnName}", and the program defines none by that name (${known.length > 0 ? `known: ${known.join(", ")}` : "define it in \"functions\" or in spec.semanticFunctions"})`,
    );
  }
  const id = raw["id"] === undefined ? `${fn.name}_${index}` : variableName(raw["id"], `${field}.id`);
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
}

/**
 * The program's own functions after `raw` (`functions`): each checked as the
 * operator checks an AgentApp's, within the CRD's size bounds, the app's
 * `maxTokens` and the app's tools. A name the app already uses, or one the
 * program defined differently before, is a 400; the same definition again
 * is accepted (a client may send it with every batch).
 */
function parseFunctions(app: AppConfig, defined: ReadonlyMap<string, SemanticFunction>, raw: unknown): ReadonlyMap<string, SemanticFunction> {
  if (raw === undefined) return defined;
  if (!Array.isArray(raw)) throw badRequest(`"functions" must be an array of {name, template, outputs, tools?}`);
  const out = new Map(defined);
  raw.forEach((f: unknown, i) => {
    const field = `functions[${i}]`;
    const fn = parseFunction(app, f, field);
    if (app.semanticFunctions.some((a) => a.name === fn.name)) {
      throw badRequest(`${field}.name: "${fn.name}" is a semantic function of AgentApp ${app.namespace}/${app.name}; call it by name, or give yours another name`);
    }
    const before = out.get(fn.name);
    if (before !== undefined && JSON.stringify(before) !== JSON.stringify(fn)) throw badRequest(`${field}.name: the program already defines "${fn.name}" differently`);
    out.set(fn.name, fn);
  });
  const { maxFunctions } = SEMANTIC_FUNCTION_LIMITS;
  if (out.size > maxFunctions) throw tooLarge(`the program defines ${out.size} functions; at most ${maxFunctions} are taken`);
  return out;
}

function parseFunction(app: AppConfig, raw: unknown, field: string): SemanticFunction {
  if (!isObject(raw)) throw badRequest(`${field} must be an object {name, template, outputs, tools?}`);
  refuseUnknown(raw, FUNCTION_FIELDS, `${field}: `);
  const { name, template } = raw;
  if (typeof name !== "string") throw badRequest(`${field}.name must be a string`);
  if (typeof template !== "string" || template === "") throw badRequest(`${field}.template must be a non-empty string`);
  const { maxTemplateLength, maxOutputs } = SEMANTIC_FUNCTION_LIMITS;
  if (template.length > maxTemplateLength) throw tooLarge(`${field}.template is ${template.length} characters; a template holds at most ${maxTemplateLength}`);
  const rawOutputs = raw["outputs"] ?? [];
  if (!Array.isArray(rawOutputs)) throw badRequest(`${field}.outputs must be an array of {name, maxTokens?, temperature?}`);
  if (rawOutputs.length > maxOutputs) throw badRequest(`${field}.outputs: ${rawOutputs.length} outputs; a function has at most ${maxOutputs}`);
  const declared = rawOutputs.map((o: unknown, j): SemanticOutput => parseOutput(app, o, `${field}.outputs[${j}]`));
  const problem = checkSemanticFunction({ name, template, outputs: declared }, field);
  if (problem !== null) throw badRequest(problem);
  const tools = parseTools(app, raw["tools"], `${field}.tools`);
  // Outputs in template order: the order they are generated in.
  const byName = new Map(declared.map((o) => [o.name, o]));
  return { name, template, outputs: templateOutputs(parseTemplate(template)).map((o) => byName.get(o)!), tools };
}

function parseOutput(app: AppConfig, raw: unknown, field: string): SemanticOutput {
  if (!isObject(raw)) throw badRequest(`${field} must be an object {name, maxTokens?, temperature?}`);
  refuseUnknown(raw, OUTPUT_FIELDS, `${field}: `);
  const name = variableName(raw["name"], `${field}.name`);
  const maxTokens = raw["maxTokens"] ?? Math.min(128, app.maxTokens);
  if (typeof maxTokens !== "number" || !Number.isInteger(maxTokens) || maxTokens < 1 || maxTokens > app.maxTokens) {
    throw badRequest(`${field}.maxTokens must be an integer in 1..${app.maxTokens} (the AgentApp's maxTokens), got ${JSON.stringify(raw["maxTokens"])}`);
  }
  const temperature = raw["temperature"] ?? 0;
  if (typeof temperature !== "number" || !(temperature >= 0 && temperature <= 2)) throw badRequest(`${field}.temperature must be a number in 0..2, got ${JSON.stringify(raw["temperature"])}`);
  return { name, maxTokens, temperature };
}

function parseTools(app: AppConfig, raw: unknown, field: string): boolean | string[] {
  if (raw === undefined || typeof raw === "boolean") return raw ?? false;
  if (!Array.isArray(raw)) throw badRequest(`${field} must be true, false or a list of the AgentApp's tool names`);
  const names = app.tools.map((t) => t.name);
  return raw.map((n: unknown, i) => {
    if (typeof n !== "string" || !names.includes(n)) {
      throw badRequest(`${field}[${i}]: ${JSON.stringify(n)} is not a tool of AgentApp ${app.namespace}/${app.name} (${names.length > 0 ? `it has ${names.join(", ")}` : "it has none"})`);
    }
    return n;
  });
}

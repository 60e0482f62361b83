/**
 * @module Validation of session and interrupt request bodies. Each failure
 * is an {@link HttpError} whose message names the field and what was
 * expected, so a client can fix its request without reading the source.
 */
import {
  ErrorCode,
  type CallingMode,
  type ChatMessage,
  type CreateSessionRequest,
  type KvPolicy,
  type PostInterruptRequest,
  type ScriptedCall,
  type ScriptedPolicySpec,
  type ToolSpec,
} from "../../../common/src/index.js";
import { HttpError } from "./http-errors.js";
import { resolveSessionTools, type ToolCatalog } from "./resolve-tools.js";

const bad = (message: string): HttpError => HttpError.of(ErrorCode.BadRequest, message);

export function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** The body must be a JSON object (body-parser already turned bad JSON into 400 invalid_json). */
export function requireObjectBody(body: unknown): Record<string, unknown> {
  if (body === undefined) throw bad("expected a JSON object body");
  if (!isObject(body)) throw bad(`expected a JSON object body, got ${Array.isArray(body) ? "an array" : typeof body}`);
  return body;
}

function oneOf<T extends string>(value: unknown, field: string, allowed: readonly T[]): T | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "string" || !(allowed as readonly string[]).includes(value)) {
    throw bad(`"${field}" must be one of ${allowed.map((a) => JSON.stringify(a)).join(", ")}, got ${JSON.stringify(value)}`);
  }
  return value as T;
}

function int(value: unknown, field: string, min: number, max = Number.MAX_SAFE_INTEGER): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    throw bad(`"${field}" must be an integer in ${min}..${max}, got ${JSON.stringify(value)}`);
  }
  return value;
}

function num(value: unknown, field: string, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "number" || !Number.isFinite(value) || value < min || value > max) {
    throw bad(`"${field}" must be a number in ${min}..${max}, got ${JSON.stringify(value)}`);
  }
  return value;
}

function bool(value: unknown, field: string): boolean | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "boolean") throw bad(`"${field}" must be true or false, got ${JSON.stringify(value)}`);
  return value;
}

const ROLES = ["system", "user", "assistant", "tool"] as const;

function messages(value: unknown, field: string): ChatMessage[] {
  if (!Array.isArray(value) || value.length === 0) throw bad(`"${field}" must be a non-empty string or a non-empty array of messages`);
  return value.map((m, i) => {
    if (!isObject(m)) throw bad(`${field}[${i}] must be {"role", "content"}`);
    const role = oneOf(m["role"], `${field}[${i}].role`, ROLES);
    if (role === undefined) throw bad(`${field}[${i}].role is required`);
    if (typeof m["content"] !== "string") throw bad(`${field}[${i}].content must be a string`);
    return { role, content: m["content"] };
  });
}

/** UTF-8 bytes of all prompt text in a request. */
export function promptBytes(prompt: string | ChatMessage[], system?: string): number {
  const texts = typeof prompt === "string" ? [prompt] : prompt.map((m) => m.content);
  if (system !== undefined) texts.push(system);
  return texts.reduce((n, t) => n + Buffer.byteLength(t, "utf8"), 0);
}

/** Validates a scripted policy against the session's tools. */
export function validatePolicy(value: unknown, tools: readonly ToolSpec[], field = "policy"): ScriptedPolicySpec | undefined {
  if (value === undefined) return undefined;
  if (!isObject(value)) throw bad(`"${field}" must be an object with "type" "lpt-dag" or "text"`);
  const type = oneOf(value["type"], `${field}.type`, ["lpt-dag", "text"] as const);
  if (type === "text") {
    const pieces = value["pieces"];
    if (!Array.isArray(pieces) || pieces.some((p) => typeof p !== "string")) throw bad(`"${field}.pieces" must be an array of strings`);
    return { type, pieces: pieces as string[] };
  }
  if (type !== "lpt-dag") throw bad(`"${field}.type" is required ("lpt-dag" or "text")`);
  const calls = value["calls"];
  if (!Array.isArray(calls)) throw bad(`"${field}.calls" must be an array`);
  const names = new Set(tools.map((t) => t.name));
  const ids = new Set<string>();
  const parsed: ScriptedCall[] = calls.map((c, i) => {
    const where = `${field}.calls[${i}]`;
    if (!isObject(c)) throw bad(`${where} must be an object`);
    const { id, tool, arguments: args, dependsOn, estimatedLatencyMs, afterInterrupt } = c;
    if (typeof id !== "string" || id === "") throw bad(`${where}.id must be a non-empty string`);
    if (ids.has(id)) throw bad(`${where}.id "${id}" is used twice`);
    ids.add(id);
    if (typeof tool !== "string") throw bad(`${where}.tool must be a string`);
    if (!names.has(tool)) throw HttpError.of(ErrorCode.UnknownTool, `${where}.tool "${tool}" is not among the session's tools (${[...names].join(", ") || "none"})`);
    if (!isObject(args)) throw bad(`${where}.arguments must be an object`);
    const deps = dependsOn ?? [];
    if (!Array.isArray(deps) || deps.some((d) => typeof d !== "string")) throw bad(`${where}.dependsOn must be an array of call ids`);
    const call: ScriptedCall = { id, tool, arguments: args, dependsOn: deps as string[] };
    const latency = num(estimatedLatencyMs, `${where}.estimatedLatencyMs`, 0, 3_600_000);
    if (latency !== undefined) call.estimatedLatencyMs = latency;
    if (afterInterrupt !== undefined) {
      if (typeof afterInterrupt !== "string") throw bad(`${where}.afterInterrupt must be a string`);
      call.afterInterrupt = afterInterrupt;
    }
    return call;
  });
  for (const call of parsed) {
    for (const dep of call.dependsOn) if (!ids.has(dep)) throw bad(`${field}: call "${call.id}" depends on unknown call "${dep}"`);
  }
  const spec: ScriptedPolicySpec = { type, calls: parsed };
  const callStyle = oneOf(value["callStyle"], `${field}.callStyle`, ["json", "python"] as const);
  if (callStyle !== undefined) spec.callStyle = callStyle;
  const thinkTokens = int(value["thinkTokens"], `${field}.thinkTokens`, 0, 100_000);
  if (thinkTokens !== undefined) spec.thinkTokens = thinkTokens;
  if (value["finalText"] !== undefined) {
    if (typeof value["finalText"] !== "string") throw bad(`"${field}.finalText" must be a string`);
    spec.finalText = value["finalText"];
  }
  return spec;
}

const SESSION_FIELDS = new Set(["prompt", "system", "tools", "mode", "prefixReuse", "maxTokens", "temperature", "seed", "grammar", "kvPolicy", "policy"]);

export interface SessionLimits {
  maxPromptBytes: number;
}

/** `POST /v1/sessions` body → a CreateSessionRequest with resolved tool specs. */
export function parseCreateSessionRequest(body: unknown, catalog: ToolCatalog, limits: SessionLimits): CreateSessionRequest {
  const b = requireObjectBody(body);
  for (const key of Object.keys(b)) {
    if (!SESSION_FIELDS.has(key)) throw bad(`unknown field "${key}"; expected ${[...SESSION_FIELDS].join(", ")}`);
  }
  const prompt = typeof b["prompt"] === "string" ? b["prompt"] : messages(b["prompt"], "prompt");
  if (prompt === "") throw bad(`"prompt" must not be empty`);
  const request: CreateSessionRequest = { prompt };
  if (b["system"] !== undefined) {
    if (typeof b["system"] !== "string") throw bad(`"system" must be a string`);
    request.system = b["system"];
  }
  const bytes = promptBytes(prompt, request.system);
  if (bytes > limits.maxPromptBytes) {
    throw HttpError.of(ErrorCode.PayloadTooLarge, `prompt of ${bytes} bytes exceeds the limit of ${limits.maxPromptBytes} bytes (--max-prompt-bytes)`);
  }
  request.tools = resolveSessionTools(b["tools"], catalog);
  const mode = oneOf<CallingMode>(b["mode"], "mode", ["async", "sync", "syncParallel"]);
  if (mode !== undefined) request.mode = mode;
  const kvPolicy = oneOf<KvPolicy>(b["kvPolicy"], "kvPolicy", ["auto", "keep", "swap", "recompute"]);
  if (kvPolicy !== undefined) request.kvPolicy = kvPolicy;
  const prefixReuse = bool(b["prefixReuse"], "prefixReuse");
  if (prefixReuse !== undefined) request.prefixReuse = prefixReuse;
  const grammar = bool(b["grammar"], "grammar");
  if (grammar !== undefined) request.grammar = grammar;
  const maxTokens = int(b["maxTokens"], "maxTokens", 1, 1_000_000);
  if (maxTokens !== undefined) request.maxTokens = maxTokens;
  const temperature = num(b["temperature"], "temperature", 0, 2);
  if (temperature !== undefined) request.temperature = temperature;
  const seed = int(b["seed"], "seed", 0, 0xffffffff);
  if (seed !== undefined) request.seed = seed;
  const policy = validatePolicy(b["policy"], request.tools);
  if (policy !== undefined) request.policy = policy;
  return request;
}

/** Interrupt ids appear in `[INTR] id [HEAD]`: identifiers, like call ids. */
const INTERRUPT_ID = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

/** `POST /v1/sessions/{id}/interrupts` body. */
export function parseInterruptRequest(body: unknown, maxBytes: number): PostInterruptRequest {
  const b = requireObjectBody(body);
  for (const key of Object.keys(b)) if (!["value", "kind", "id"].includes(key)) throw bad(`unknown field "${key}"; expected value, kind, id`);
  const value = b["value"];
  if (typeof value !== "string" || value === "") throw bad(`"value" must be a non-empty string`);
  const bytes = Buffer.byteLength(value, "utf8");
  if (bytes > maxBytes) throw HttpError.of(ErrorCode.PayloadTooLarge, `interrupt value of ${bytes} bytes exceeds the limit of ${maxBytes} bytes (--max-prompt-bytes)`);
  const request: PostInterruptRequest = { value };
  const kind = oneOf(b["kind"], "kind", ["user", "agent"] as const);
  if (kind !== undefined) request.kind = kind;
  if (b["id"] !== undefined) {
    if (typeof b["id"] !== "string" || !INTERRUPT_ID.test(b["id"])) throw bad(`"id" must match ${INTERRUPT_ID.source}`);
    request.id = b["id"];
  }
  return request;
}

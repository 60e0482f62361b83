/**
 * @module An AgentApp's spec merged with each client request: the app's
 * system prompt and few-shot examples go first, its tools and calling mode
 * replace whatever the client could have said, its `maxTokens` caps the
 * request, and its objective becomes the engine's admission priority. Also
 * the request's prefix-hash chain and the affinity key placement uses on a
 * miss (the hash of the app's own prefix: system prompt, tools, few-shot).
 * Invalid bodies are 400s naming the field: session and interrupt bodies
 * are checked with the engine's own wire schemas (`common/src/wire/`), so
 * the router adds only what the app owns.
 */
import {
  prefixHashChain,
  prefixSegments,
  type ChatMessage,
  type CreateSessionRequest,
  type PostInterruptRequest,
} from "../../common/src/index.js";
import type { AppConfig } from "../../common/src/protocol/index.js";
import { createSessionBodySchema, SYSTEM_ROLES, validateCreateSessionBody, validateInterruptBody } from "../../common/src/wire/index.js";
import { badRequest } from "./errors.js";

export interface Merged<T> {
  /** What goes to the engine. */
  body: T;
  chain: string[];
  affinityKey: string;
  /** Leading blocks of `chain` that are the app's own (system prompt, few-shot, tools): what its sessions share. */
  appSegments: number;
}

/** Session fields the app or the router set; a client's are refused (`system` and `tools` with the spec field that owns them). */
const APP_OWNED_SESSION_FIELDS = new Set(["system", "tools", "priority", "maxBatch", "speculation", "toolChoice"]);
/** The session fields a client may send: the rest of the engine's schema. */
const SESSION_FIELDS = Object.keys(createSessionBodySchema["properties"] as object).filter((k) => !APP_OWNED_SESSION_FIELDS.has(k));
/** Interrupt fields a client may send (`maxQueued` is the app's `interrupts.maxQueued`). */
const INTERRUPT_FIELDS = ["value", "kind", "id"];

const isSystemRole = (role: unknown): boolean => (SYSTEM_ROLES as readonly unknown[]).includes(role);

export function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/** Admission priority for the engine: latency-objective apps are admitted first. */
export function priorityOf(app: AppConfig): number {
  return app.objective === "latency" ? 1 : 0;
}

/** The app's own messages (system prompt, few-shot), which every request starts with. */
export function appMessages(app: AppConfig): ChatMessage[] {
  return [...(app.systemPrompt !== "" ? [{ role: "system" as const, content: app.systemPrompt }] : []), ...app.fewShot.flatMap((e) => e.messages)];
}

function chainAndKey(app: AppConfig, messages: ChatMessage[]): { chain: string[]; affinityKey: string; appSegments: number } {
  const chain = prefixHashChain({ messages, tools: app.tools });
  const own = prefixSegments({ messages: appMessages(app), tools: app.tools }).length;
  const shared = own > 0 && own <= chain.length;
  return { chain, affinityKey: shared ? chain[own - 1]! : `app:${app.namespace}/${app.name}`, appSegments: shared ? own : 0 };
}

/** A schema-checked session `prompt` as messages; a system message is the app's alone. */
function clientMessages(prompt: CreateSessionRequest["prompt"], field: string): ChatMessage[] {
  if (typeof prompt === "string") return [{ role: "user", content: prompt }];
  prompt.forEach((m, i) => {
    if (isSystemRole(m.role)) throw badRequest(`${field}[${i}].role: "${m.role}" is not allowed; the AgentApp's systemPrompt is the system message`);
  });
  return prompt.map((m) => ({ role: m.role, content: m.content }));
}

/** `POST /v1/apps/{ns}/{app}/sessions` body → the engine's `POST /v1/sessions` body. */
export function mergeSessionRequest(app: AppConfig, body: unknown): Merged<CreateSessionRequest> {
  if (!isObject(body)) throw badRequest("expected a JSON object body");
  for (const key of Object.keys(body)) {
    if (key === "system") throw badRequest(`"system" is set by the AgentApp (spec.systemPrompt); leave it out`);
    if (key === "tools") throw badRequest(`"tools" are set by the AgentApp (spec.toolPools); leave them out`);
    if (!SESSION_FIELDS.includes(key)) throw badRequest(`unknown field "${key}"; expected ${SESSION_FIELDS.join(", ")}`);
  }
  const checked = validateCreateSessionBody(body);
  if (!checked.ok) throw badRequest(checked.error);
  const { prompt, mode, maxTokens, ...rest } = checked.value;
  if (mode !== undefined && mode !== app.callingMode) {
    throw badRequest(`"mode" is set by the AgentApp (spec.callingMode: ${app.callingMode}); got ${JSON.stringify(mode)}`);
  }
  if (maxTokens !== undefined && maxTokens > app.maxTokens) throw badRequest(`"maxTokens" must be an integer in 1..${app.maxTokens} (the AgentApp's maxTokens), got ${maxTokens}`);
  const messages = [...appMessages(app), ...clientMessages(prompt, "prompt")];
  // The client's other fields pass as given (the schema checked them), then the app's own.
  const request: CreateSessionRequest = {
    ...(rest as Omit<CreateSessionRequest, "prompt">),
    prompt: messages,
    tools: app.tools,
    mode: app.callingMode,
    maxTokens: maxTokens ?? app.maxTokens,
    priority: priorityOf(app),
  };
  // The app's speculation settings reach the engine with every session (spec.speculation).
  if (app.speculation.enabled) request.speculation = { ...app.speculation };
  // The request's own hint, else the app's (spec.kvRetention).
  const retention = rest.retention ?? app.retention;
  if (retention !== undefined) request.retention = retention;
  return { body: request, ...chainAndKey(app, messages) };
}

/** `POST .../sessions/{id}/interrupts`: the app's interrupt settings applied (403 is the caller's, on `userInterrupts: false`). */
export function mergeInterruptRequest(app: AppConfig, body: unknown): PostInterruptRequest {
  if (!isObject(body)) throw badRequest("expected a JSON object body");
  for (const key of Object.keys(body)) if (!INTERRUPT_FIELDS.includes(key)) throw badRequest(`unknown field "${key}"; expected ${INTERRUPT_FIELDS.join(", ")}`);
  const checked = validateInterruptBody(body);
  if (!checked.ok) throw badRequest(checked.error);
  return { ...checked.value, kind: checked.value.kind ?? "user", maxQueued: app.interrupts.maxQueued };
}

/** OpenAI `content` (string, null or text parts) as text, for hashing. */
function contentText(value: unknown): string {
  if (typeof value === "string") return value;
  if (Array.isArray(value)) return value.map((p) => (isObject(p) && typeof p["text"] === "string" ? p["text"] : "")).join("");
  return "";
}

/** Rejects client messages or items with a system or developer role: the AgentApp's systemPrompt is the system message. */
function refuseSystemRoles(items: unknown[], field: string): void {
  items.forEach((m, i) => {
    if (!isObject(m)) throw badRequest(`${field}[${i}] must be an object`);
    if (isSystemRole(m["role"])) {
      throw badRequest(`${field}[${i}].role: "${String(m["role"])}" is not allowed; the AgentApp's systemPrompt is the system message`);
    }
  });
}

/** A client's output-token limit, capped by the app's `maxTokens` (its default). */
function openAiMaxTokens(app: AppConfig, value: unknown, field: string): number {
  if (value === undefined || value === null) return app.maxTokens;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1 || value > app.maxTokens) {
    throw badRequest(`"${field}" must be an integer in 1..${app.maxTokens} (the AgentApp's maxTokens), got ${JSON.stringify(value)}`);
  }
  return value;
}

/** The app's tools as OpenAI function definitions (name, description, parameters). */
function openAiFunctions(app: AppConfig): { name: string; description: string; parameters: unknown }[] {
  return app.tools.map((t) => ({ name: t.name, description: t.description, parameters: t.parameters }));
}

/** `POST /v1/apps/{ns}/{app}/chat/completions` body → the engine's OpenAI body. */
export function mergeChatRequest(app: AppConfig, body: unknown): Merged<Record<string, unknown>> & { stream: boolean } {
  if (!isObject(body)) throw badRequest("expected a JSON object body");
  if (body["tools"] !== undefined) throw badRequest(`"tools" are set by the AgentApp (spec.toolPools); leave them out`);
  const raw = body["messages"];
  if (!Array.isArray(raw) || raw.length === 0) throw badRequest(`"messages" must be a non-empty array`);
  refuseSystemRoles(raw, "messages");
  const stream = body["stream"] === true;
  const own = appMessages(app);
  const merged: Record<string, unknown> = {
    ...body,
    model: typeof body["model"] === "string" ? body["model"] : `${app.namespace}/${app.name}`,
    messages: [...own, ...raw],
    max_tokens: openAiMaxTokens(app, body["max_completion_tokens"] ?? body["max_tokens"], "max_tokens"),
    ...(app.tools.length > 0 ? { tools: openAiFunctions(app).map((f) => ({ type: "function", function: f })) } : {}),
  };
  delete merged["max_completion_tokens"];
  const hashed: ChatMessage[] = [
    ...own,
    ...raw.map((m) => ({ role: (m as Record<string, unknown>)["role"] as ChatMessage["role"], content: contentText((m as Record<string, unknown>)["content"]) })),
  ];
  return { body: merged, stream, ...chainAndKey(app, hashed) };
}

/** Responses input items as messages, for the prefix hash (function calls and outputs hash as their text). */
function itemMessages(input: unknown): ChatMessage[] {
  if (typeof input === "string") return [{ role: "user", content: input }];
  if (!Array.isArray(input)) return [];
  return input.filter(isObject).map((item) => {
    if (item["type"] === "function_call_output") return { role: "tool", content: contentText(item["output"]) };
    if (item["type"] === "function_call") return { role: "assistant", content: typeof item["arguments"] === "string" ? item["arguments"] : "" };
    const role = item["role"];
    return { role: role === "assistant" || role === "tool" ? role : "user", content: contentText(item["content"]) };
  });
}

/**
 * `POST /v1/apps/{ns}/{app}/responses` body → the engine's `POST /v1/responses`
 * body, the app merged in as for chat completions: its system prompt is the
 * `instructions` (a client's is a 400, as a client system message is), its
 * few-shot examples open the input of a first turn (a follow-up's stored
 * conversation has them already), its tools are the tools (a client may list
 * function tools only by the app's names, as the Agents SDK lists the tools it
 * runs; their definitions are the app's), and `max_output_tokens` is capped
 * by its `maxTokens`. `previousResponseId` is the client's id, for the route
 * to resolve.
 */
export function mergeResponsesRequest(app: AppConfig, body: unknown): Merged<Record<string, unknown>> & { stream: boolean; previousResponseId?: string } {
  if (!isObject(body)) throw badRequest("expected a JSON object body");
  const instructions = body["instructions"];
  if (instructions !== undefined && instructions !== null && instructions !== "") {
    throw badRequest(`"instructions" are set by the AgentApp (spec.systemPrompt); leave them out`);
  }
  const tools = body["tools"];
  if (tools !== undefined && tools !== null) {
    if (!Array.isArray(tools)) throw badRequest(`"tools" must be an array`);
    const names = app.tools.map((t) => t.name);
    tools.forEach((t, i) => {
      if (!isObject(t) || t["type"] !== "function" || typeof t["name"] !== "string" || !names.includes(t["name"])) {
        throw badRequest(`tools[${i}]: the tools are set by the AgentApp (spec.toolPools: ${names.join(", ") || "none"}); list only those function tools by name, or leave "tools" out`);
      }
    });
  }
  const input = body["input"];
  if (Array.isArray(input)) refuseSystemRoles(input, "input");
  const previous = body["previous_response_id"];
  if (previous !== undefined && previous !== null && (typeof previous !== "string" || previous === "")) throw badRequest(`"previous_response_id" must be a response id`);
  const previousResponseId = typeof previous === "string" ? previous : undefined;
  const own = appMessages(app);
  // A first turn carries the app's few-shot examples as input items (the instructions carry the system prompt).
  const fewShot = previousResponseId === undefined ? own.filter((m) => m.role !== "system") : [];
  const tool = fewShot.find((m) => m.role === "tool");
  if (tool !== undefined) throw badRequest(`AgentApp ${app.namespace}/${app.name} has tool messages in its few-shot examples, which Responses input items cannot carry without call ids; use chat/completions`);
  const items = [...fewShot.map((m) => ({ type: "message", role: m.role, content: m.content })), ...(typeof input === "string" ? [{ type: "message", role: "user", content: input }] : Array.isArray(input) ? input : [])];
  const merged: Record<string, unknown> = {
    ...body,
    model: typeof body["model"] === "string" ? body["model"] : `${app.namespace}/${app.name}`,
    // An empty input stays as the client sent it, for the engine to name.
    input: items.length > fewShot.length ? items : input,
    max_output_tokens: openAiMaxTokens(app, body["max_output_tokens"], "max_output_tokens"),
  };
  delete merged["instructions"];
  delete merged["tools"];
  if (app.systemPrompt !== "") merged["instructions"] = app.systemPrompt;
  if (app.tools.length > 0) merged["tools"] = openAiFunctions(app).map((f) => ({ type: "function", ...f, strict: false }));
  return { body: merged, stream: body["stream"] === true, ...(previousResponseId !== undefined ? { previousResponseId } : {}), ...chainAndKey(app, [...own, ...itemMessages(input)]) };
}

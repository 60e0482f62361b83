/**
 * @module Validation of session and interrupt request bodies against the
 * wire schemas of `common/src/wire/` (the project's one validator), then the
 * checks a schema cannot say (prompt size, tools this engine can run, a
 * policy's tools and dependencies). Each failure is an {@link HttpError}
 * whose message names the field and what was expected.
 */
import {
  ErrorCode,
  type ChatMessage,
  type CreateSessionRequest,
  type PostInterruptRequest,
  type ScriptedPolicySpec,
  type ToolSpec,
} from "../../../common/src/index.js";
import { policyProblem, validateCreateSessionBody, validateInterruptBody, validateScriptedPolicy } from "../../../common/src/wire/index.js";
import { HttpError } from "./http-errors.js";
import { resolveSessionTools, type ToolCatalog } from "./resolve-tools.js";
import { validateSpeculation } from "./validate-speculation.js";

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

/** UTF-8 bytes of all prompt text in a request. */
export function promptBytes(prompt: string | ChatMessage[], system?: string): number {
  const texts = typeof prompt === "string" ? [prompt] : prompt.map((m) => m.content);
  if (system !== undefined) texts.push(system);
  return texts.reduce((n, t) => n + Buffer.byteLength(t, "utf8"), 0);
}

/** Validates a scripted policy (schema, then against the session's tools); absent stays absent. */
export function validatePolicy(value: unknown, tools: readonly ToolSpec[], field = "policy"): ScriptedPolicySpec | undefined {
  if (value === undefined) return undefined;
  const checked = validateScriptedPolicy(value);
  // Error paths are relative to the policy: put them under its field (`"interlace_policy.calls[0].id"`).
  if (!checked.ok) throw bad(checked.error.replace(/(^|; )policy\b/g, `$1${field}`).replace(/(^|; )"/g, `$1"${field}.`));
  const policy = checked.value;
  // `dependsOn` may be left out on the wire; the engine's type has it.
  const spec: ScriptedPolicySpec = policy.type === "text" ? policy : { ...policy, calls: policy.calls.map((c) => ({ ...c, dependsOn: c.dependsOn ?? [] })) };
  const problem = policyProblem(spec, new Set(tools.map((t) => t.name)), field);
  if (problem !== null) throw HttpError.of(problem.code, problem.message);
  return spec;
}

export interface SessionLimits {
  maxPromptBytes: number;
}

/** `POST /v1/sessions` body → a CreateSessionRequest with resolved tool specs. */
export function parseCreateSessionRequest(body: unknown, catalog: ToolCatalog, limits: SessionLimits): CreateSessionRequest {
  const checked = validateCreateSessionBody(requireObjectBody(body));
  if (!checked.ok) throw bad(checked.error);
  const { tools: rawTools, policy: rawPolicy, ...rest } = checked.value;
  const bytes = promptBytes(rest.prompt, rest.system);
  if (bytes > limits.maxPromptBytes) {
    throw HttpError.of(ErrorCode.PayloadTooLarge, `prompt of ${bytes} bytes exceeds the limit of ${limits.maxPromptBytes} bytes (--max-prompt-bytes)`);
  }
  const request: CreateSessionRequest = { ...rest, tools: resolveSessionTools(rawTools, catalog) };
  const policy = validatePolicy(rawPolicy, request.tools ?? []);
  if (policy !== undefined) request.policy = policy;
  delete request.speculation;
  const speculation = validateSpeculation(rest.speculation, policy);
  if (speculation !== undefined) request.speculation = speculation;
  return request;
}

/** `POST /v1/sessions/{id}/interrupts` body. */
export function parseInterruptRequest(body: unknown, maxBytes: number): PostInterruptRequest {
  const checked = validateInterruptBody(requireObjectBody(body));
  if (!checked.ok) throw bad(checked.error);
  const bytes = Buffer.byteLength(checked.value.value, "utf8");
  if (bytes > maxBytes) throw HttpError.of(ErrorCode.PayloadTooLarge, `interrupt value of ${bytes} bytes exceeds the limit of ${maxBytes} bytes (--max-prompt-bytes)`);
  return checked.value;
}

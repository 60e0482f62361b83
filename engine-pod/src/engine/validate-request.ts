/**
 * @module Validation of what a request asks of the engine (tools, policy,
 * sampling, prompt shape), as `InterlaceError`s with stable codes the HTTP
 * server maps to 400s. The server validates wire JSON first; this guards the
 * engine's own contract for every caller, with the same wire schemas and
 * checks (`common/src/wire/`).
 */
import {
  ErrorCode,
  InterlaceError,
  TOOL_NAME_PATTERN,
  type AnswerFormat,
  type ChatMessage,
  type CreateSessionRequest,
  type ResponseFormat,
  type ScriptedPolicySpec,
  type ToolSpec,
} from "../../../common/src/index.js";
import { compileSchema, inlineLocalRefs, policyProblem, responseFormatSchema, validateSampling, validateScriptedPolicy } from "../../../common/src/wire/index.js";

/** Temperature is a number in 0..2; seed a 32-bit non-negative integer. */
export function checkSampling(temperature: number | undefined, seed: number | undefined): void {
  const checked = validateSampling({ ...(temperature !== undefined ? { temperature } : {}), ...(seed !== undefined ? { seed } : {}) });
  if (!checked.ok) throw new InterlaceError(ErrorCode.BadRequest, checked.error);
}

/**
 * The request's prompt as messages (a `system` text goes first unless the
 * list has its own); an `instruction` (what an answer format tells the
 * model) ends the system message, or is one.
 */
export function toMessages(prompt: CreateSessionRequest["prompt"], system: string | undefined, instruction?: string): ChatMessage[] {
  let messages: ChatMessage[];
  if (typeof prompt === "string") {
    if (prompt === "") throw new InterlaceError(ErrorCode.BadRequest, "prompt must not be empty");
    messages = [...(system !== undefined ? [{ role: "system" as const, content: system }] : []), { role: "user", content: prompt }];
  } else {
    if (!Array.isArray(prompt) || prompt.length === 0) throw new InterlaceError(ErrorCode.BadRequest, "prompt must be a string or a non-empty message list");
    const hasSystem = prompt[0]?.role === "system";
    messages = !hasSystem && system !== undefined ? [{ role: "system", content: system }, ...prompt] : prompt;
  }
  if (instruction === undefined) return messages;
  const first = messages[0];
  if (first?.role !== "system") return [{ role: "system", content: instruction }, ...messages];
  return [{ ...first, content: first.content === "" ? instruction : `${first.content}\n\n${instruction}` }, ...messages.slice(1)];
}

const validateResponseFormat = compileSchema<ResponseFormat>(responseFormatSchema, "responseFormat");

/**
 * A session's `responseFormat` as the engine's answer format (`text`: none),
 * its schema's local `$ref`s inlined; a bad one is a `bad_request` naming it.
 */
export function answerFormatOf(format: ResponseFormat | undefined): AnswerFormat | undefined {
  if (format === undefined) return undefined;
  const checked = validateResponseFormat(format);
  if (!checked.ok) throw new InterlaceError(ErrorCode.BadRequest, `responseFormat: ${checked.error}`);
  if (format.type === "text") return undefined;
  if (format.type === "json_object") return { type: "json_object" };
  const inlined = inlineLocalRefs(format.json_schema.schema, "responseFormat.json_schema.schema");
  if (!inlined.ok) throw new InterlaceError(ErrorCode.BadRequest, inlined.error);
  return { type: "json_schema", schema: inlined.value };
}

/** Tools by name; names must match `TOOL_NAME_PATTERN` and be unique. */
export function validateTools(tools: readonly ToolSpec[]): Map<string, ToolSpec> {
  const byName = new Map<string, ToolSpec>();
  for (const t of tools) {
    if (typeof t?.name !== "string" || !TOOL_NAME_PATTERN.test(t.name)) {
      throw new InterlaceError(ErrorCode.BadRequest, `invalid tool name ${JSON.stringify(t?.name)}`);
    }
    if (byName.has(t.name)) throw new InterlaceError(ErrorCode.BadRequest, `duplicate tool "${t.name}"`);
    byName.set(t.name, t);
  }
  return byName;
}

/** A policy's calls use known tools (`unknown_tool` otherwise), identifier ids and known dependencies. */
export function validatePolicy(policy: ScriptedPolicySpec, tools: ReadonlyMap<string, ToolSpec>): void {
  const checked = validateScriptedPolicy(policy);
  if (!checked.ok) throw new InterlaceError(ErrorCode.BadRequest, checked.error);
  const problem = policyProblem(policy, new Set(tools.keys()));
  if (problem !== null) throw new InterlaceError(problem.code, problem.message);
}

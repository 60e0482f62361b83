/**
 * @module Validation of what a request asks of the engine (tools, policy,
 * sampling, prompt shape), as `InterlaceError`s with stable codes the HTTP
 * server maps to 400s. The server validates wire JSON first; this guards the
 * engine's own contract for every caller.
 */
import {
  ErrorCode,
  InterlaceError,
  TOOL_NAME_PATTERN,
  type ChatMessage,
  type CreateSessionRequest,
  type ScriptedPolicySpec,
  type ToolSpec,
} from "../../../common/src/index.js";

/** Temperature is a number >= 0; seed a non-negative integer. */
export function checkSampling(temperature: number | undefined, seed: number | undefined): void {
  if (temperature !== undefined && !(Number.isFinite(temperature) && temperature >= 0)) {
    throw new InterlaceError(ErrorCode.BadRequest, "temperature must be a number >= 0");
  }
  if (seed !== undefined && !(Number.isInteger(seed) && seed >= 0)) throw new InterlaceError(ErrorCode.BadRequest, "seed must be a non-negative integer");
}

/** The request's prompt as messages (a `system` text goes first unless the list has its own). */
export function toMessages(prompt: CreateSessionRequest["prompt"], system: string | undefined): ChatMessage[] {
  if (typeof prompt === "string") {
    if (prompt === "") throw new InterlaceError(ErrorCode.BadRequest, "prompt must not be empty");
    return [...(system !== undefined ? [{ role: "system" as const, content: system }] : []), { role: "user", content: prompt }];
  }
  if (!Array.isArray(prompt) || prompt.length === 0) throw new InterlaceError(ErrorCode.BadRequest, "prompt must be a string or a non-empty message list");
  const hasSystem = prompt[0]?.role === "system";
  return !hasSystem && system !== undefined ? [{ role: "system", content: system }, ...prompt] : prompt;
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
  if (policy.type === "text") {
    if (!Array.isArray(policy.pieces)) throw new InterlaceError(ErrorCode.BadRequest, "policy.pieces must be a list of strings");
    return;
  }
  if (policy.type !== "lpt-dag" || !Array.isArray(policy.calls)) throw new InterlaceError(ErrorCode.BadRequest, "unknown policy");
  const ids = new Set(policy.calls.map((c) => c.id));
  for (const c of policy.calls) {
    if (!tools.has(c.tool)) throw new InterlaceError(ErrorCode.UnknownTool, `policy call "${c.id}" uses unknown tool "${c.tool}"`);
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(c.id)) throw new InterlaceError(ErrorCode.BadRequest, `policy call id "${c.id}" must be an identifier`);
    for (const d of c.dependsOn) if (!ids.has(d)) throw new InterlaceError(ErrorCode.BadRequest, `policy call "${c.id}" depends on unknown "${d}"`);
  }
}

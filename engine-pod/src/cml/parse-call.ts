/**
 * @module Call-body parsing and validation: a call block's body, in JSON
 * (`{"name": ..., "arguments": {...}}`) or Python style (`name(arg=value)`),
 * becomes a tool name and an arguments object validated against the tool's
 * JSON Schema by the project's one validator (`common/src/wire/`). Every
 * failure is a value with a message the model can read in an error
 * interrupt; nothing throws.
 */
import type { ToolSpec } from "../../../common/src/index.js";
import { validateArguments } from "../../../common/src/wire/index.js";
import type { ParsedCall } from "./monitor-api.js";
import { parsePythonCall } from "./python-call.js";
import { propertyOrder } from "./schema.js";

function stripFences(body: string): string {
  const m = /^```[a-zA-Z]*\s*([\s\S]*?)\s*```$/.exec(body);
  return m?.[1] ?? body;
}

type Extracted = { ok: true; name: string; args: Record<string, unknown>; style: "json" | "python" } | { ok: false; code: "malformed_call" | "unknown_tool" | "invalid_arguments"; message: string };

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

function extractJson(body: string): Extracted {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch (err) {
    return { ok: false, code: "malformed_call", message: `malformed_call: invalid JSON (${(err as Error).message})` };
  }
  if (!isPlainObject(value)) return { ok: false, code: "malformed_call", message: 'malformed_call: expected {"name": ..., "arguments": {...}}' };
  const name = value["name"];
  if (typeof name !== "string") return { ok: false, code: "malformed_call", message: 'malformed_call: "name" must be a string' };
  let args = value["arguments"] ?? value["parameters"] ?? {};
  if (typeof args === "string") {
    // OpenAI style: arguments as a JSON-encoded string.
    try {
      args = JSON.parse(args);
    } catch {
      return { ok: false, code: "malformed_call", message: 'malformed_call: "arguments" is a string that is not JSON' };
    }
  }
  if (!isPlainObject(args)) return { ok: false, code: "malformed_call", message: 'malformed_call: "arguments" must be an object' };
  return { ok: true, name, args, style: "json" };
}

function extractPython(body: string, tools: ReadonlyMap<string, ToolSpec>): Extracted {
  const r = parsePythonCall(body);
  if (!r.ok) return { ok: false, code: "malformed_call", message: `malformed_call: ${r.message}` };
  const { name, positional, keywords } = r.call;
  const tool = tools.get(name);
  if (tool === undefined) return { ok: true, name, args: {}, style: "python" }; // reported as unknown_tool by the caller
  const order = propertyOrder(tool.parameters);
  if (positional.length > order.length) {
    return { ok: false, code: "invalid_arguments", message: `invalid_arguments: ${name} takes ${order.length} argument(s), got ${positional.length} positional` };
  }
  const args: Record<string, unknown> = {};
  positional.forEach((v, i) => (args[order[i]!] = v));
  for (const [k, v] of keywords) {
    if (Object.hasOwn(args, k)) return { ok: false, code: "invalid_arguments", message: `invalid_arguments: "${k}" given both by position and by keyword` };
    args[k] = v;
  }
  return { ok: true, name, args, style: "python" };
}

function toolMap(tools: readonly ToolSpec[] | ReadonlyMap<string, ToolSpec>): ReadonlyMap<string, ToolSpec> {
  return tools instanceof Map ? tools : new Map((tools as readonly ToolSpec[]).map((t) => [t.name, t]));
}

/**
 * Parses and validates one call body against the known tools. JSON style
 * when the body starts with `{`, Python style otherwise; surrounding
 * whitespace and a Markdown code fence are tolerated.
 */
export function parseCallBody(body: string, tools: readonly ToolSpec[] | ReadonlyMap<string, ToolSpec>): ParsedCall {
  const text = stripFences(body.trim());
  if (text === "") return { ok: false, code: "malformed_call", message: "malformed_call: empty call body" };
  const byName = toolMap(tools);
  const ex = text.startsWith("{") ? extractJson(text) : extractPython(text, byName);
  if (!ex.ok) return ex;
  const tool = byName.get(ex.name);
  if (tool === undefined) {
    const known = [...byName.keys()].join(", ");
    return { ok: false, code: "unknown_tool", message: `unknown_tool: "${ex.name}" is not a tool (available: ${known === "" ? "none" : known})` };
  }
  const valid = validateArguments(tool.parameters, ex.args, tool.name);
  if (!valid.ok) return { ok: false, code: "invalid_arguments", message: `invalid_arguments: ${valid.error}` };
  return { ok: true, tool: tool.name, arguments: ex.args, style: ex.style };
}

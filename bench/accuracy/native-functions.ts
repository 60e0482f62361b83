/**
 * @module The tools in the model's own (node-llama-cpp) function-call format,
 * defined once for the samples a native fine-tune learns from and for the
 * session the accuracy bench runs it in. node-llama-cpp's call grammar
 * writes every property of an object schema, in the schema's order (its
 * `required` has no effect), so an optional parameter becomes nullable and a
 * null means "left out": the samples write omitted parameters as null, in
 * schema order, and the bench drops nulls before scoring.
 */
import { ChatMLChatWrapper, resolveChatWrapper, type ChatModelFunctions, type ChatWrapper, type LlamaModel } from "node-llama-cpp";
import type { ToolSpec } from "../../common/src/index.js";

type Schema = { type?: unknown; properties?: Record<string, unknown>; required?: readonly string[]; [k: string]: unknown };

/** The parameters' schema with each optional top-level property made nullable. */
export function nativeParamsSchema(parameters: ToolSpec["parameters"]): Schema {
  const schema = parameters as Schema;
  if (schema.properties === undefined) return schema;
  const required = new Set(schema.required ?? []);
  const properties = Object.fromEntries(
    Object.entries(schema.properties).map(([k, v]) => [k, required.has(k) ? v : { oneOf: [v, { type: "null" }], ...((v as Schema).description !== undefined ? { description: (v as Schema).description } : {}) }]),
  );
  return { ...schema, properties };
}

/** The chat wrapper that renders the model's conversations in its own format (ChatML where none is known): the one the samples and the bench both use. */
export function nativeChatWrapper(model: LlamaModel): ChatWrapper {
  return resolveChatWrapper(model, { warningLogs: false }) ?? new ChatMLChatWrapper();
}

/** The functions as the chat session documents them to the model and constrains their calls. */
export function nativeFunctions(tools: readonly ToolSpec[]): ChatModelFunctions {
  return Object.fromEntries(tools.map((t) => [t.name, { description: t.description, params: nativeParamsSchema(t.parameters) as never }]));
}

/** A call's arguments as the grammar writes them: every property in schema order, null where omitted. */
export function toNativeParams(tool: ToolSpec, args: Record<string, unknown>): Record<string, unknown> {
  const properties = (tool.parameters as Schema).properties;
  if (properties === undefined) return args;
  return Object.fromEntries(Object.keys(properties).map((k) => [k, args[k] ?? null]));
}

/** Back from the native form: null-valued parameters were left out. */
export function fromNativeParams(params: unknown): Record<string, unknown> {
  if (params === null || typeof params !== "object" || Array.isArray(params)) return {};
  return Object.fromEntries(Object.entries(params as Record<string, unknown>).filter(([, v]) => v !== null));
}

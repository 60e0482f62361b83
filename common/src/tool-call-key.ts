/**
 * @module The key of one tool call: tool name + canonical arguments, the same
 * canonical JSON the replay recordings use (object keys sorted at every level;
 * numbers as JSON prints them, so `1e3`, `1000` and `1000.0` are one key). The
 * speculative tool cache, the `cache-tool-output` API and clients all key
 * calls with it, so a result cached by one is found by the others.
 */
import { canonicalJson } from "./builtin-tools/replay.js";

/**
 * `name` + NUL + canonical JSON of the arguments (NUL cannot appear in a tool
 * name). Without arguments: the key of "any call of this tool" (a cached
 * output posted by name only).
 */
export function toolCallKey(tool: string, args: Readonly<Record<string, unknown>> | undefined): string {
  return args === undefined ? `${tool}\u0000*` : `${tool}\u0000${canonicalJson(args)}`;
}

/** Whether a value is a plain JSON object (what a call's arguments must be). */
export function isArgumentsObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

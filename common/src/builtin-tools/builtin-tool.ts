/**
 * @module The builtin tool contract shared by the engine's in-process
 * executor and the NATS tool runner: a ToolSpec plus a `run` that takes
 * schema-shaped arguments and an abort signal and resolves with the text the
 * model reads after `[HEAD]`. A thrown error is the tool's failure; callers
 * turn it into an error result (`tool_failed`).
 */
import type { ToolSpec } from "../tools.js";

export interface BuiltinTool {
  readonly spec: ToolSpec;
  /**
   * Runs the tool. Rejects on failure (with a message the model can read) and
   * with the signal's reason when aborted; must stop its work on abort.
   */
  run(args: Record<string, unknown>, signal: AbortSignal): Promise<string>;
}

/** A user-facing failure of a builtin tool (bad argument, arithmetic error). */
export class BuiltinToolError extends Error {
  override readonly name = "BuiltinToolError";
}

/** Reads a required argument of the given JS type, or throws a readable error. */
export function requireArg<T extends "string" | "number">(
  tool: string,
  args: Record<string, unknown>,
  key: string,
  type: T,
): T extends "string" ? string : number {
  const value = args[key];
  if (typeof value !== type || (type === "number" && !Number.isFinite(value))) {
    throw new BuiltinToolError(`${tool}: argument "${key}" must be a ${type}, got ${describe(value)}`);
  }
  return value as T extends "string" ? string : number;
}

function describe(value: unknown): string {
  if (value === undefined) return "nothing";
  const json = JSON.stringify(value);
  return json.length > 40 ? `${json.slice(0, 40)}…` : json;
}

/**
 * Resolves after `ms` milliseconds, or rejects with the signal's reason as
 * soon as it aborts (the timer is cleared, so nothing keeps running).
 */
export function abortableDelay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * @module Latency-simulating builtins: `sleep` waits the number of
 * milliseconds it is given, and {@link createLatencyTool} makes a named tool
 * with a fixed latency and output (demo "search"/"weather" tools whose
 * `estimatedLatencyMs` the model sees as its LPT hint).
 */
import { abortableDelay, BuiltinToolError, requireArg, type BuiltinTool } from "./builtin-tool.js";

export const SLEEP_TOOL_NAME = "sleep";
/** Longest wait `sleep` accepts, so a bad argument cannot park a call for hours. */
export const SLEEP_MAX_MS = 600_000;

export function createSleepTool(): BuiltinTool {
  return {
    spec: {
      name: SLEEP_TOOL_NAME,
      description: "Waits the given number of milliseconds, then returns. Simulates a slow tool.",
      parameters: {
        type: "object",
        properties: {
          ms: { type: "integer", minimum: 0, maximum: SLEEP_MAX_MS, description: "How long to wait, in milliseconds." },
          result: { type: "string", description: "Text to return after the wait (default: \"slept <ms> ms\")." },
        },
        required: ["ms"],
        additionalProperties: false,
      },
      estimatedLatencyMs: 1000,
      idempotent: true,
    },
    run: async (args, signal) => {
      const ms = requireArg(SLEEP_TOOL_NAME, args, "ms", "number");
      if (!Number.isInteger(ms) || ms < 0 || ms > SLEEP_MAX_MS) {
        throw new BuiltinToolError(`${SLEEP_TOOL_NAME}: "ms" must be an integer in 0..${SLEEP_MAX_MS}, got ${ms}`);
      }
      const result = args["result"];
      await abortableDelay(ms, signal);
      return typeof result === "string" ? result : `slept ${ms} ms`;
    },
  };
}

export interface LatencyToolOptions {
  name: string;
  description: string;
  latencyMs: number;
  /** The output, or a function of the arguments. */
  output: string | ((args: Record<string, unknown>) => string);
  /** JSON schema of the arguments; default: any object. */
  parameters?: Record<string, unknown>;
}

/** A named tool that always takes `latencyMs` and returns `output`. */
export function createLatencyTool(options: LatencyToolOptions): BuiltinTool {
  const { name, description, latencyMs, output } = options;
  return {
    spec: {
      name,
      description,
      parameters: options.parameters ?? { type: "object" },
      estimatedLatencyMs: latencyMs,
      idempotent: true,
    },
    run: async (args, signal) => {
      await abortableDelay(latencyMs, signal);
      return typeof output === "string" ? output : output(args);
    },
  };
}

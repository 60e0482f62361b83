/**
 * @module The `echo` builtin: returns its `text` argument unchanged. The
 * simplest tool for correlation tests and demos.
 */
import { requireArg, type BuiltinTool } from "./builtin-tool.js";

export const ECHO_TOOL_NAME = "echo";

export function createEchoTool(): BuiltinTool {
  return {
    spec: {
      name: ECHO_TOOL_NAME,
      description: "Returns the given text unchanged.",
      parameters: {
        type: "object",
        properties: { text: { type: "string", description: "Text to return." } },
        required: ["text"],
        additionalProperties: false,
      },
      estimatedLatencyMs: 1,
      speculative: true,
      idempotent: true,
    },
    run: async (args, signal) => {
      signal.throwIfAborted();
      return requireArg(ECHO_TOOL_NAME, args, "text", "string");
    },
  };
}

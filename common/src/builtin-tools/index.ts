/**
 * @module Builtin tools, shared by the engine's in-process executor and the
 * NATS tool runner: `echo`, `sleep` (and fixed-latency tools), `calculator`
 * and `replay`. {@link createBuiltinTools} gives the default set by name.
 */
import type { ToolSpec } from "../tools.js";
import type { BuiltinTool } from "./builtin-tool.js";
import { createCalculatorTool } from "./calculator.js";
import { createEchoTool } from "./echo.js";
import { createReplayTool } from "./replay.js";
import { createSleepTool } from "./sleep.js";

export * from "./builtin-tool.js";
export * from "./echo.js";
export * from "./sleep.js";
export * from "./calculator.js";
export * from "./replay.js";

/** Tools by name. */
export type BuiltinToolSet = ReadonlyMap<string, BuiltinTool>;

/** The default builtins (`echo`, `sleep`, `calculator`, `replay`), plus `extra` (later names win). */
export function createBuiltinTools(extra: Iterable<BuiltinTool> = []): BuiltinToolSet {
  const tools = new Map<string, BuiltinTool>();
  for (const tool of [createEchoTool(), createSleepTool(), createCalculatorTool(), createReplayTool(), ...extra]) {
    tools.set(tool.spec.name, tool);
  }
  return tools;
}

/** The specs of a tool set, in insertion order. */
export function builtinToolSpecs(tools: BuiltinToolSet = createBuiltinTools()): ToolSpec[] {
  return [...tools.values()].map((tool) => tool.spec);
}

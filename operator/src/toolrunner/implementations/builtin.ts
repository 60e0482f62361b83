/**
 * @module The `builtin` implementation: the shared builtin tools
 * (`common/src/builtin-tools`: echo, sleep, calculator, replay) run inside
 * the runner process.
 */
import { createBuiltinTools, type BuiltinTool } from "../../../../common/src/builtin-tools/index.js";
import type { ToolImpl } from "./tool-impl.js";

const builtins = createBuiltinTools();

/** Builtin names the runner knows. */
export function builtinNames(): string[] {
  return [...builtins.keys()];
}

/** The builtin `name`, or null when there is none. */
export function createBuiltinImpl(name: string): ToolImpl | null {
  const tool: BuiltinTool | undefined = builtins.get(name);
  if (tool === undefined) return null;
  return { run: (args, ctx) => tool.run(args, ctx.signal) };
}

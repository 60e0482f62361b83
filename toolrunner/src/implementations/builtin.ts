/**
 * @module The `builtin` implementation: the shared builtin tools
 * (`common/src/builtin-tools`: echo, sleep, calculator, replay) run inside
 * the runner process.
 */
import { canonicalJson, createBuiltinTools, createReplayTool, REPLAY_TOOL_NAME, type BuiltinTool } from "../../../common/src/builtin-tools/index.js";
import type { ReplayRecording } from "../../../common/src/protocol/index.js";
import type { ToolSpec } from "../../../common/src/index.js";
import type { ToolImpl } from "./tool-impl.js";

const builtins = createBuiltinTools();

/** Builtin names the runner knows. */
export function builtinNames(): string[] {
  return [...builtins.keys()];
}

/**
 * The builtin `name`, or null when there is none. With `recordings`, the
 * `replay` builtin plays them back for `spec` (matched by canonical
 * arguments), and `fallback` for arguments no recording has.
 */
export function createBuiltinImpl(name: string, spec?: ToolSpec, recordings?: readonly ReplayRecording[], fallback?: { output: string; latencyMs: number }): ToolImpl | null {
  if (recordings !== undefined) {
    if (name !== REPLAY_TOOL_NAME) throw new Error(`tool "${spec?.name ?? name}": recordings are for the "${REPLAY_TOOL_NAME}" builtin, not "${name}"`);
    const table = new Map(recordings.map((r) => [canonicalJson(r.arguments), { output: r.output, latencyMs: r.latencyMs, ...(r.failed ? { failed: true } : {}) }]));
    const replay = createReplayTool({ table, ...(spec !== undefined ? { spec } : {}), ...(fallback !== undefined ? { fallback } : {}) });
    return { run: (args, ctx) => replay.run(args, ctx.signal) };
  }
  const tool: BuiltinTool | undefined = builtins.get(name);
  if (tool === undefined) return null;
  return { run: (args, ctx) => tool.run(args, ctx.signal) };
}

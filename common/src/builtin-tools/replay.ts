/**
 * @module The `replay` builtin, for benchmarks: returns a recorded output
 * after a recorded latency. Either the call's arguments carry the recording
 * (`{output, latencyMs}`), or a table supplied at construction maps each
 * canonical argument object to its recording (a recorded tool of any name
 * and schema, e.g. a BFCL function).
 */
import type { ToolSpec } from "../tools.js";
import { abortableDelay, BuiltinToolError, requireArg, type BuiltinTool } from "./builtin-tool.js";

export const REPLAY_TOOL_NAME = "replay";

/** One recorded tool run. */
export interface ReplayRecord {
  output: string;
  latencyMs: number;
  /** A recorded failure: the tool rejects with `output` as its message. */
  failed?: boolean;
}

export interface ReplayToolOptions {
  /** The recorded tool's spec; default: the `replay` tool taking `{output, latencyMs}`. */
  spec?: ToolSpec;
  /** Recordings keyed by {@link canonicalJson} of the arguments; without it the arguments carry the recording. */
  table?: ReadonlyMap<string, ReplayRecord> | Readonly<Record<string, ReplayRecord>>;
  /** Played when the table has no entry for the arguments; without it such a call fails. */
  fallback?: ReplayRecord;
}

/** JSON with object keys sorted at every level: equal argument objects give equal strings. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, sortKeys((value as Record<string, unknown>)[k])]),
    );
  }
  return value;
}

const ARGUMENT_SPEC: ToolSpec = {
  name: REPLAY_TOOL_NAME,
  description: "Returns the given output after the given latency (a recorded tool run).",
  parameters: {
    type: "object",
    properties: {
      output: { type: "string", description: "The recorded output." },
      latencyMs: { type: "integer", minimum: 0, maximum: 600000, description: "The recorded latency, ms." },
    },
    required: ["output", "latencyMs"],
    additionalProperties: false,
  },
  estimatedLatencyMs: 1000,
  idempotent: true,
};

export function createReplayTool(options: ReplayToolOptions = {}): BuiltinTool {
  const table = options.table === undefined ? undefined : options.table instanceof Map ? options.table : new Map(Object.entries(options.table));
  const spec = options.spec ?? ARGUMENT_SPEC;
  const lookup = (args: Record<string, unknown>): ReplayRecord => {
    if (table === undefined) {
      const latencyMs = requireArg(spec.name, args, "latencyMs", "number");
      if (latencyMs < 0 || latencyMs > 600_000) throw new BuiltinToolError(`${spec.name}: "latencyMs" must be in 0..600000, got ${latencyMs}`);
      return { output: requireArg(spec.name, args, "output", "string"), latencyMs };
    }
    const key = canonicalJson(args);
    const record = (table as ReadonlyMap<string, ReplayRecord>).get(key) ?? options.fallback;
    if (record === undefined) throw new BuiltinToolError(`${spec.name}: no recording for arguments ${key}`);
    return record;
  };
  return {
    spec,
    run: async (args, signal) => {
      const record = lookup(args);
      await abortableDelay(record.latencyMs, signal);
      if (record.failed === true) throw new BuiltinToolError(record.output);
      return record.output;
    },
  };
}

/**
 * @module Client-side speculation at a turn start (paper Algorithm 2, lines
 * 3–11): of the draft's predicted calls take at most λ, and start each one
 * that names a tool marked `speculative` (stateless, cheap, idempotent — never
 * any other) and is not cached yet, through the engine's Executor. Its future
 * goes into the session's tool cache, where the main model's matching call
 * finds it. At most `maxInFlight` speculative calls of a session run at once.
 */
import { randomUUID } from "node:crypto";
import { ErrorCode, type ToolSpec } from "../../../common/src/index.js";
import { errorOutcome } from "../../../common/src/wire/index.js";
import type { Executor, ToolCall, ToolResult } from "../executor/executor.js";
import type { ToolCache } from "./tool-cache.js";

/** A call the draft predicts. */
export interface PredictedCall {
  tool: string;
  arguments: Record<string, unknown>;
}

export interface SpeculationSettings {
  /** Predictions used per turn (λ). */
  lambda: number;
  /** Speculative calls of one session running at once. */
  maxInFlight: number;
}

export type SkipReason = "over_lambda" | "unknown_tool" | "not_speculative" | "cached" | "max_in_flight";

export interface PlanOutcome {
  started: PredictedCall[];
  skipped: { call: PredictedCall; reason: SkipReason }[];
}

/** Time budget of a speculative call: its estimate ×10, at least 60 s (as for real calls). */
function deadlineFor(spec: ToolSpec): number {
  const budget = Math.max(60_000, (spec.estimatedLatencyMs ?? 0) * 10);
  return Date.now() + budget;
}

/**
 * Starts the speculative calls of one turn. `tools` are the session's tools by
 * name; `signal` (the session's) aborts every call it started.
 */
export function startSpeculation(args: {
  sessionId: string;
  predictions: readonly PredictedCall[];
  tools: ReadonlyMap<string, ToolSpec>;
  settings: SpeculationSettings;
  executor: Executor;
  cache: ToolCache;
  signal?: AbortSignal;
}): PlanOutcome {
  const { sessionId, predictions, tools, settings, executor, cache } = args;
  const out: PlanOutcome = { started: [], skipped: [] };
  let inFlight = cache.entries(sessionId).filter((e) => e.source === "speculative" && e.result === undefined).length;
  predictions.forEach((call, i) => {
    if (i >= settings.lambda) return out.skipped.push({ call, reason: "over_lambda" });
    const spec = tools.get(call.tool);
    if (spec === undefined) return out.skipped.push({ call, reason: "unknown_tool" });
    if (spec.speculative !== true) return out.skipped.push({ call, reason: "not_speculative" });
    if (cache.peek(sessionId, call.tool, call.arguments) !== undefined) return out.skipped.push({ call, reason: "cached" });
    if (inFlight >= settings.maxInFlight) return out.skipped.push({ call, reason: "max_in_flight" });
    const abort = new AbortController();
    args.signal?.addEventListener("abort", () => abort.abort(), { once: true });
    const toolCall: ToolCall = {
      id: `spec_${randomUUID().slice(0, 8)}`,
      sessionId,
      tool: call.tool,
      arguments: call.arguments,
      spec,
      deadline: deadlineFor(spec),
    };
    const t0 = performance.now();
    let future: Promise<ToolResult>;
    try {
      future = executor.execute(toolCall, abort.signal);
    } catch (err) {
      future = Promise.resolve({ callId: toolCall.id, ...errorOutcome(ErrorCode.ToolFailed, err instanceof Error ? err.message : String(err)) });
    }
    // The tool's own time, for wasted-time accounting when the executor does not report it.
    const timed = future.then((r) => (r.runMs !== undefined ? r : { ...r, runMs: performance.now() - t0 }));
    cache.put(sessionId, call.tool, call.arguments, timed, { source: "speculative", abort });
    inFlight++;
    out.started.push(call);
    return undefined;
  });
  return out;
}

/**
 * @module The human reasons of the autoscaler's decisions, one sentence per
 * pool with the signals that decided it, e.g. "scaled ToolPool weather 2→4:
 * 1.6 calls/s × 2.0 s per call at 75% target, 0 calls pending, 2 running (1
 * per runner)", "... 37 calls pending, 16 running, p90 tool wait 2.1 s
 * (budget 0.8 s)", "... 3 calls pending, 4 running (1 per runner), p90 tool
 * wait 0.4 s, last pending call's forecast wait 2.2 s (budget 2.0 s)" or
 * "scaled EnginePool qwen 1→2: ..., TTFT p90 1.4 s over the SLO's 1.0 s". Status,
 * Events and logs all carry these strings.
 */
import type { Bounds, Stabilized } from "./stabilize.js";
import type { EngineDemand } from "./engine-demand.js";
import type { RunnerDemand } from "./runner-demand.js";
import { ENGINE_SEQUENCE_TARGET, TOOL_TARGET_UTILISATION } from "./policy.js";

export type PoolKindName = "EnginePool" | "ToolPool";

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** "scaled ToolPool weather 2→4", "woke EnginePool qwen 0→1" or "ToolPool weather stays at 2". */
export function headline(kind: PoolKindName, name: string, current: number, desired: number): string {
  if (desired === current) return `${kind} ${name} stays at ${current}`;
  return `${current === 0 ? "woke" : "scaled"} ${kind} ${name} ${current}→${desired}`;
}

/** What the bounds or the window did, when they decided rather than the demand. */
function stabilization(s: Stabilized, b: Bounds, unit: string): string | null {
  switch (s.by) {
    case "below-min":
      return `below minReplicas ${b.minReplicas}`;
    case "above-max":
      return `above maxReplicas ${b.maxReplicas}`;
    case "capped":
      return `capped at maxReplicas ${b.maxReplicas}`;
    case "idle":
      return `idle for ${b.idleSecondsBeforeZero} s`;
    case "window":
      return `at most ${plural(s.peak, unit)} wanted over the last ${b.scaleDownStabilizationSeconds} s`;
    case "hold-window":
      return `fewer wanted, waiting out the ${b.scaleDownStabilizationSeconds} s stabilization window`;
    case "no-signal":
      return "no live signal";
    case "demand":
    case "steady":
    case "wake":
      return null;
  }
}

export function toolReason(name: string, current: number, s: Stabilized, b: Bounds, d: RunnerDemand, concurrency: number): string {
  const facts = [`${plural(d.pending, "call")} pending`, `${d.running} running (${concurrency} per runner)`];
  // The offered-load rule's inputs, first: what the count follows before any call waits.
  if (d.offered !== undefined) facts.unshift(`${d.offered.callsPerSecond.toFixed(1)} calls/s × ${seconds(d.offered.callMs)} per call at ${Math.round(TOOL_TARGET_UTILISATION * 100)}% target`);
  const budget = d.waitBudgetMs !== undefined ? ` (budget ${seconds(d.waitBudgetMs)})` : "";
  // The forecast for the calls still waiting, next to the measured wait of those that started: the budget applies to both.
  const forecast = d.forecastWaitMs !== undefined ? `last pending call's forecast wait ${seconds(d.forecastWaitMs)}` : undefined;
  if (d.waitP90Ms !== undefined) facts.push(`p90 tool wait ${seconds(d.waitP90Ms)}${forecast === undefined ? budget : ""}`);
  if (forecast !== undefined) facts.push(`${forecast}${budget}`);
  const why = stabilization(s, b, "runner");
  return `${headline("ToolPool", name, current, s.desired)}: ${[...facts, ...(why === null ? [] : [why])].join(", ")}`;
}

export function engineReason(name: string, current: number, s: Stabilized, b: Bounds, d: EngineDemand): string {
  const l = d.load;
  const held = d.heldRequests > 0 ? [`${plural(d.heldRequests, "request")} held by the router`] : [];
  const facts =
    l.engines === 0
      ? held.length > 0
        ? held
        : ["no engine reports"]
      : [
          ...held,
          `${plural(l.queuedSessions, "session")} queued`,
          `${d.generating} generating on ${plural(l.totalSequences, "sequence")}`,
          `KV ${Math.round(d.kvShare * 100)}% used`,
          `${Math.round(l.tokensPerSecond)} tokens/s`,
        ];
  if (l.ttftP90Ms !== undefined && l.engines > 0) {
    facts.push(`TTFT p90 ${seconds(l.ttftP90Ms)}${d.ttftTargetMs !== undefined ? ` ${d.ttftOverSlo ? "over" : "within"} the SLO's ${seconds(d.ttftTargetMs)}` : ""}`);
  }
  if (d.headroomFrom !== undefined) {
    facts.push(`${d.sequencesHeld} of ${plural(l.totalSequences, "sequence")} held (up from ${d.headroomFrom}), over the ${Math.round(ENGINE_SEQUENCE_TARGET * 100)}% target`);
  }
  if (d.parkedOnTools > 0) {
    // Sessions whose calls run hold their sequences: they are why sequences run out when the tools keep up.
    const onRunning = d.parkedOnTools - d.waitingForRunners;
    const holding = onRunning > 0 ? `, ${onRunning} of them on running calls holding sequences` : "";
    facts.push(`${d.parkedOnTools} waiting on tools${holding}${l.queuedSessions > 0 && !d.backlogged ? " (the tools are the bottleneck)" : ""}`);
  }
  const why = stabilization(s, b, "engine");
  return `${headline("EnginePool", name, current, s.desired)}: ${[...facts, ...(why === null ? [] : [why])].join(", ")}`;
}

/**
 * @module One setting's rows of the speculation bench from its measured
 * modes (no speculation, client-side, client + engine-side, on the same
 * tasks): time per turn, time saved, paired per-task ratios, hit rates, and
 * the paper's equations evaluated at the setting — at the set α for a
 * scripted draft, at the hit rate it reached for a real one (α not set).
 */
import type { CallingMode, SessionEvent } from "../../common/src/index.js";
import { clientSideTimeSaved, clientSideTurnsTimeSaved, engineOverlapTimeSaved, engineSideTimeSaved, type MeasuredTurn } from "../../engine-pod/src/speculation/analytic.js";
import type { BenchTask } from "../bfcl/workloads.js";
import { mean, median, quantile, r3 } from "../lib/stats.js";
import type { FailedTask } from "./run-agents.js";

export type Speculation = "none" | "client" | "client+engine";
export const SPECULATION: readonly Speculation[] = ["none", "client", "client+engine"];

export interface Run {
  task: BenchTask;
  done: Extract<SessionEvent, { type: "done" }>;
  /** The session's turns as its events timed them. */
  segments: { turns: MeasuredTurn[]; tailMs: number };
}

export interface Measured {
  runs: Run[];
  failed: FailedTask[];
  wallMs: number;
}

export interface ResultRow {
  calling_mode: CallingMode;
  speculation: Speculation;
  /** `scripted`: α was set; `model`: a real draft, α is its measured hit rate. */
  draft: "scripted" | "model";
  alpha: number;
  tool_ms: number;
  g_over_G: number;
  /** Mean tool time over the main model's generation time per turn (T/G). */
  t_over_G: number;
  agents: number;
  turn_p50_ms: number;
  turn_p90_ms: number;
  time_saved: number;
  /** The paper's prediction at the set α and the mean T: Eq. 2 (client), Eq. 6 over Eq. 5 (client+engine). */
  predicted_time_saved: number;
  /**
   * The same turn by turn at the measured hit rate: Eq. 1 on each measured turn of the
   * no-speculation runs (client); Eq. 6 with Eq. 1's overlap, a hit waiting for g + T_i (client+engine).
   */
  predicted_per_turn_time_saved: number;
  /** Median over tasks of (turn time in this mode / the same task's turn time without speculation). */
  paired_ratio_p50: number;
  hit_rate: number;
  wasted_tool_ms: number;
  draft_tokens_accepted: number;
  tokens_per_s: number;
}

/** Hits over hits and misses of a mode's runs. */
export function hitRateOf(runs: readonly Run[]): number {
  const hits = runs.reduce((a, r) => a + (r.done.speculation?.hits ?? 0), 0);
  const misses = runs.reduce((a, r) => a + (r.done.speculation?.misses ?? 0), 0);
  return hits + misses === 0 ? 0 : hits / (hits + misses);
}

/** The rows of one (calling mode, α, T, M) setting; `alpha` NaN marks a real draft. */
export function summarize(
  measured: Map<Speculation, Measured>,
  s: { calling: CallingMode; alpha: number; toolMs: number; agents: number; thinkTokens: number },
): ResultRow[] {
  const turns = (runs: Run[]): number[] => runs.map((r) => r.done.timings.totalMs / r.task.calls.length);
  const none = measured.get("none")!;
  const noneTurn = mean(turns(none.runs));
  // Paired: each task against its own no-speculation run (same task, same seeds).
  const noneByTask = new Map(none.runs.map((r) => [r.task.id, r.done.timings.totalMs]));
  const paired = (runs: Run[]): number => median(runs.map((r) => r.done.timings.totalMs / noneByTask.get(r.task.id)!));
  // T: the tools' mean duration; G: the rest of a turn without speculation; g: the draft's mean run.
  const T = mean(none.runs.flatMap((r) => r.task.calls.map((c) => c.latencyMs)));
  const G = Math.max(1, noneTurn - T);
  const client = measured.get("client")!;
  const draftRuns = client.runs.reduce((a, r) => a + (r.done.speculation?.draftRuns ?? 0), 0);
  const g = draftRuns === 0 ? 0 : client.runs.reduce((a, r) => a + (r.done.speculation?.draftMs ?? 0), 0) / draftRuns;
  // A real draft (α not set): the equations at the hit rate it reached.
  const clientRate = hitRateOf(client.runs);
  const alphaUsed = Number.isNaN(s.alpha) ? clientRate : s.alpha;
  // Eq. 5/6 inputs from the no-speculation runs: δ = TPOT, φ = TTFT per prompt token, o = 0 (the engine keeps KV resident).
  const delta = mean(none.runs.map((r) => r.done.timings.tpotMs));
  const phi = mean(none.runs.map((r) => r.done.timings.ttftMs / Math.max(1, r.done.usage.promptTokens)));
  const engineParams = none.runs.map((r) => {
    const K = r.task.calls.length;
    const callTokens = Math.max(1, (r.done.usage.decodedTokens - s.thinkTokens * K) / K);
    return {
      alpha: alphaUsed,
      overhead: 0,
      prefillPerToken: phi,
      decodePerToken: delta,
      promptTokens: r.done.usage.promptTokens,
      turns: r.task.calls.map((c) => ({ callTokens, outputTokens: 3, reasoningTokens: s.thinkTokens, toolTime: c.latencyMs })),
    };
  });
  const engineSaved = mean(engineParams.map((p) => engineSideTimeSaved(p)));
  // The same equations turn by turn, at the accuracy the draft reached (the row's hit rate): client,
  // Eq. 1 on each turn of the no-speculation runs as their events timed it (G_i, T_i drawn between
  // 0.5T and 1.5T, the re-entry; at T ≈ G the mean of max{G_i, g + T_i} is well above
  // max{G, g + T}); client+engine, Eq. 6 with Eq. 1's overlap: here the draft, not the client,
  // fills the cache, so a hit still waits for g + T_i.
  const clientPerTurn = (alpha: number): number => clientSideTurnsTimeSaved(none.runs.map((r) => r.segments), alpha, g);
  const overlapPerTurn = (alpha: number): number => mean(engineParams.map((p) => engineOverlapTimeSaved({ ...p, alpha, draftTime: g })));
  return SPECULATION.map((spec) => {
    const m = measured.get(spec)!;
    const t = turns(m.runs);
    const sp = m.runs.map((r) => r.done.speculation);
    const hits = sp.reduce((a, x) => a + (x?.hits ?? 0), 0);
    const misses = sp.reduce((a, x) => a + (x?.misses ?? 0), 0);
    const predicted = spec === "none" ? 0 : spec === "client" ? clientSideTimeSaved({ alpha: alphaUsed, G, g, T }) : engineSaved;
    const hitRate = hits + misses === 0 ? 0 : hits / (hits + misses);
    const perTurn = spec === "none" ? 0 : spec === "client" ? clientPerTurn(hitRate) : overlapPerTurn(hitRate);
    return {
      calling_mode: s.calling,
      speculation: spec,
      draft: Number.isNaN(s.alpha) ? ("model" as const) : ("scripted" as const),
      alpha: r3(alphaUsed),
      tool_ms: s.toolMs,
      g_over_G: r3(g / G),
      t_over_G: r3(T / G),
      agents: s.agents,
      turn_p50_ms: Math.round(quantile(t, 0.5)),
      turn_p90_ms: Math.round(quantile(t, 0.9)),
      time_saved: r3(1 - mean(t) / noneTurn),
      predicted_time_saved: r3(predicted),
      predicted_per_turn_time_saved: r3(perTurn),
      paired_ratio_p50: r3(paired(m.runs)),
      hit_rate: r3(hitRate),
      wasted_tool_ms: Math.round(sp.reduce((a, x) => a + (x?.wastedToolMs ?? 0), 0)),
      draft_tokens_accepted: sp.reduce((a, x) => a + (x?.draftTokensAccepted ?? 0), 0),
      tokens_per_s: r3((m.runs.reduce((a, r) => a + r.done.usage.decodedTokens, 0) / m.wallMs) * 1000),
    };
  });
}

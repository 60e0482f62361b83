/**
 * @module Aggregates task runs into the benchmark's results: per workload and
 * mode the latency percentiles, speedup over `sync` (with prefix reuse: the
 * strongest baseline), tokens, interrupts, traps and the bound ratio; renders
 * the markdown table.
 */
import type { TrapDecision } from "../../common/src/index.js";
import type { ModeName, TaskRun } from "./session-modes.js";
import { mean, median, quantile } from "../lib/stats.js";
import type { WorkloadName } from "./workloads.js";

export interface ResultRow {
  workload: WorkloadName;
  mode: ModeName;
  tasks: number;
  p50_ms: number;
  p10_ms: number;
  p90_ms: number;
  speedup_vs_sync: number;
  /** Median over tasks of measured latency / analytic bound (meaningful for async; given for every mode). */
  bound_ratio: number;
  bound_p50_ms: number;
  tokens_generated_mean: number;
  interrupts_mean: number;
  traps_mean: number;
  trap_decisions: Record<TrapDecision, number>;
  requests_mean?: number;
}

export function aggregate(workload: WorkloadName, mode: ModeName, runs: TaskRun[], bounds: Map<string, number>, syncP50: number | undefined): ResultRow {
  const e2e = runs.map((r) => r.e2eMs);
  const ratios = runs.map((r) => r.e2eMs / (bounds.get(r.taskId) ?? NaN));
  const decisions: Record<TrapDecision, number> = { keep: 0, swap: 0, recompute: 0 };
  for (const r of runs) for (const d of ["keep", "swap", "recompute"] as const) decisions[d] += r.trapDecisions[d];
  const p50 = quantile(e2e, 0.5);
  const requests = runs.map((r) => r.requests).filter((n): n is number => n !== undefined);
  return {
    workload,
    mode,
    tasks: runs.length,
    p50_ms: round(p50),
    p10_ms: round(quantile(e2e, 0.1)),
    p90_ms: round(quantile(e2e, 0.9)),
    speedup_vs_sync: syncP50 === undefined ? NaN : round(syncP50 / p50, 2),
    bound_ratio: round(median(ratios), 3),
    bound_p50_ms: round(median(runs.map((r) => bounds.get(r.taskId) ?? NaN))),
    tokens_generated_mean: round(mean(runs.map((r) => r.tokensGenerated)), 1),
    interrupts_mean: round(mean(runs.map((r) => r.interrupts)), 1),
    traps_mean: round(mean(runs.map((r) => r.traps)), 1),
    trap_decisions: decisions,
    ...(requests.length > 0 ? { requests_mean: round(mean(requests), 1) } : {}),
  };
}

function round(x: number, digits = 0): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

const MODE_LABEL: Record<ModeName, string> = {
  sync: "sync (prefix reuse)",
  syncNoReuse: "sync (no reuse, secondary)",
  syncParallel: "syncParallel",
  asyncNaive: "asyncNaive",
  async: "async",
};

export function markdownTable(rows: ResultRow[]): string {
  const header =
    "| workload | mode | tasks | p50 ms | p10 ms | p90 ms | speedup vs sync | bound p50 ms | bound ratio | tokens/task | interrupts/task | traps/task (keep/swap/recompute) |\n" +
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |";
  const lines = rows.map(
    (r) =>
      `| ${r.workload} | ${MODE_LABEL[r.mode]} | ${r.tasks} | ${r.p50_ms} | ${r.p10_ms} | ${r.p90_ms} | ${Number.isNaN(r.speedup_vs_sync) ? "–" : `${r.speedup_vs_sync.toFixed(2)}x`} | ${r.bound_p50_ms} | ${r.bound_ratio.toFixed(2)} | ${r.tokens_generated_mean} | ${r.interrupts_mean} | ${r.traps_mean} (${r.trap_decisions.keep}/${r.trap_decisions.swap}/${r.trap_decisions.recompute}) |`,
  );
  return [header, ...lines].join("\n");
}

/**
 * @module Aggregates task runs into the benchmark's results: per workload and
 * mode the latency percentiles, speedup over `sync` (with prefix reuse: the
 * strongest baseline; upstream rows over upstream sync), tokens, interrupts, traps and the bound ratio; renders
 * the markdown table.
 */
import type { TrapDecision } from "../../common/src/index.js";
import type { ModeName, TaskRun } from "./session-modes.js";
import type { FailedRun } from "./task-attempt.js";
import { mean, median, quantile } from "../lib/stats.js";
import type { WorkloadName } from "./workloads.js";

export interface ResultRow {
  workload: WorkloadName;
  mode: ModeName;
  /** Tasks that succeeded in this mode (the percentiles' population). */
  tasks: number;
  /** Tasks that failed in this mode, with their reasons. */
  failed: number;
  failures: { taskId: string; reason: string }[];
  p50_ms: number;
  p10_ms: number;
  p90_ms: number;
  /** p50 of sync over p50 of this mode, both over the tasks that succeeded in both. */
  speedup_vs_sync: number;
  /** Tasks behind the speedup (succeeded in this mode and in sync). */
  paired_tasks: number;
  /** Median over tasks of measured latency / analytic bound (meaningful for async; given for every mode). */
  bound_ratio: number;
  bound_p50_ms: number;
  /** The same against the bound with reading (results and user messages prefilled at the measured cost). */
  bound_reads_ratio: number;
  bound_reads_p50_ms: number;
  tokens_generated_mean: number;
  interrupts_mean: number;
  traps_mean: number;
  trap_decisions: Record<TrapDecision, number>;
  requests_mean?: number;
  /** With the model deciding: the share of tasks whose calls are right (BFCL AST), and calls per task. */
  accuracy?: number;
  calls_mean?: number;
}

export function aggregate(
  workload: WorkloadName,
  mode: ModeName,
  runs: readonly TaskRun[],
  failed: readonly FailedRun[],
  bounds: ReadonlyMap<string, number>,
  baseline: readonly TaskRun[] | undefined,
  readBounds: ReadonlyMap<string, number> = new Map(),
): ResultRow {
  const e2e = runs.map((r) => r.e2eMs);
  // A bound exists only where the run that measured its TPOT succeeded.
  const ratios = runs.filter((r) => bounds.has(r.taskId)).map((r) => r.e2eMs / bounds.get(r.taskId)!);
  const readRatios = runs.filter((r) => readBounds.has(r.taskId)).map((r) => r.e2eMs / readBounds.get(r.taskId)!);
  const decisions: Record<TrapDecision, number> = { keep: 0, swap: 0, recompute: 0 };
  for (const r of runs) for (const d of ["keep", "swap", "recompute"] as const) decisions[d] += r.trapDecisions[d];
  const p50 = quantile(e2e, 0.5);
  const requests = runs.map((r) => r.requests).filter((n): n is number => n !== undefined);
  const paired = baseline === undefined ? undefined : pairedSpeedup(baseline, runs);
  return {
    workload,
    mode,
    tasks: runs.length,
    failed: failed.length,
    failures: failed.map((f) => ({ taskId: f.taskId, reason: f.reason })),
    p50_ms: round(p50),
    p10_ms: round(quantile(e2e, 0.1)),
    p90_ms: round(quantile(e2e, 0.9)),
    speedup_vs_sync: paired === undefined ? NaN : round(paired.speedup, 2),
    paired_tasks: paired?.tasks ?? 0,
    bound_ratio: round(median(ratios), 3),
    bound_p50_ms: round(median(runs.filter((r) => bounds.has(r.taskId)).map((r) => bounds.get(r.taskId)!))),
    bound_reads_ratio: round(median(readRatios), 3),
    bound_reads_p50_ms: round(median(runs.filter((r) => readBounds.has(r.taskId)).map((r) => readBounds.get(r.taskId)!))),
    tokens_generated_mean: round(mean(runs.map((r) => r.tokensGenerated)), 1),
    interrupts_mean: round(mean(runs.map((r) => r.interrupts)), 1),
    traps_mean: round(mean(runs.map((r) => r.traps)), 1),
    trap_decisions: decisions,
    ...(requests.length > 0 ? { requests_mean: round(mean(requests), 1) } : {}),
  };
}

/**
 * p50 latency of `baseline` over p50 of `runs`, both over the tasks present
 * in both lists (a task that failed in either mode is left out of both), so
 * a failure cannot make a mode look faster by dropping its slowest task.
 */
export function pairedSpeedup(baseline: readonly TaskRun[], runs: readonly TaskRun[]): { speedup: number; tasks: number } {
  const base = new Map(baseline.map((r) => [r.taskId, r.e2eMs]));
  const both = runs.filter((r) => base.has(r.taskId));
  return {
    speedup: quantile(both.map((r) => base.get(r.taskId)!), 0.5) / quantile(both.map((r) => r.e2eMs), 0.5),
    tasks: both.length,
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
  upstreamSync: "upstream sync (llama.cpp server)",
  upstreamSyncParallel: "upstream syncParallel (llama.cpp server)",
  upstreamAsyncNaive: "upstream asyncNaive (llama.cpp server)",
};

/** A figure for the table; "–" where no task succeeded. */
function n(x: number): string {
  return Number.isNaN(x) ? "–" : String(x);
}

export function markdownTable(rows: ResultRow[]): string {
  const header =
    "| workload | mode | tasks ok | failed | p50 ms | p10 ms | p90 ms | speedup vs sync | bound p50 ms | bound ratio | bound + reads p50 ms | ratio to bound + reads | tokens/task | interrupts/task | traps/task (keep/swap/recompute) |\n" +
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |";
  const scored = rows.some((r) => r.accuracy !== undefined);
  const lines = rows.map(
    (r) =>
      `| ${r.workload} | ${MODE_LABEL[r.mode]} | ${r.tasks}${scored ? ` (${r.accuracy !== undefined ? `${(r.accuracy * 100).toFixed(0)}% right, ${r.calls_mean} calls` : "–"})` : ""} | ${r.failed} | ${n(r.p50_ms)} | ${n(r.p10_ms)} | ${n(r.p90_ms)} | ${Number.isNaN(r.speedup_vs_sync) ? "–" : `${r.speedup_vs_sync.toFixed(2)}x${r.paired_tasks < r.tasks ? ` (${r.paired_tasks} paired)` : ""}`} | ${n(r.bound_p50_ms)} | ${Number.isNaN(r.bound_ratio) ? "–" : r.bound_ratio.toFixed(2)} | ${n(r.bound_reads_p50_ms)} | ${Number.isNaN(r.bound_reads_ratio) ? "–" : r.bound_reads_ratio.toFixed(2)} | ${n(r.tokens_generated_mean)} | ${n(r.interrupts_mean)} | ${n(r.traps_mean)} (${r.trap_decisions.keep}/${r.trap_decisions.swap}/${r.trap_decisions.recompute}) |`,
  );
  return [header, ...lines].join("\n");
}


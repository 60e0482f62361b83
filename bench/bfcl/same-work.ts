/**
 * @module With the model deciding, two modes need not do the same work: a
 * sync session that answers after one call finishes sooner than an async one
 * that makes all three, and is no faster at anything. These pairs compare a
 * mode with a baseline only on the tasks where the model made the same calls
 * in both (same tools with the same arguments, in any order), as the median
 * of the per-task ratios (baseline time over the mode's).
 */
import { toolCallKey } from "../../common/src/index.js";
import { median } from "../lib/stats.js";
import type { TaskRun } from "./session-modes.js";

export interface SameWork {
  /** Tasks run in both modes. */
  paired: number;
  /** Of those, tasks where the model made the same calls in both. */
  tasks: number;
  /** Median of baseline e2e / mode e2e over those tasks (NaN without any). */
  medianRatio: number;
  minRatio: number;
  maxRatio: number;
}

/** The model's calls as the sorted list of their keys (the tool cache's: tool + canonical arguments). */
function callsKey(run: Pick<TaskRun, "modelCalls">): string {
  return JSON.stringify((run.modelCalls ?? []).map((c) => toolCallKey(c.tool, c.arguments)).sort());
}

export function sameWork(baseline: readonly TaskRun[], runs: readonly TaskRun[]): SameWork {
  const base = new Map(baseline.map((r) => [r.taskId, r]));
  const pairs = runs.flatMap((r) => (base.has(r.taskId) ? [[base.get(r.taskId)!, r] as const] : []));
  const ratios = pairs.filter(([b, r]) => callsKey(b) === callsKey(r)).map(([b, r]) => b.e2eMs / r.e2eMs);
  return {
    paired: pairs.length,
    tasks: ratios.length,
    medianRatio: ratios.length > 0 ? median(ratios) : NaN,
    minRatio: ratios.length > 0 ? Math.min(...ratios) : NaN,
    maxRatio: ratios.length > 0 ? Math.max(...ratios) : NaN,
  };
}

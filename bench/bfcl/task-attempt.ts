/**
 * @module One task in one mode, attempted: a failure (an engine error, a
 * wrong number of calls, a hang past the time limit) becomes a recorded
 * `FailedRun` with its reason, and the benchmark carries on with the next
 * run instead of losing the whole run to one task.
 */
import type { ModeName, TaskRun } from "./session-modes.js";

export interface FailedRun {
  taskId: string;
  mode: ModeName;
  reason: string;
}

export type RunOutcome = ({ ok: true } & TaskRun) | ({ ok: false } & FailedRun);

/**
 * Runs `body` with an abort signal that fires after `timeoutMs`; the body
 * must stop its session when it fires (a hung run left going would share the
 * engine with the next one and skew its timings).
 */
export async function attemptRun(
  taskId: string,
  mode: ModeName,
  timeoutMs: number,
  body: (signal: AbortSignal) => Promise<TaskRun>,
): Promise<RunOutcome> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs);
  try {
    return { ok: true, ...(await body(abort.signal)) };
  } catch (err) {
    const reason = abort.signal.aborted ? String((abort.signal.reason as Error).message) : err instanceof Error ? err.message : String(err);
    return { ok: false, taskId, mode, reason };
  } finally {
    clearTimeout(timer);
  }
}

/** Splits outcomes into the runs that succeeded and the recorded failures. */
export function partitionOutcomes(outcomes: readonly RunOutcome[]): { runs: TaskRun[]; failed: FailedRun[] } {
  const runs: TaskRun[] = [];
  const failed: FailedRun[] = [];
  for (const o of outcomes) {
    if (o.ok) {
      const { ok: _ok, ...run } = o;
      runs.push(run);
    } else failed.push({ taskId: o.taskId, mode: o.mode, reason: o.reason });
  }
  return { runs, failed };
}

/**
 * @module M agents working through a task list concurrently. A task that
 * fails (an engine error, a session that did not end normally) is recorded
 * with its reason and the agent takes the next one: one failed task never
 * aborts the run.
 */

/** A task that failed in a mode, and why. */
export interface FailedTask {
  taskId: string;
  reason: string;
}

/** Runs every task once over `agents` concurrent workers; each result or failure is kept. */
export async function runAgents<T extends { id: string }, R>(tasks: readonly T[], agents: number, runOne: (task: T) => Promise<R>): Promise<{ runs: R[]; failed: FailedTask[] }> {
  const queue = [...tasks];
  const runs: R[] = [];
  const failed: FailedTask[] = [];
  await Promise.all(
    Array.from({ length: agents }, async () => {
      for (let task = queue.shift(); task !== undefined; task = queue.shift()) {
        try {
          runs.push(await runOne(task));
        } catch (err) {
          failed.push({ taskId: task.id, reason: err instanceof Error ? err.message : String(err) });
        }
      }
    }),
  );
  return { runs, failed };
}

/** The runs of the tasks that succeeded in every mode compared (paired figures need a task's run in each). */
export function pairedRuns<R extends { task: { id: string } }>(modes: ReadonlyMap<string, readonly R[]>): Map<string, R[]> {
  const all = [...modes.values()];
  const ok = (id: string): boolean => all.every((runs) => runs.some((r) => r.task.id === id));
  return new Map([...modes].map(([mode, runs]) => [mode, runs.filter((r) => ok(r.task.id))]));
}

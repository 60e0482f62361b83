/**
 * @module The analytic latency bound of a task (AsyncLM §6.3, Appendix A):
 * the makespan of the ideal schedule given each call's generation time G (its
 * tokens × the measured time per token) and its tool's actual duration E, with
 * zero system overhead. One generator (the model) emits calls one after
 * another; tools run concurrently without limit; a call may be emitted only
 * once the results it depends on have arrived.
 *
 * For independent calls the LPT list schedule is optimal and its makespan is
 * the closed form L_Async(F) = max_f (E(f) + Σ_{g: E(f) ≤ E(g)} G(g))
 * (Theorem 6.3); for DAGs we simulate the same list schedule, which is the
 * paper's heuristic, not always optimal (§6.3, "LPT under dependencies").
 */

export interface BoundCall {
  id: string;
  /** Generation time of the call block, ms. */
  genMs: number;
  /** Tool execution time, ms. */
  execMs: number;
  dependsOn: readonly string[];
  /** Calls released by a user interrupt at this time (ms from start) are not known before it. */
  releaseMs?: number;
}

export interface ScheduleEntry {
  id: string;
  /** When generation of the call block starts and ends, and when its result arrives. */
  genStart: number;
  genEnd: number;
  done: number;
}

export interface Schedule {
  entries: ScheduleEntry[];
  /** When the last result arrives. */
  lastResultMs: number;
  /** Makespan including the trailing generation after the last result. */
  makespanMs: number;
}

/**
 * LPT list schedule: whenever the generator is free, emit the ready call with
 * the longest execution time (ties: input order); if none is ready, idle until
 * the next result or release. `tailGenMs` is generation after the last result
 * (the final answer), counted in the makespan.
 */
export function lptListSchedule(calls: readonly BoundCall[], tailGenMs = 0, leadGenMs = 0): Schedule {
  const byId = new Map(calls.map((c) => [c.id, c]));
  for (const c of calls)
    for (const d of c.dependsOn) if (!byId.has(d)) throw new Error(`call ${c.id} depends on unknown call ${d}`);
  const done = new Map<string, number>();
  const entries: ScheduleEntry[] = [];
  const pending = new Set(calls.map((c) => c.id));
  let clock = leadGenMs;
  while (pending.size > 0) {
    const readyAt = (c: BoundCall): number => {
      let t = c.releaseMs ?? 0;
      for (const d of c.dependsOn) {
        const finished = done.get(d);
        if (finished === undefined) return Infinity;
        t = Math.max(t, finished);
      }
      return t;
    };
    const ready = calls.filter((c) => pending.has(c.id) && readyAt(c) <= clock);
    if (ready.length === 0) {
      const next = Math.min(...calls.filter((c) => pending.has(c.id)).map(readyAt));
      if (!Number.isFinite(next)) throw new Error("dependency cycle in call DAG");
      clock = next;
      continue;
    }
    const pick = ready.reduce((best, c) => (c.execMs > best.execMs ? c : best));
    const genStart = clock;
    const genEnd = genStart + pick.genMs;
    const finished = genEnd + pick.execMs;
    entries.push({ id: pick.id, genStart, genEnd, done: finished });
    done.set(pick.id, finished);
    pending.delete(pick.id);
    clock = genEnd;
  }
  const lastResultMs = Math.max(clock, ...entries.map((e) => e.done));
  return { entries, lastResultMs, makespanMs: lastResultMs + tailGenMs };
}

/** AsyncLM Eq. (§6.3): L_Async for independent calls under LPT, closed form. */
export function asyncLatencyIndependent(calls: readonly Pick<BoundCall, "genMs" | "execMs">[]): number {
  return Math.max(
    0,
    ...calls.map((f) => f.execMs + calls.filter((g) => f.execMs <= g.execMs).reduce((s, g) => s + g.genMs, 0)),
  );
}

/** L_Sync = Σ G + Σ E. */
export function syncLatency(calls: readonly Pick<BoundCall, "genMs" | "execMs">[]): number {
  return calls.reduce((s, c) => s + c.genMs + c.execMs, 0);
}

/** L_SyncParallel = Σ G + max E (one bundle). */
export function syncParallelLatency(calls: readonly Pick<BoundCall, "genMs" | "execMs">[]): number {
  return calls.reduce((s, c) => s + c.genMs, 0) + Math.max(0, ...calls.map((c) => c.execMs));
}

/** Theorem 6.2: speedup of Async over Sync ≈ 1 + Ē/Ḡ. */
export function predictedSpeedup(meanExecMs: number, meanGenMs: number): number {
  return 1 + meanExecMs / meanGenMs;
}

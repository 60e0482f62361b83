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
 *
 * The paper's bound counts generation only. Any system must also read what
 * arrives (prefill the injected results and user messages) before it can act
 * on it; the schedule can add that generator time as reads, giving a second,
 * tighter-to-reality bound that the benchmark prints beside the first.
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
  /**
   * Generator time to read the call's result once it arrives (prefill of the
   * injected result), ms; dependents wait for the read. Default 0.
   */
  readMs?: number;
}

/**
 * A user message arriving at `atMs` that takes the generator `readMs` to read
 * (prefill); the calls it `releases` may be emitted only after it is read.
 */
export interface BoundUserRead {
  atMs: number;
  readMs: number;
  releases: readonly string[];
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
  /** When the last result arrives (and, with reads, has been read). */
  lastResultMs: number;
  /** Makespan including the trailing generation after the last result. */
  makespanMs: number;
  /** Generator time spent reading results and user messages. */
  readMs: number;
}

/**
 * LPT list schedule: whenever the generator is free, read any result or user
 * message that has arrived (reads come first, as the engine injects at the
 * next token boundary, in arrival order), else emit the ready call with the
 * longest execution time (ties: input order); if nothing is ready, idle until
 * the next result or release. A call block is emitted whole: what arrives
 * meanwhile is read after it. `tailGenMs` is generation after the last
 * result (the final answer), counted in the makespan. With no reads this is
 * the paper's zero-overhead schedule.
 */
export function lptListSchedule(calls: readonly BoundCall[], tailGenMs = 0, leadGenMs = 0, userReads: readonly BoundUserRead[] = []): Schedule {
  const byId = new Map(calls.map((c) => [c.id, c]));
  for (const c of calls)
    for (const d of c.dependsOn) if (!byId.has(d)) throw new Error(`call ${c.id} depends on unknown call ${d}`);
  /** Read-by time of a user message releasing each call. */
  const releasedBy = new Map<string, number>();
  userReads.forEach((u, i) => {
    for (const id of u.releases) {
      if (!byId.has(id)) throw new Error(`user message ${i} releases unknown call ${id}`);
      releasedBy.set(id, i);
    }
  });
  const readDone = new Map<string, number>();
  const userReadDone = new Map<number, number>();
  // Reads waiting for the generator: a call's result from its arrival, a user message from atMs.
  const reads: { key: string | number; at: number; ms: number }[] = userReads.map((u, i) => ({ key: i, at: u.atMs, ms: u.readMs }));
  const entries: ScheduleEntry[] = [];
  const pending = new Set(calls.map((c) => c.id));
  let clock = leadGenMs;
  let readTotal = 0;
  const readyAt = (c: BoundCall): number => {
    let t = c.releaseMs ?? 0;
    const user = releasedBy.get(c.id);
    if (user !== undefined) t = Math.max(t, userReadDone.get(user) ?? Infinity);
    for (const d of c.dependsOn) t = Math.max(t, readDone.get(d) ?? Infinity);
    return t;
  };
  while (pending.size > 0 || reads.length > 0) {
    const arrived = reads.filter((r) => r.at <= clock);
    if (arrived.length > 0) {
      const read = arrived.reduce((first, r) => (r.at < first.at ? r : first));
      reads.splice(reads.indexOf(read), 1);
      clock += read.ms;
      readTotal += read.ms;
      if (typeof read.key === "number") userReadDone.set(read.key, clock);
      else readDone.set(read.key, clock);
      continue;
    }
    const ready = calls.filter((c) => pending.has(c.id) && readyAt(c) <= clock);
    if (ready.length === 0) {
      const next = Math.min(...reads.map((r) => r.at), ...calls.filter((c) => pending.has(c.id)).map(readyAt));
      if (!Number.isFinite(next)) throw new Error("dependency cycle in call DAG");
      clock = next;
      continue;
    }
    const pick = ready.reduce((best, c) => (c.execMs > best.execMs ? c : best));
    const genStart = clock;
    const genEnd = genStart + pick.genMs;
    const finished = genEnd + pick.execMs;
    entries.push({ id: pick.id, genStart, genEnd, done: finished });
    reads.push({ key: pick.id, at: finished, ms: pick.readMs ?? 0 });
    pending.delete(pick.id);
    clock = genEnd;
  }
  const lastResultMs = Math.max(clock, ...entries.map((e) => e.done));
  return { entries, lastResultMs, makespanMs: lastResultMs + tailGenMs, readMs: readTotal };
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

/**
 * @module The request DAG of a program (Parrot §4.2) and the deduction of
 * each request's scheduling preference from the criteria of its final
 * outputs (Parrot §5.2). Pure functions over plain data: calls name the
 * variables they consume and produce; `GetProducer` / `GetConsumers` are the
 * two maps of {@link Dag}.
 *
 * Deduction, walking backwards from the final outputs:
 * - a request upstream of a `throughput` output only is `throughput`;
 * - a request that produces a `latency` output is `latency`;
 * - every other request upstream of a `latency` output sits at a stage: its
 *   longest distance (in requests) to such an output. Requests at one stage
 *   are never ordered among themselves (a path between two would make their
 *   distances differ), so they run in parallel: two or more form a *task
 *   group*, whose completion, not each member's, gates the next stage — it is
 *   admitted together and scheduled for throughput (larger batches). A stage
 *   of one request is on the critical path and stays `latency`.
 * So a chain is all `latency`; a map-reduce is a `latency` reduce after a task
 * group of maps; Parrot's Figure 7 (code → test, both fetched for latency) is
 * two `latency` requests.
 */

export type Criterion = "latency" | "throughput";
export type Objective = "latency" | "task-group" | "throughput";

/** One request as the DAG sees it. */
export interface DagCall {
  id: string;
  /** Variables it consumes (each given as an input value or produced by another call). */
  inputs: readonly string[];
  /** Variables it produces. */
  outputs: readonly string[];
}

export interface Dag {
  calls: ReadonlyMap<string, DagCall>;
  /** GetProducer: variable → the call producing it (absent for given inputs). */
  producer: ReadonlyMap<string, string>;
  /** GetConsumers: variable → calls consuming it. */
  consumers: ReadonlyMap<string, readonly string[]>;
  /** Calls in a topological order (producers before consumers; ties in submission order). */
  order: readonly string[];
  /** Variables nobody consumes (the default final outputs). */
  sinks: readonly string[];
}

export type DagError =
  | { kind: "cycle"; variables: string[]; calls: string[] }
  | { kind: "unknown-variable"; variable: string; call: string }
  | { kind: "duplicate-producer"; variable: string; calls: [string, string] };

export interface Deduced {
  objective: Objective;
  /** Task-group id (`stage-<n>`) for `task-group` requests. */
  group?: string;
  /** Size of its task group. */
  groupSize?: number;
  /** Distance in requests to the nearest-by-longest-path latency output (0: produces one); -1 when not upstream of one. */
  stage: number;
}

/** Admission priority an engine gets per deduced objective (higher first). */
export const OBJECTIVE_PRIORITY: Readonly<Record<Objective, number>> = { latency: 2, "task-group": 1, throughput: 0 };

/** Builds the DAG; `given` are the variables the program supplies values for. */
export function buildDag(calls: readonly DagCall[], given: ReadonlySet<string>): { ok: true; dag: Dag } | { ok: false; error: DagError } {
  const byId = new Map<string, DagCall>();
  const producer = new Map<string, string>();
  const consumers = new Map<string, string[]>();
  for (const c of calls) {
    byId.set(c.id, c);
    for (const v of c.outputs) {
      const other = producer.get(v);
      if (other !== undefined || given.has(v)) return { ok: false, error: { kind: "duplicate-producer", variable: v, calls: [other ?? "(program inputs)", c.id] } };
      producer.set(v, c.id);
    }
  }
  for (const c of calls) {
    for (const v of c.inputs) {
      if (!producer.has(v) && !given.has(v)) return { ok: false, error: { kind: "unknown-variable", variable: v, call: c.id } };
      const list = consumers.get(v) ?? [];
      if (!list.includes(c.id)) list.push(c.id);
      consumers.set(v, list);
    }
  }
  // Kahn's algorithm; what never becomes ready lies on or behind a cycle.
  const missing = new Map(calls.map((c) => [c.id, new Set(c.inputs.filter((v) => producer.has(v))).size]));
  const order: string[] = [];
  const ready = calls.filter((c) => missing.get(c.id) === 0).map((c) => c.id);
  while (ready.length > 0) {
    const id = ready.shift()!;
    order.push(id);
    for (const v of byId.get(id)!.outputs) {
      for (const consumer of consumers.get(v) ?? []) {
        const left = missing.get(consumer)! - 1;
        missing.set(consumer, left);
        if (left === 0) ready.push(consumer);
      }
    }
  }
  if (order.length < calls.length) return { ok: false, error: findCycle(byId, producer, new Set(order)) };
  const sinks = [...producer.keys()].filter((v) => !consumers.has(v));
  return { ok: true, dag: { calls: byId, producer, consumers, order, sinks } };
}

/** A cycle among the calls Kahn's algorithm could not order, as the variables and calls on it. */
function findCycle(calls: ReadonlyMap<string, DagCall>, producer: ReadonlyMap<string, string>, ordered: ReadonlySet<string>): DagError {
  const stuck = [...calls.keys()].filter((id) => !ordered.has(id));
  // Walk backwards through unordered producers: some call must repeat.
  const seen = new Map<string, number>();
  const path: { call: string; via: string }[] = [];
  let at = stuck[0]!;
  for (;;) {
    seen.set(at, path.length);
    const via = calls.get(at)!.inputs.find((v) => {
      const p = producer.get(v);
      return p !== undefined && !ordered.has(p);
    })!;
    path.push({ call: at, via });
    const next = producer.get(via)!;
    const start = seen.get(next);
    if (start !== undefined) {
      const loop = path.slice(start).reverse();
      return { kind: "cycle", variables: loop.map((s) => s.via), calls: loop.map((s) => s.call) };
    }
    at = next;
  }
}

/** Parrot §5.2: each call's preference from the criteria of the final outputs (see the module comment). */
export function deduceObjectives(dag: Dag, finals: ReadonlyMap<string, Criterion>): Map<string, Deduced> {
  const latencyUp = upstreamCalls(
    dag,
    [...finals].filter(([, c]) => c === "latency").map(([v]) => v),
  );
  // Stage: longest distance to a request producing a latency output (consumers are visited before producers).
  const stage = new Map<string, number>();
  for (const id of [...dag.order].reverse()) {
    if (!latencyUp.has(id)) continue;
    const call = dag.calls.get(id)!;
    let s = 0;
    if (!call.outputs.some((v) => finals.get(v) === "latency")) {
      for (const v of call.outputs) for (const c of dag.consumers.get(v) ?? []) if (latencyUp.has(c)) s = Math.max(s, stage.get(c)! + 1);
    }
    stage.set(id, s);
  }
  const atStage = new Map<number, string[]>();
  for (const [id, s] of stage) if (s > 0) atStage.set(s, [...(atStage.get(s) ?? []), id]);
  const out = new Map<string, Deduced>();
  for (const id of dag.order) {
    const s = stage.get(id);
    if (s === undefined) {
      out.set(id, { objective: "throughput", stage: -1 });
      continue;
    }
    const peers = s > 0 ? atStage.get(s)! : [];
    if (s > 0 && peers.length >= 2) out.set(id, { objective: "task-group", group: `stage-${s}`, groupSize: peers.length, stage: s });
    else out.set(id, { objective: "latency", stage: s });
  }
  return out;
}

/**
 * Without deduction (`--program-deduction off`, the baseline Parrot compares
 * against): every request is taken to be latency-critical on its own.
 */
export function latencyOnly(dag: Dag): Map<string, Deduced> {
  return new Map(dag.order.map((id) => [id, { objective: "latency", stage: 0 }]));
}

/** The calls a set of variables needs: their producers and everything upstream of them. */
export function upstreamCalls(dag: Dag, variables: Iterable<string>): Set<string> {
  const out = new Set<string>();
  const stack = [...variables].map((v) => dag.producer.get(v)).filter((p): p is string => p !== undefined);
  while (stack.length > 0) {
    const id = stack.pop()!;
    if (out.has(id)) continue;
    out.add(id);
    for (const v of dag.calls.get(id)!.inputs) {
      const p = dag.producer.get(v);
      if (p !== undefined) stack.push(p);
    }
  }
  return out;
}

/** A DAG error as the sentence a 400 carries. */
export function describeDagError(e: DagError): string {
  switch (e.kind) {
    case "cycle":
      return `the program has a cycle through variables ${e.variables.map((v) => `"${v}"`).join(" → ")} → "${e.variables[0]}" (calls ${e.calls.join(", ")})`;
    case "unknown-variable":
      return `call "${e.call}" reads variable "${e.variable}", which is neither a program input nor produced by any call`;
    case "duplicate-producer":
      return `variable "${e.variable}" is produced twice (by ${e.calls[0]} and ${e.calls[1]}); each variable has one producer`;
  }
}

/**
 * @module One program's run inside the router: the state of every variable
 * and call, the event log its SSE stream replays, and the rule that moves it
 * on. A call is handed to the dispatcher the moment all its inputs have
 * values; a value it produces is stored and flows to its consumers here (no
 * client round trip); a failed call fails its outputs with the cause, and
 * every call reading a failed variable fails the same way, naming the
 * variable and the call where the failure started. The dispatcher (engine
 * I/O) is behind a small interface, so this is a plain state machine.
 *
 * An open program grows as its client makes calls ({@link ProgramRun.extend}).
 * Until it is closed a call runs only once it is *activated*: a final output
 * it feeds was named, by `outputs` or by a `get` with its criterion — as
 * Parrot activates a request chain on `get`, so the deduction sees the DAG
 * the value depends on before anything in it runs. Cancelling fails every
 * value not yet produced with `cancelled` and aborts the calls in flight
 * ({@link ProgramRun.signal}).
 *
 * Every router replica holds a run of a program it serves: the one holding
 * the program's lease runs it (its events are journaled to the programs
 * bucket), the others are *followers* whose run only mirrors the journal
 * ({@link ProgramRun.apply}) and never dispatches. A replica taking a
 * program over rebuilds the run from the journal ({@link ProgramRun.restore}):
 * values already produced are kept, and calls not finished run again.
 */
import type { AppConfig } from "../../../common/src/protocol/index.js";
import type { Criterion, Dag, Deduced, Objective } from "./dag.js";
import { upstreamCalls } from "./dag.js";
import type { ParsedProgram, ProgramCall } from "./program-request.js";

export interface VariableError {
  code: string;
  message: string;
  /** The call whose failure this is (for a dependent: the root call). */
  call: string;
  /** For a dependent's failure: the failed input variable it read. */
  variable?: string;
}

export type VariableState =
  | { state: "pending" }
  | { state: "ready"; value: string; at: number }
  | { state: "failed"; error: VariableError; at: number };

export type ProgramEvent =
  | { type: "value"; variable: string; id: string; call: string | null; value: string; t: number }
  | { type: "failed"; variable: string; id: string; error: VariableError; t: number }
  | { type: "done"; state: "succeeded" | "failed" | "cancelled"; latencyMs: number; failed: string[]; t: number; reason?: string };

/** An event as journaled: with the engine and usage of the call that produced it (for the status view of other replicas). */
export interface JournaledEvent {
  event: ProgramEvent;
  engine?: string;
  usage?: { promptTokens: number; prefilledTokens: number };
}

export interface ProgramRunOptions {
  /** When the program was submitted (a run rebuilt on another replica keeps the original). */
  startedAt?: number;
  /** Mirrors another replica's run: never dispatches, never finishes on its own. */
  follower?: boolean;
}

export type CallState = "waiting" | "running" | "done" | "failed" | "cancelled";

/** How a run deduces each call's objective from the DAG and the final outputs' criteria. */
export type Deduce = (dag: Dag, finals: ReadonlyMap<string, Criterion>) => Map<string, Deduced>;

/** What a dispatcher is told to run: one call whose inputs are ready. */
export interface ReadyCall {
  call: ProgramCall;
  deduced: Deduced;
}

export interface ProgramDispatcher {
  /** Starts the calls (ready at the same moment: a task group arrives together). */
  dispatch(program: ProgramRun, calls: readonly ReadyCall[]): void;
}

export class ProgramRun {
  readonly variables = new Map<string, VariableState>();
  readonly calls = new Map<string, CallState>();
  readonly events: ProgramEvent[] = [];
  readonly startedAt: number;
  finishedAt: number | undefined;
  /** Why it was cancelled (the `done` event's `reason`). */
  private cancelReason: string | undefined;
  /** Stopped by {@link relinquish}: another replica runs it now; nothing more is emitted here. */
  private detached = false;
  private mirroring: boolean;
  /** When a client last added to the program or asked for a value (an abandoned open program is cancelled). */
  lastActivity: number;
  private deduced: Map<string, Deduced>;
  /** The objective each started call was dispatched with (later deductions do not reach it). */
  private readonly dispatchedWith = new Map<string, Deduced>();
  private readonly listeners = new Set<(e: ProgramEvent) => void>();
  private readonly abort = new AbortController();
  /** Where each call ran (engine pod), for the status view. */
  readonly placedOn = new Map<string, string>();
  /** Prompt tokens of each call's requests, and how many of them the engine prefilled (the rest were forked or kept). */
  readonly usage = new Map<string, { promptTokens: number; prefilledTokens: number }>();

  constructor(
    readonly id: string,
    /** The app's config when the program was submitted (later changes do not reach a running program). */
    readonly config: AppConfig,
    private parsed: ParsedProgram,
    private readonly dispatcher: ProgramDispatcher,
    /** The principal of the API key that created the program: the only one that may read, extend or cancel it. */
    readonly owner: string,
    private readonly deduce: Deduce,
    options: ProgramRunOptions = {},
  ) {
    this.startedAt = options.startedAt ?? Date.now();
    this.lastActivity = Date.now();
    this.mirroring = options.follower === true;
    this.adopt(parsed);
    this.deduced = deduce(parsed.dag, parsed.finals);
  }

  /** Mirrors another replica's run (see {@link ProgramRunOptions.follower}). */
  get follower(): boolean {
    return this.mirroring;
  }

  /**
   * This replica took the program over: the mirror becomes the run, its
   * unfinished calls wait to run again; {@link start} then dispatches them.
   * Its readers (SSE, long-polls) keep reading the same run.
   */
  takeOver(): void {
    this.mirroring = false;
    this.deriveCalls();
  }

  get program(): ParsedProgram {
    return this.parsed;
  }

  /** Aborted when the program is cancelled: the calls in flight stop and their engine sessions end. */
  get signal(): AbortSignal {
    return this.abort.signal;
  }

  variableId(name: string): string {
    return `${this.id}.${name}`;
  }

  /** A started call's objective as dispatched; a waiting call's as deduced now. */
  objectiveOf(callId: string): Deduced {
    return this.dispatchedWith.get(callId) ?? this.deduced.get(callId)!;
  }

  get done(): boolean {
    return this.finishedAt !== undefined;
  }

  /** `running`, `open` (taking calls), or how it ended. */
  get state(): "open" | "running" | "succeeded" | "failed" | "cancelled" {
    const last = this.events.at(-1);
    if (last?.type === "done") return last.state;
    return this.parsed.open ? "open" : "running";
  }

  /** `get` with a criterion: a final output's criterion changes the deduction for calls not yet started (and, while open, activates them). */
  setCriterion(variable: string, criterion: Criterion): void {
    this.lastActivity = Date.now();
    if (this.parsed.finals.get(variable) === criterion) return;
    this.parsed.finals.set(variable, criterion);
    this.deduced = this.deduce(this.parsed.dag, this.parsed.finals);
    this.pump();
  }

  /** The program grew (or was closed): `next` is the whole program, the old one's calls first. */
  extend(next: ParsedProgram): void {
    this.lastActivity = Date.now();
    this.parsed = next;
    this.adopt(next);
    this.deduced = this.deduce(next.dag, next.finals);
    this.pump();
  }

  objectives(): Record<Objective, number> {
    const out: Record<Objective, number> = { latency: 0, "task-group": 0, throughput: 0 };
    for (const id of this.deduced.keys()) out[this.objectiveOf(id).objective]++;
    return out;
  }

  /** Someone is reading its events or waiting for a value. */
  get watched(): boolean {
    return this.listeners.size > 0;
  }

  subscribe(listener: (e: ProgramEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Dispatches what is ready; call once after construction. */
  start(): void {
    this.pump();
  }

  /** A call produced one of its outputs (template output name). */
  produced(call: ProgramCall, output: string, value: string): void {
    if (this.detached) return;
    const variable = call.produces.get(output)!;
    if (this.variables.get(variable)?.state !== "pending") return;
    const at = Date.now();
    this.variables.set(variable, { state: "ready", value, at });
    this.emit({ type: "value", variable, id: this.variableId(variable), call: call.id, value, t: at - this.startedAt });
    if ([...call.produces.values()].every((v) => this.variables.get(v)!.state === "ready")) this.calls.set(call.id, "done");
    this.pump();
  }

  /** A call failed: its outputs not yet produced fail with `error`, then its dependents. */
  failed(call: ProgramCall, code: string, message: string): void {
    if (this.detached) return;
    if (this.calls.get(call.id) !== "running") return;
    this.calls.set(call.id, "failed");
    for (const variable of call.produces.values()) this.failVariable(variable, { code, message, call: call.id });
    this.pump();
  }

  /**
   * Cancels the program: calls not finished are `cancelled`, every value not
   * yet produced fails with code `cancelled` (naming the call that would have
   * produced it), the calls in flight are aborted. False when it had ended.
   */
  cancel(reason: string): boolean {
    if (this.done || this.follower || this.detached) return false;
    this.cancelReason = reason;
    for (const [id, state] of this.calls) if (state === "waiting" || state === "running") this.calls.set(id, "cancelled");
    for (const [variable, s] of this.variables) {
      if (s.state === "pending") this.failVariable(variable, { code: "cancelled", message: `the program was cancelled: ${reason}`, call: this.parsed.dag.producer.get(variable)! });
    }
    this.abort.abort(new Error(reason));
    this.finish();
    return true;
  }

  /**
   * Another replica holds the program now: the calls in flight are aborted
   * (their engine sessions end) and this run emits nothing more.
   */
  relinquish(): void {
    this.detached = true;
    this.abort.abort(new Error("another router replica runs this program now"));
  }

  /** The outputs of `call` (template names) whose variables have no value yet, in template order. */
  pendingOutputs(call: ProgramCall): string[] {
    return [...call.produces].filter(([, v]) => this.variables.get(v)?.state === "pending").map(([output]) => output);
  }

  /**
   * Rebuilds a taken-over run from its journal, before {@link start}: the
   * values and failures it holds are kept (and not emitted again); a call
   * with an output still pending waits to run again; an ended run stays ended.
   */
  restore(journal: readonly JournaledEvent[]): void {
    for (const j of journal) this.record(j);
    this.deriveCalls();
  }

  /** A follower's run takes the next journaled event of the replica that runs the program. */
  apply(j: JournaledEvent): void {
    this.record(j);
    this.deriveCalls();
    for (const l of [...this.listeners]) l(j.event);
  }

  private record(j: JournaledEvent): void {
    const e = j.event;
    if (e.type === "value") this.variables.set(e.variable, { state: "ready", value: e.value, at: this.startedAt + e.t });
    else if (e.type === "failed") this.variables.set(e.variable, { state: "failed", error: e.error, at: this.startedAt + e.t });
    else this.finishedAt = this.startedAt + e.t;
    if (e.type === "value" && e.call !== null) {
      if (j.engine !== undefined) this.placedOn.set(e.call, j.engine);
      if (j.usage !== undefined) this.usage.set(e.call, j.usage);
    }
    this.events.push(e);
  }

  /** Call states as the variables show them (a rebuilt or mirrored run). */
  private deriveCalls(): void {
    for (const c of this.parsed.calls) {
      const outputs = [...c.produces.values()].map((v) => this.variables.get(v)?.state);
      if (outputs.every((s) => s !== "pending")) this.calls.set(c.id, outputs.includes("failed") ? "failed" : "done");
      else if (this.done) this.calls.set(c.id, "cancelled");
      else if (outputs.includes("ready")) this.calls.set(c.id, this.follower ? "running" : "waiting");
      else if (this.follower) {
        const inputs = [...new Set([...c.bind.values()].flat())];
        const active = !this.parsed.open || upstreamCalls(this.parsed.dag, this.parsed.finals.keys()).has(c.id);
        this.calls.set(c.id, active && inputs.every((v) => this.variables.get(v)?.state === "ready") ? "running" : "waiting");
      } else this.calls.set(c.id, "waiting");
    }
  }

  /** Values of the variables `call` reads, and of its outputs produced so far. */
  value(variable: string): string {
    const s = this.variables.get(variable);
    return s?.state === "ready" ? s.value : "";
  }

  /** New input values ready, new produced variables pending, new calls waiting. */
  private adopt(program: ParsedProgram): void {
    for (const v of program.dag.producer.keys()) if (!this.variables.has(v)) this.variables.set(v, { state: "pending" });
    for (const [v, value] of program.inputs) if (!this.variables.has(v)) this.variables.set(v, { state: "ready", value, at: Date.now() });
    for (const c of program.calls) if (!this.calls.has(c.id)) this.calls.set(c.id, "waiting");
  }

  private failVariable(variable: string, error: VariableError): void {
    if (this.variables.get(variable)?.state !== "pending") return;
    const at = Date.now();
    this.variables.set(variable, { state: "failed", error, at });
    this.emit({ type: "failed", variable, id: this.variableId(variable), error, t: at - this.startedAt });
  }

  private pump(): void {
    if (this.follower) {
      this.deriveCalls();
      return;
    }
    if (this.done || this.detached) return;
    const program = this.parsed;
    // While open, only what a named final output needs runs.
    const active = program.open ? upstreamCalls(program.dag, program.finals.keys()) : undefined;
    const ready: ReadyCall[] = [];
    for (const id of program.dag.order) {
      if (this.calls.get(id) !== "waiting") continue;
      const call = program.calls.find((c) => c.id === id)!;
      const inputs = [...new Set([...call.bind.values()].flat())];
      const bad = inputs.find((v) => this.variables.get(v)?.state === "failed");
      if (bad !== undefined) {
        const cause = this.variables.get(bad) as { error: VariableError };
        this.calls.set(id, "failed");
        const message = `input variable "${bad}" failed: ${cause.error.message}`;
        for (const v of call.produces.values()) this.failVariable(v, { code: "dependency_failed", message, call: cause.error.call, variable: bad });
        continue;
      }
      if (active !== undefined && !active.has(id)) continue;
      if (inputs.every((v) => this.variables.get(v)?.state === "ready")) {
        this.calls.set(id, "running");
        this.dispatchedWith.set(id, this.deduced.get(id)!);
        ready.push({ call, deduced: this.deduced.get(id)! });
      }
    }
    if (ready.length > 0) this.dispatcher.dispatch(this, ready);
    // Failures can cascade within one pass only in topological order, which the loop follows.
    if (!this.done && !this.parsed.open && [...this.variables.values()].every((s) => s.state !== "pending")) this.finish();
  }

  private finish(): void {
    this.finishedAt = Date.now();
    const failed = [...this.variables].filter(([, s]) => s.state === "failed").map(([v]) => v);
    const state = this.abort.signal.aborted ? "cancelled" : failed.length === 0 ? "succeeded" : "failed";
    this.emit({ type: "done", state, latencyMs: this.finishedAt - this.startedAt, failed, t: this.finishedAt - this.startedAt, ...(state === "cancelled" && this.cancelReason !== undefined ? { reason: this.cancelReason } : {}) });
  }

  private emit(e: ProgramEvent): void {
    if (this.detached) return;
    this.events.push(e);
    for (const l of [...this.listeners]) l(e);
  }
}

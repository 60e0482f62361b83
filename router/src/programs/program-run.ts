/**
 * @module One program's run inside the router: the state of every variable
 * and call, the event log its SSE stream replays, and the rule that moves it
 * on. A call is handed to the dispatcher the moment all its inputs have
 * values; a value it produces is stored and flows to its consumers here (no
 * client round trip); a failed call fails its outputs with the cause, and
 * every call reading a failed variable fails the same way, naming the
 * variable and the call where the failure started. The dispatcher (engine
 * I/O) is behind a small interface, so this is a plain state machine.
 */
import type { AppConfig } from "../../../common/src/protocol/index.js";
import type { Criterion, Deduced, Objective } from "./dag.js";
import { deduceObjectives } from "./dag.js";
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
  | { type: "done"; state: "succeeded" | "failed"; latencyMs: number; failed: string[]; t: number };

export type CallState = "waiting" | "running" | "done" | "failed";

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
  readonly startedAt = Date.now();
  finishedAt: number | undefined;
  private deduced: Map<string, Deduced>;
  private readonly listeners = new Set<(e: ProgramEvent) => void>();
  /** Where each call ran (engine pod), for the status view. */
  readonly placedOn = new Map<string, string>();
  /** Prompt tokens of each call's requests, and how many of them the engine prefilled (the rest were forked or kept). */
  readonly usage = new Map<string, { promptTokens: number; prefilledTokens: number }>();

  constructor(
    readonly id: string,
    /** The app's config when the program was submitted (later changes do not reach a running program). */
    readonly config: AppConfig,
    readonly program: ParsedProgram,
    private readonly dispatcher: ProgramDispatcher,
  ) {
    for (const v of program.dag.producer.keys()) this.variables.set(v, { state: "pending" });
    for (const [v, value] of program.inputs) this.variables.set(v, { state: "ready", value, at: this.startedAt });
    for (const c of program.calls) this.calls.set(c.id, "waiting");
    this.deduced = deduceObjectives(program.dag, program.finals);
  }

  variableId(name: string): string {
    return `${this.id}.${name}`;
  }

  objectiveOf(callId: string): Deduced {
    return this.deduced.get(callId)!;
  }

  get done(): boolean {
    return this.finishedAt !== undefined;
  }

  /** `get` with a criterion: a final output's criterion changes the deduction for calls not yet started. */
  setCriterion(variable: string, criterion: Criterion): void {
    if (this.program.finals.get(variable) === criterion) return;
    this.program.finals.set(variable, criterion);
    this.deduced = deduceObjectives(this.program.dag, this.program.finals);
  }

  objectives(): Record<Objective, number> {
    const out: Record<Objective, number> = { latency: 0, "task-group": 0, throughput: 0 };
    for (const d of this.deduced.values()) out[d.objective]++;
    return out;
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
    if (this.calls.get(call.id) === "failed") return;
    this.calls.set(call.id, "failed");
    for (const variable of call.produces.values()) this.failVariable(variable, { code, message, call: call.id });
    this.pump();
  }

  /** Values of the variables `call` reads, and of its outputs produced so far. */
  value(variable: string): string {
    const s = this.variables.get(variable);
    return s?.state === "ready" ? s.value : "";
  }

  private failVariable(variable: string, error: VariableError): void {
    if (this.variables.get(variable)?.state !== "pending") return;
    const at = Date.now();
    this.variables.set(variable, { state: "failed", error, at });
    this.emit({ type: "failed", variable, id: this.variableId(variable), error, t: at - this.startedAt });
  }

  private pump(): void {
    const ready: ReadyCall[] = [];
    for (const id of this.program.dag.order) {
      if (this.calls.get(id) !== "waiting") continue;
      const call = this.program.calls.find((c) => c.id === id)!;
      const inputs = [...new Set([...call.bind.values()].flat())];
      const bad = inputs.find((v) => this.variables.get(v)?.state === "failed");
      if (bad !== undefined) {
        const cause = this.variables.get(bad) as { error: VariableError };
        this.calls.set(id, "failed");
        const message = `input variable "${bad}" failed: ${cause.error.message}`;
        for (const v of call.produces.values()) this.failVariable(v, { code: "dependency_failed", message, call: cause.error.call, variable: bad });
        continue;
      }
      if (inputs.every((v) => this.variables.get(v)?.state === "ready")) {
        this.calls.set(id, "running");
        ready.push({ call, deduced: this.deduced.get(id)! });
      }
    }
    if (ready.length > 0) this.dispatcher.dispatch(this, ready);
    // Failures can cascade within one pass only in topological order, which the loop follows.
    if (!this.done && [...this.variables.values()].every((s) => s.state !== "pending")) {
      this.finishedAt = Date.now();
      const failed = [...this.variables].filter(([, s]) => s.state === "failed").map(([v]) => v);
      this.emit({ type: "done", state: failed.length === 0 ? "succeeded" : "failed", latencyMs: this.finishedAt - this.startedAt, failed, t: this.finishedAt - this.startedAt });
    }
  }

  private emit(e: ProgramEvent): void {
    this.events.push(e);
    for (const l of [...this.listeners]) l(e);
  }
}

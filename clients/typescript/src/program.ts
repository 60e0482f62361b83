/**
 * @module Programs (Parrot §4): semantic variables are futures, and each call
 * of a semantic function is sent to the router as it is made, so the router
 * sees the DAG before any value is needed. `program.call` never waits: calls
 * queue and one request at a time carries everything queued, in order.
 * Nothing runs until a value is asked for: `get({criteria})` tells the router
 * which final output the calls feed, and it deduces each call's objective
 * from there (Parrot §5.2) before starting them. `close()` runs what was not
 * asked for; `cancel()` stops everything.
 */
import { CallFailedError, ProgramCancelledError } from "./errors.js";
import type { FunctionDefinition, SemanticFunction } from "./functions.js";
import { VARIABLE_NAME } from "./functions.js";
import type { Transport } from "./transport.js";

/** Parrot's performance criteria on a `get`: end-to-end latency, or throughput. */
export type Criteria = "latency" | "throughput";

/** What a function takes for an input: a value, a variable, or a list of them (joined by blank lines). */
export type Input = string | SemanticVariable | readonly (string | SemanticVariable)[];

/** One event of a program's stream. */
export type ProgramEvent =
  | { type: "value"; variable: string; id: string; call: string | null; value: string; t: number }
  | { type: "failed"; variable: string; id: string; error: { code: string; message: string; call: string; variable?: string }; t: number }
  | { type: "done"; state: "succeeded" | "failed" | "cancelled"; latencyMs: number; failed: string[]; t: number };

/** A program as the router sees it (`GET .../programs/{id}`). */
export interface ProgramStatus {
  state: "open" | "running" | "succeeded" | "failed" | "cancelled";
  variables: Record<string, { state: "pending" | "ready" | "failed"; value?: string }>;
  calls: Record<string, { function: string; state: string; objective: "latency" | "task-group" | "throughput"; group?: string; engine: string | null }>;
}

/** How long one long-poll waits on the router (its maximum is 120 s). */
const POLL_MS = 60_000;

interface VariableView {
  state: "pending" | "ready" | "failed";
  value?: string;
  error?: { code: string; message: string; call: string; variable?: string };
}

/** A variable of a program: an input given by value, or the future output of a call. */
export class SemanticVariable {
  /** @internal */
  constructor(
    readonly program: Program,
    readonly name: string,
    /** The call producing it (null for a program input). */
    readonly call: string | null,
  ) {}

  /** `<program id>.<name>`, the router's variable id (once the program exists). */
  get id(): Promise<string> {
    return this.program.id.then((id) => `${id}.${this.name}`);
  }

  /**
   * Waits for the value. `criteria` makes it a final output with that
   * performance criterion (Parrot's `get(perf=...)`); without it, the app's
   * objective. Rejects with {@link CallFailedError} naming the call that failed.
   */
  async get(options: { criteria?: Criteria; timeoutMs?: number; signal?: AbortSignal } = {}): Promise<string> {
    await this.program.flush();
    const id = await this.id;
    const deadline = options.timeoutMs !== undefined ? Date.now() + options.timeoutMs : undefined;
    for (;;) {
      const wait = deadline === undefined ? POLL_MS : Math.max(0, Math.min(POLL_MS, deadline - Date.now()));
      const query = new URLSearchParams({ timeoutMs: String(wait), ...(options.criteria !== undefined ? { criteria: options.criteria } : {}) });
      const res = await this.program.transport.request("GET", `variables/${encodeURIComponent(id)}?${query}`, undefined, options.signal);
      const view = (await res.json()) as VariableView;
      if (res.status === 200) return this.read(view);
      if (deadline !== undefined && Date.now() >= deadline) throw new Error(`variable ${this.name} not ready after ${options.timeoutMs} ms`);
    }
  }

  private read(view: VariableView): string {
    if (view.state === "failed") {
      const e = view.error!;
      const Kind = e.code === "cancelled" ? ProgramCancelledError : CallFailedError;
      throw new Kind(this.name, e.call, e.code, e.message, e.variable);
    }
    return view.value!;
  }
}

interface Batch {
  inputs: Record<string, string>;
  functions: FunctionDefinition[];
  calls: Record<string, unknown>[];
}

const emptyBatch = (): Batch => ({ inputs: {}, functions: [], calls: [] });

/** A program run by the router (`client.program()`). */
export class Program {
  /** The program's id, once the router has created it. */
  readonly id: Promise<string>;
  private count = 0;
  private readonly sent = new Set<string>();
  private queue: Batch = emptyBatch();
  private sending: Promise<void> | undefined;
  private failure: unknown;

  /** @internal */
  constructor(readonly transport: Transport) {
    this.id = transport.request("POST", "programs", { open: true }).then(async (res) => ((await res.json()) as { id: string }).id);
    // A failed creation surfaces on the first flush, get or close.
    this.id.catch(() => undefined);
  }

  /** A program input variable holding `value` (a string passed to a function becomes one too). */
  input(value: string, name?: string): SemanticVariable {
    const batch = emptyBatch();
    const v = this.addInput(value, name, batch);
    this.enqueue(batch);
    return v;
  }

  /** Sends one call (in the background, in order); returns its output variables by name. */
  call<I extends string, O extends string>(fn: SemanticFunction<I, O>, inputs: { readonly [K in I]: Input }): { readonly [K in O]: SemanticVariable } {
    const batch = emptyBatch();
    const given = inputs as Readonly<Record<string, Input>>;
    const missing = fn.inputs.filter((i) => given[i] === undefined);
    if (missing.length > 0) throw new TypeError(`${fn.name}: missing input(s) ${missing.join(", ")}`);
    const bind: Record<string, string | string[]> = {};
    for (const [arg, value] of Object.entries(given)) {
      if (!(fn.inputs as readonly string[]).includes(arg)) throw new TypeError(`${fn.name} has no input "${arg}" (it takes ${fn.inputs.join(", ")})`);
      bind[arg] = Array.isArray(value) ? (value as readonly (string | SemanticVariable)[]).map((v) => this.variable(v, fn.name, arg, batch)) : this.variable(value as string | SemanticVariable, fn.name, arg, batch);
    }
    const n = ++this.count;
    const id = `${fn.name.slice(0, 48)}_${n}`;
    const produces = Object.fromEntries(fn.outputs.map((o) => [o, `${o.slice(0, 48)}_${n}`]));
    batch.calls.push({ id, function: fn.name, inputs: bind, outputs: produces, ...(fn.policy !== undefined ? { policy: fn.policy } : {}) });
    if (fn.definition !== undefined && !this.sent.has(fn.name)) {
      batch.functions.push(fn.definition);
      this.sent.add(fn.name);
    }
    this.enqueue(batch);
    return Object.fromEntries(fn.outputs.map((o) => [o, new SemanticVariable(this, produces[o]!, id)])) as { readonly [K in O]: SemanticVariable };
  }

  /** Waits until every call made so far has reached the router; rejects with a submission's error. */
  async flush(): Promise<void> {
    await this.id;
    while (this.sending !== undefined) await this.sending;
    if (this.failure !== undefined) throw this.failure;
  }

  /** No more calls: what has not been asked for runs now. */
  async close(): Promise<void> {
    await this.flush();
    await this.transport.request("POST", `programs/${await this.id}/calls`, { close: true });
  }

  /** Cancels the program and its running calls; false when it had already ended. */
  async cancel(): Promise<boolean> {
    while (this.sending !== undefined) await this.sending;
    const res = await this.transport.request("DELETE", `programs/${await this.id}`);
    return ((await res.json()) as { cancelled: boolean }).cancelled;
  }

  /** The router's view: state, every variable and call (function, objective, engine, usage). */
  async status(): Promise<ProgramStatus> {
    return (await (await this.transport.request("GET", `programs/${await this.id}`)).json()) as ProgramStatus;
  }

  /** The program's events (past ones first) until it ends. */
  async *events(signal?: AbortSignal): AsyncGenerator<ProgramEvent> {
    for await (const e of this.transport.events(`programs/${await this.id}/events`, undefined, signal)) yield JSON.parse(e.data) as ProgramEvent;
  }

  private addInput(value: string, name: string | undefined, batch: Batch): SemanticVariable {
    const n = name ?? `input_${++this.count}`;
    if (!VARIABLE_NAME.test(n)) throw new TypeError(`input name "${n}" must match ${VARIABLE_NAME.source}`);
    batch.inputs[n] = value;
    return new SemanticVariable(this, n, null);
  }

  private variable(value: string | SemanticVariable, fn: string, arg: string, batch: Batch): string {
    if (typeof value === "string") return this.addInput(value, undefined, batch).name;
    if (value instanceof SemanticVariable) {
      if (value.program !== this) throw new TypeError(`${fn}({${arg}}): variable ${value.name} belongs to another program`);
      return value.name;
    }
    throw new TypeError(`${fn}({${arg}}): expected a string, a variable or a list of them`);
  }

  private enqueue(batch: Batch): void {
    Object.assign(this.queue.inputs, batch.inputs);
    this.queue.functions.push(...batch.functions);
    this.queue.calls.push(...batch.calls);
    this.sending ??= this.send().finally(() => (this.sending = undefined));
  }

  /** Whatever queued while a request was in flight goes in the next one. */
  private async send(): Promise<void> {
    const id = await this.id.catch((err: unknown) => {
      this.failure = err;
      return undefined;
    });
    while (id !== undefined && this.failure === undefined && (this.queue.calls.length > 0 || Object.keys(this.queue.inputs).length > 0)) {
      const batch = this.queue;
      this.queue = emptyBatch();
      const body = { calls: batch.calls, ...(Object.keys(batch.inputs).length > 0 ? { inputs: batch.inputs } : {}), ...(batch.functions.length > 0 ? { functions: batch.functions } : {}) };
      await this.transport.request("POST", `programs/${id}/calls`, body).catch((err: unknown) => (this.failure = err));
    }
  }
}

/**
 * @module Where a task's time went, from its session's events and the
 * engine's step timings: e2e (first token → last) = decode steps + steps that
 * evaluated injected tokens + trap waits + the rest (time between steps, and
 * in sync modes the waits for a turn's results). Beside it, what the tools
 * cost over their replayed durations (NATS and runner round trip) and how
 * long arrived interrupts waited to be injected.
 */
import type { SessionEvent } from "../../common/src/index.js";

export interface TaskBreakdown {
  e2eMs: number;
  /** One-token steps after the first token. */
  decodeMs: number;
  /** Steps that evaluated more than one token: the previous token plus injected interrupts (sync modes: re-entry fills). */
  prefillMs: number;
  /** Trap → resume, summed. */
  trapMs: number;
  /** e2e minus the above: time between steps, and sync modes' waits for results. */
  otherMs: number;
  decodedTokens: number;
  /** Tokens of interrupts appended to the live sequence. */
  injectedTokens: number;
  /** Steps that injected interrupts (interrupts injected in one step count once). */
  injectSteps: number;
  /** Σ over calls of (result arrival − dispatch − the tool's own duration): transport and runner overhead. */
  toolOverheadMs: number;
  /** Σ over interrupts of arrival → injection. */
  injectDelayMs: number;
  /** When each user message reached the engine, ms after the first token (0 if before it), by interrupt id. */
  userArrivalMs: Record<string, number>;
}

type Done = Extract<SessionEvent, { type: "done" }>;

/**
 * `toolMs` gives each call's replayed duration by call id. Interrupt events
 * within `sameStepMs` of each other were injected by one step (the engine
 * stamps them in one pass).
 */
export function taskBreakdown(events: readonly SessionEvent[], toolMs: ReadonlyMap<string, number>, sameStepMs = 0.5): TaskBreakdown {
  const done = events.find((e): e is Done => e.type === "done");
  if (done === undefined) throw new Error("no done event");
  let trapMs = 0;
  let trapAt: number | undefined;
  const dispatchedAt = new Map<string, number>();
  let toolOverheadMs = 0;
  let injectDelayMs = 0;
  let injectedTokens = 0;
  let injectSteps = 0;
  let lastInjectAt = -Infinity;
  const userArrivalMs: Record<string, number> = {};
  for (const e of events) {
    switch (e.type) {
      case "trap":
        trapAt = e.t;
        break;
      case "resume":
        if (trapAt !== undefined) trapMs += e.t - trapAt;
        trapAt = undefined;
        break;
      case "call":
        dispatchedAt.set(e.callId, e.t);
        break;
      case "interrupt": {
        const arrivedAt = e.t - e.delayMs;
        if (e.kind === "user") userArrivalMs[e.id] = Math.max(0, arrivedAt - done.timings.ttftMs);
        injectDelayMs += e.delayMs;
        injectedTokens += e.tokens;
        if (e.t - lastInjectAt > sameStepMs) injectSteps++;
        lastInjectAt = e.t;
        const sent = dispatchedAt.get(e.id);
        const own = toolMs.get(e.id);
        if (sent !== undefined && own !== undefined) toolOverheadMs += arrivedAt - sent - own;
        break;
      }
      case "started":
      case "text":
      case "call_error":
      case "error":
      case "done":
        // Nothing for the breakdown (the done event's timings are read below); a new event type must say.
        break;
    }
  }
  const { e2eMs, decodeMs, prefillMs } = done.timings;
  return {
    e2eMs,
    decodeMs,
    prefillMs,
    trapMs,
    otherMs: e2eMs - decodeMs - prefillMs - trapMs,
    decodedTokens: done.usage.decodedTokens,
    injectedTokens,
    injectSteps,
    toolOverheadMs,
    injectDelayMs,
    userArrivalMs,
  };
}

/**
 * Time to read one injected token, from a run's own steps: an injection step
 * evaluates the previous token (one decode, `tpotMs`) plus the injected ones,
 * so the injected tokens cost what the injection steps took beyond a decode each.
 */
export function injectMsPerToken(b: Pick<TaskBreakdown, "prefillMs" | "injectSteps" | "injectedTokens">, tpotMs: number): number {
  if (b.injectedTokens === 0) return 0;
  return Math.max(0, b.prefillMs - b.injectSteps * tpotMs) / b.injectedTokens;
}

export interface BreakdownRow {
  workload: string;
  mode: string;
  tasks: number;
  /** Means per task, ms (means, so the parts add up to e2e). */
  e2e_ms: number;
  bound_ms: number;
  bound_reads_ms: number;
  /** Generator time the bound with reading spends reading. */
  bound_read_ms: number;
  bound_gen_ms: number;
  decode_ms: number;
  prefill_ms: number;
  trap_ms: number;
  other_ms: number;
  tool_overhead_ms: number;
  inject_delay_ms: number;
  decoded_tokens: number;
  bound_tokens: number;
  injected_tokens: number;
}

export function breakdownRow(
  workload: string,
  mode: string,
  runs: readonly { breakdown: TaskBreakdown; boundMs: number; boundWithReadsMs: number; boundReadMs: number; boundGenMs: number; boundTokens: number }[],
): BreakdownRow {
  const m = (f: (r: (typeof runs)[number]) => number, digits = 0): number => {
    const k = 10 ** digits;
    return runs.length === 0 ? NaN : Math.round((runs.reduce((s, r) => s + f(r), 0) / runs.length) * k) / k;
  };
  return {
    workload,
    mode,
    tasks: runs.length,
    e2e_ms: m((r) => r.breakdown.e2eMs),
    bound_ms: m((r) => r.boundMs),
    bound_reads_ms: m((r) => r.boundWithReadsMs),
    bound_read_ms: m((r) => r.boundReadMs),
    bound_gen_ms: m((r) => r.boundGenMs),
    decode_ms: m((r) => r.breakdown.decodeMs),
    prefill_ms: m((r) => r.breakdown.prefillMs),
    trap_ms: m((r) => r.breakdown.trapMs),
    other_ms: m((r) => r.breakdown.otherMs),
    tool_overhead_ms: m((r) => r.breakdown.toolOverheadMs),
    inject_delay_ms: m((r) => r.breakdown.injectDelayMs),
    decoded_tokens: m((r) => r.breakdown.decodedTokens, 1),
    bound_tokens: m((r) => r.boundTokens, 1),
    injected_tokens: m((r) => r.breakdown.injectedTokens, 1),
  };
}

export function breakdownTable(rows: readonly BreakdownRow[]): string {
  const header =
    "| workload | mode | tasks | e2e | bound | bound + reads | bound generation | bound reading | decode steps | injection/fill steps | trap waits | between steps + sync waits | tool overhead (Σ calls) | arrival→injection (Σ) | tokens decoded / bound | tokens injected |\n" +
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |";
  return [
    header,
    ...rows.map(
      (r) =>
        `| ${r.workload} | ${r.mode} | ${r.tasks} | ${r.e2e_ms} | ${r.bound_ms} | ${r.bound_reads_ms} | ${r.bound_gen_ms} | ${r.bound_read_ms} | ${r.decode_ms} | ${r.prefill_ms} | ${r.trap_ms} | ${r.other_ms} | ${r.tool_overhead_ms} | ${r.inject_delay_ms} | ${r.decoded_tokens} / ${r.bound_tokens} | ${r.injected_tokens} |`,
    ),
  ].join("\n");
}

/**
 * @module AsyncLM §4.2's training-sample simulation: the ideal interaction of
 * a model and an executor on one task's call DAG. Each run draws every
 * call's execution time (shown to the model as its estimate) uniformly in
 * 1 ms–1 s and one time per output token (TPOT) in 5–30 ms; the clock
 * advances by TPOT for each token the model writes. The model follows the
 * LPT oracle (the engine's own `LptDagPolicy.pickReady`): it writes the
 * ready call with the longest estimate; a result whose call has finished is
 * inserted as an interrupt at the next point outside a call block; when no
 * call is ready but results are pending it writes a trap, and the clock
 * jumps to the next completion, whose interrupt follows the trap.
 */
import { formatCallBlock, formatInterruptBlock, formatTrapBlock, type ScriptedCall } from "../../common/src/index.js";
import { LptDagPolicy } from "../../engine-pod/src/policy/index.js";
import { formatCallBody, type CallStyle } from "../../engine-pod/src/prompt/index.js";

export type Rng = () => number;

/** A piece of the assistant turn: written by the model, or by the engine (interrupts). */
export type SampleSegment =
  | { by: "model"; kind: "call"; id: string; text: string; atMs: number }
  | { by: "model"; kind: "trap"; text: string; atMs: number }
  | { by: "model"; kind: "text"; text: string; atMs: number }
  | { by: "engine"; kind: "interrupt"; id: string; text: string; atMs: number };

export interface SimulatedCall extends ScriptedCall {
  estimatedLatencyMs: number;
}

export interface Simulation {
  tpotMs: number;
  calls: SimulatedCall[];
  segments: SampleSegment[];
  /** Simulated makespan, ms. */
  totalMs: number;
}

export interface SimulateOptions {
  rng: Rng;
  /** Tokens of a piece of model text (for the clock). */
  countTokens: (text: string) => number;
  callStyle?: CallStyle;
  /** The interrupt value of a finished call. */
  resultOf?: (call: ScriptedCall) => string;
  finalText?: string;
  latencyRangeMs?: [number, number];
  tpotRangeMs?: [number, number];
}

const uniform = (rng: Rng, [lo, hi]: [number, number]): number => lo + rng() * (hi - lo);

export function defaultResult(call: ScriptedCall): string {
  return JSON.stringify({ status: "ok", tool: call.tool });
}

/** Simulates one run on `dag` (ids, tools, arguments, dependencies); latencies and TPOT are drawn here. */
export function simulate(dag: readonly ScriptedCall[], o: SimulateOptions): Simulation {
  const tpotMs = Math.round(uniform(o.rng, o.tpotRangeMs ?? [5, 30]) * 10) / 10;
  const calls: SimulatedCall[] = dag.map((c) => ({ ...c, estimatedLatencyMs: Math.max(1, Math.round(uniform(o.rng, o.latencyRangeMs ?? [1, 1000]))) }));
  const view = { emittedCalls: new Set<string>(), injected: new Set<string>() };
  const running: { call: SimulatedCall; doneAt: number }[] = [];
  const segments: SampleSegment[] = [];
  const resultOf = o.resultOf ?? defaultResult;
  let now = 0;
  const write = (segment: { kind: "call"; id: string; text: string } | { kind: "trap" | "text"; text: string }): void => {
    now += o.countTokens(segment.text) * tpotMs;
    segments.push({ by: "model", ...segment, atMs: Math.round(now * 10) / 10 } as SampleSegment);
  };
  /** Results finished by now go in at this boundary, earliest first. */
  const deliver = (): void => {
    running.sort((a, b) => a.doneAt - b.doneAt);
    while (running.length > 0 && running[0]!.doneAt <= now) {
      const { call } = running.shift()!;
      view.injected.add(call.id);
      segments.push({ by: "engine", kind: "interrupt", id: call.id, text: formatInterruptBlock(call.id, resultOf(call)), atMs: Math.round(now * 10) / 10 });
    }
  };
  for (;;) {
    deliver();
    const ready = LptDagPolicy.pickReady(calls, view) as SimulatedCall | undefined;
    if (ready !== undefined) {
      write({ kind: "call", id: ready.id, text: formatCallBlock(formatCallBody(ready.tool, ready.arguments, o.callStyle ?? "json"), ready.id) });
      view.emittedCalls.add(ready.id);
      // The call starts when its [END] is written.
      running.push({ call: ready, doneAt: now + ready.estimatedLatencyMs });
      continue;
    }
    if (running.length > 0) {
      write({ kind: "trap", text: formatTrapBlock() });
      now = Math.max(now, Math.min(...running.map((r) => r.doneAt)));
      continue;
    }
    if (calls.some((c) => !view.emittedCalls.has(c.id))) throw new Error(`the DAG cannot complete: ${calls.filter((c) => !view.emittedCalls.has(c.id)).map((c) => c.id).join(", ")} wait on calls that never run`);
    write({ kind: "text", text: o.finalText ?? "All the results are in; the task is done." });
    return { tpotMs, calls, segments, totalMs: Math.round(now) };
  }
}

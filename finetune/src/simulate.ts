/**
 * @module AsyncLM §4.2's training-sample simulation: the ideal interaction of
 * a model and an executor on one task's call DAG. Each run draws every call's
 * execution time (shown to the model as its estimate) uniformly in 1 ms–1 s
 * and one time per output token (TPOT) in 5–30 ms; the clock advances by TPOT
 * for each token the model writes, counted with the target model's tokenizer.
 *
 * The model follows the LPT oracle (the engine's own `LptDagPolicy.pickReady`):
 * it writes the ready call with the longest estimate, so several calls are in
 * flight at once. A finished call's result is injected at the next point
 * outside a call block: between two calls, after a trap, or between two words
 * of the model's text (mid-sentence); a result that finishes while a call
 * block is open is held back until its `[END]`, as the critical-section rule
 * does. When no call is ready but results are pending, the model either
 * reports the results already in (and may be interrupted while it does) or
 * writes a trap, and the clock jumps to the next completion. A call whose
 * first attempt fails (a transient error line) is called again. The last
 * sentence reports the results not yet reported, and the turn ends.
 *
 * `shape: "sync"` is the same task as CML sync mode runs it: each result
 * arrives right after its call's `[END]` (the engine stops and re-enters), so
 * there are no traps and nothing to report while waiting.
 */
import { formatCallBlock, formatInterruptBlock, formatTrapBlock, type ScriptedCall } from "../../common/src/index.js";
import { LptDagPolicy } from "../../engine-pod/src/policy/index.js";
import { formatCallBody, type CallStyle } from "../../engine-pod/src/prompt/index.js";
import { describeTool, failureResult, reportSentence, successResult, type Rng, type ToolResult } from "./tool-results.js";

export type { Rng } from "./tool-results.js";

/** A piece of the assistant turn: written by the model, or by the engine (interrupts). */
export type SampleSegment =
  | { by: "model"; kind: "call"; id: string; text: string; atMs: number }
  | { by: "model"; kind: "trap"; text: string; atMs: number }
  | { by: "model"; kind: "text"; text: string; atMs: number }
  | { by: "engine"; kind: "interrupt"; id: string; text: string; atMs: number };

export interface SimulatedCall extends ScriptedCall {
  estimatedLatencyMs: number;
  /** A second attempt of this call (its first attempt failed). */
  retryOf?: string;
}

export interface Simulation {
  tpotMs: number;
  /** The DAG's calls (with the model's ids) and any retries, in the order they were made. */
  calls: SimulatedCall[];
  segments: SampleSegment[];
  /** Simulated makespan, ms. */
  totalMs: number;
}

export type SampleShape = "async" | "sync";

export interface SimulateOptions {
  rng: Rng;
  /** Tokens of a piece of model text in the target model's tokenizer (for the clock). */
  countTokens: (text: string) => number;
  callStyle?: CallStyle;
  /** Default `async`. */
  shape?: SampleShape;
  /** Share of calls whose first attempt fails (default 0.06). */
  failureRate?: number;
  /** Chance that the model reports results already in rather than trapping at once (default 0.35). */
  reportWhileWaiting?: number;
  /** The result of a successful call (default: {@link successResult}). */
  resultOf?: (call: ScriptedCall, rng: Rng) => ToolResult;
  latencyRangeMs?: [number, number];
  tpotRangeMs?: [number, number];
}

const uniform = (rng: Rng, [lo, hi]: [number, number]): number => lo + rng() * (hi - lo);
const round1 = (ms: number): number => Math.round(ms * 10) / 10;

/** Short call ids the way a model would choose them: a word of the tool's name and a counter (`area1`, `weather2`). */
export function modelCallIds(dag: readonly ScriptedCall[]): Map<string, string> {
  const counts = new Map<string, number>();
  const ids = new Map<string, string>();
  for (const c of dag) {
    const word = (describeTool(c.tool).noun.split(" ").at(-1) ?? "").replace(/[^a-z]/g, "").slice(0, 10) || "call";
    const n = (counts.get(word) ?? 0) + 1;
    counts.set(word, n);
    ids.set(c.id, `${word}${n}`);
  }
  return ids;
}

/** Simulates one run on `dag` (ids, tools, arguments, dependencies); latencies, TPOT, failures and results are drawn here. */
export function simulate(dag: readonly ScriptedCall[], o: SimulateOptions): Simulation {
  const rng = o.rng;
  const shape = o.shape ?? "async";
  const tpotMs = round1(uniform(rng, o.tpotRangeMs ?? [5, 30]));
  const rename = modelCallIds(dag);
  const calls: SimulatedCall[] = dag.map((c) => ({
    ...c,
    id: rename.get(c.id)!,
    dependsOn: c.dependsOn.map((d) => rename.get(d) ?? d),
    estimatedLatencyMs: Math.max(1, Math.round(uniform(rng, o.latencyRangeMs ?? [1, 1000]))),
  }));
  const failsFirst = new Set(calls.filter(() => rng() < (o.failureRate ?? 0.06)).map((c) => c.id));
  const resultOf = o.resultOf ?? successResult;
  const made: SimulatedCall[] = [];
  // The oracle's view: a call counts as answered once its successful result is in.
  const view = { emittedCalls: new Set<string>(), injected: new Set<string>() };
  const running: { call: SimulatedCall; doneAt: number; result: ToolResult }[] = [];
  const retries: SimulatedCall[] = [];
  const unreported: string[] = [];
  const segments: SampleSegment[] = [];
  let now = 0;

  const push = (segment: SampleSegment): void => {
    segments.push(segment);
  };
  /** Results finished by now go in at this boundary, earliest first. */
  const deliver = (): boolean => {
    running.sort((a, b) => a.doneAt - b.doneAt);
    let any = false;
    while (running.length > 0 && running[0]!.doneAt <= now) {
      const { call, result } = running.shift()!;
      push({ by: "engine", kind: "interrupt", id: call.id, text: formatInterruptBlock(call.id, result.value), atMs: round1(now) });
      any = true;
      if (result.failed) retries.push({ ...call, id: `${call.retryOf ?? call.id}_again`, dependsOn: [], retryOf: call.retryOf ?? call.id });
      else {
        view.injected.add(call.retryOf ?? call.id);
        unreported.push(result.clause);
      }
    }
    return any;
  };
  const writeCall = (call: SimulatedCall): void => {
    const text = formatCallBlock(formatCallBody(call.tool, call.arguments, o.callStyle ?? "json"), call.id);
    now += o.countTokens(text) * tpotMs;
    push({ by: "model", kind: "call", id: call.id, text, atMs: round1(now) });
    made.push(call);
    // The call starts when its [END] is written; a first attempt may fail.
    const fails = call.retryOf === undefined && failsFirst.has(call.id);
    const runMs = shape === "sync" ? 0 : call.estimatedLatencyMs;
    running.push({ call, doneAt: now + runMs, result: fails ? failureResult(rng) : resultOf(call, rng) });
  };
  /** Model text, word by word; results that finish meanwhile are injected between two words. */
  const writeText = (text: string): void => {
    let piece = "";
    for (const word of text.split(/(?= )/)) {
      now += o.countTokens(word) * tpotMs;
      piece += word;
      if (running.some((r) => r.doneAt <= now)) {
        push({ by: "model", kind: "text", text: piece, atMs: round1(now) });
        piece = "";
        deliver();
      }
    }
    if (piece !== "") push({ by: "model", kind: "text", text: piece, atMs: round1(now) });
  };

  for (;;) {
    deliver();
    const retry = retries.shift();
    if (retry !== undefined) {
      writeCall(retry);
      continue;
    }
    const ready = LptDagPolicy.pickReady(calls, view) as SimulatedCall | undefined;
    if (ready !== undefined) {
      view.emittedCalls.add(ready.id);
      writeCall(ready);
      continue;
    }
    if (running.length > 0) {
      if (unreported.length > 0 && unreported.some((c) => c !== "") && rng() < (o.reportWhileWaiting ?? 0.35)) {
        writeText(reportSentence(unreported.splice(0), rng) + " ");
        continue;
      }
      const text = formatTrapBlock();
      now += o.countTokens(text) * tpotMs;
      push({ by: "model", kind: "trap", text, atMs: round1(now) });
      now = Math.max(now, Math.min(...running.map((r) => r.doneAt)));
      continue;
    }
    if (calls.some((c) => !view.emittedCalls.has(c.id))) throw new Error(`the DAG cannot complete: ${calls.filter((c) => !view.emittedCalls.has(c.id)).map((c) => c.id).join(", ")} wait on calls that never run`);
    writeText(reportSentence(unreported.splice(0), rng));
    return { tpotMs, calls: made, segments, totalMs: Math.round(now) };
  }
}

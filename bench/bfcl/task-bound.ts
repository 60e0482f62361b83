/**
 * @module The analytic bound of one benchmark task from what the engine
 * measured: each call block's tokens (tokenized exactly as the scripted
 * policy emits it) × the measured time per token, the tools' actual
 * durations, the final text's tokens, and user interrupts as release times.
 * Given the measured time to read an injected token, a second bound adds the
 * reading every system must do: each result and each user message, as the
 * engine formats it, read before anything that depends on it.
 */
import type { LlamaModel } from "node-llama-cpp";
import { formatCallBlock, formatInterruptBlock } from "../../common/src/index.js";
import { findMarkerTokens } from "../../engine-pod/src/cml/index.js";
import { markerTokenIds, tokenizeCml } from "../../engine-pod/src/engine/runtime.js";
import { formatCallBody } from "../../engine-pod/src/policy/call-format.js";
import { lptListSchedule, syncLatency, type BoundCall } from "./bound.js";
import type { BenchTask } from "./workloads.js";

export interface TokenCounter {
  callTokens(tool: string, args: Record<string, unknown>, id: string): number;
  textTokens(text: string): number;
  /** An `[INTR] id [HEAD] value [END]` block, as the engine injects it. */
  interruptTokens(id: string, value: string): number;
}

export function tokenCounter(model: LlamaModel, callStyle: "json" | "python"): TokenCounter {
  const markerIds = markerTokenIds(model, findMarkerTokens(model).markerTokens);
  return {
    callTokens: (tool, args, id) => tokenizeCml(model, markerIds, formatCallBlock(formatCallBody(tool, args, callStyle), id)).length,
    textTokens: (text) => (text === "" ? 0 : model.tokenize(text, false, "trimLeadingSpace").length),
    interruptTokens: (id, value) => tokenizeCml(model, markerIds, formatInterruptBlock(id, value)).length,
  };
}

export interface TaskBound {
  /** The paper's bound: generation and tool time only. */
  boundMs: number;
  /** With reading: each result and user message prefilled at the measured cost per token (= boundMs without a read cost). */
  boundWithReadsMs: number;
  /** Generator time spent reading in that schedule, ms. */
  readMs: number;
  /** L_Sync with zero overhead: every call generated, then run, one after another (Appendix A), plus the tail. */
  syncModelMs: number;
  /** Mean generation time of a call block, ms (Ḡ). */
  meanGenMs: number;
  /** Mean tool time, ms (Ē). */
  meanExecMs: number;
  /** Tokens the bound generates (every call block and the final text), and their time. */
  genTokens: number;
  genMs: number;
}

export interface ReadCost {
  /** Measured time to read one injected token, ms. */
  msPerToken: number;
  /** What every tool returns in the benchmark (the replayed output). */
  toolOutput: string;
  /** Ids the user messages are injected under, in order. */
  userIds: readonly string[];
}

export interface BoundOptions {
  /** Reading costs (the second bound); without, it equals the first. */
  read?: ReadCost;
  /**
   * When each user message actually reached the engine, ms after the first
   * token (the bound's zero), in order; default the scheduled `atMs`. The
   * schedule is relative to the session's start, and the first token comes a
   * prompt fill later.
   */
  userArrivalMs?: readonly number[];
}

export function taskBound(task: BenchTask, tpotMs: number, counter: TokenCounter, finalText: string, options: BoundOptions = {}): TaskBound {
  const { read } = options;
  const arrival = (i: number): number => options.userArrivalMs?.[i] ?? task.userInterrupts[i]!.atMs;
  const release = new Map(task.userInterrupts.flatMap((u, i) => u.callIds.map((id) => [id, arrival(i)] as const)));
  const calls: BoundCall[] = task.calls.map((c) => {
    const releaseMs = release.get(c.id);
    return {
      id: c.id,
      genMs: counter.callTokens(c.tool, c.arguments, c.id) * tpotMs,
      execMs: c.latencyMs,
      dependsOn: c.dependsOn,
      ...(releaseMs !== undefined ? { releaseMs } : {}),
    };
  });
  const tailTokens = counter.textTokens(finalText);
  const tailMs = tailTokens * tpotMs;
  const schedule = lptListSchedule(calls, tailMs);
  let withReads = schedule;
  if (read !== undefined) {
    const readCalls = calls.map(({ releaseMs: _released, ...c }) => ({ ...c, readMs: counter.interruptTokens(c.id, read.toolOutput) * read.msPerToken }));
    const userReads = task.userInterrupts.map((u, i) => ({
      atMs: arrival(i),
      readMs: counter.interruptTokens(read.userIds[i]!, u.text) * read.msPerToken,
      releases: u.callIds,
    }));
    withReads = lptListSchedule(readCalls, tailMs, 0, userReads);
  }
  return {
    boundMs: schedule.makespanMs,
    boundWithReadsMs: withReads.makespanMs,
    readMs: withReads.readMs,
    syncModelMs: syncLatency(calls) + tailMs,
    meanGenMs: calls.reduce((s, c) => s + c.genMs, 0) / calls.length,
    meanExecMs: calls.reduce((s, c) => s + c.execMs, 0) / calls.length,
    genTokens: task.calls.reduce((s, c) => s + counter.callTokens(c.tool, c.arguments, c.id), 0) + tailTokens,
    genMs: calls.reduce((s, c) => s + c.genMs, 0) + tailMs,
  };
}

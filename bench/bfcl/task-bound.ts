/**
 * @module The analytic bound of one benchmark task from what the engine
 * measured: each call block's tokens (tokenized exactly as the scripted
 * policy emits it) × the measured time per token, the tools' actual
 * durations, the final text's tokens, and user interrupts as release times.
 */
import type { LlamaModel } from "node-llama-cpp";
import { formatCallBlock } from "../../common/src/index.js";
import { findMarkerTokens } from "../../engine-pod/src/cml/index.js";
import { markerTokenIds, tokenizeCml } from "../../engine-pod/src/engine/runtime.js";
import { formatCallBody } from "../../engine-pod/src/policy/call-format.js";
import { lptListSchedule, syncLatency, type BoundCall } from "./bound.js";
import type { BenchTask } from "./workloads.js";

export interface TokenCounter {
  callTokens(tool: string, args: Record<string, unknown>, id: string): number;
  textTokens(text: string): number;
}

export function tokenCounter(model: LlamaModel, callStyle: "json" | "python"): TokenCounter {
  const markerIds = markerTokenIds(model, findMarkerTokens(model).markerTokens);
  return {
    callTokens: (tool, args, id) => tokenizeCml(model, markerIds, formatCallBlock(formatCallBody(tool, args, callStyle), id)).length,
    textTokens: (text) => (text === "" ? 0 : model.tokenize(text, false, "trimLeadingSpace").length),
  };
}

export interface TaskBound {
  boundMs: number;
  /** L_Sync with zero overhead: every call generated, then run, one after another (Appendix A), plus the tail. */
  syncModelMs: number;
  /** Mean generation time of a call block, ms (Ḡ). */
  meanGenMs: number;
  /** Mean tool time, ms (Ē). */
  meanExecMs: number;
}

export function taskBound(task: BenchTask, tpotMs: number, counter: TokenCounter, finalText: string): TaskBound {
  const release = new Map(task.userInterrupts.flatMap((u) => u.callIds.map((id) => [id, u.atMs] as const)));
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
  const tailMs = counter.textTokens(finalText) * tpotMs;
  const schedule = lptListSchedule(calls, tailMs);
  return {
    boundMs: schedule.makespanMs,
    syncModelMs: syncLatency(calls) + tailMs,
    meanGenMs: calls.reduce((s, c) => s + c.genMs, 0) / calls.length,
    meanExecMs: calls.reduce((s, c) => s + c.execMs, 0) / calls.length,
  };
}

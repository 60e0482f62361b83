/**
 * @module Benchmark tasks with call DAGs, built from BFCL entries (AsyncLM §6):
 * - parallel: one task per single-turn entry; its calls are independent.
 * - multistep: three different multi-turn first turns in one task, i.e. three
 *   independent chains (the paper's v3-multistep-parallel), chosen by seed.
 * - interrupts: the multistep tasks with the second and third chains arriving
 *   as user-triggered interrupts at 200 and 400 ms instead of in the prompt (§6.6).
 * Each call gets a seeded tool duration; the same seed gives the same tasks,
 * order and durations to every mode.
 */
import type { ScriptedCall, ToolSpec } from "../../common/src/index.js";
import type { BfclEntry, GroundTruthCall, MultiTurnEntry } from "./bfcl-reader.js";
import { drawLatencyMs, mulberry32, shuffled, type LatencyDistribution, DEFAULT_LATENCY } from "./seeded-random.js";

export type WorkloadName = "parallel" | "multistep" | "interrupts";
export const WORKLOADS: readonly WorkloadName[] = ["parallel", "multistep", "interrupts"];

export interface BenchCall extends ScriptedCall {
  /** The tool's actual run time in this benchmark (what the replay tool sleeps). */
  latencyMs: number;
}

export interface UserInterrupt {
  atMs: number;
  text: string;
  /** Calls the model may only emit after this interrupt arrives. */
  callIds: string[];
}

export interface BenchTask {
  id: string;
  workload: WorkloadName;
  /** BFCL entry ids the task was built from. */
  sources: string[];
  prompt: string;
  tools: ToolSpec[];
  calls: BenchCall[];
  userInterrupts: UserInterrupt[];
}

/**
 * Dependencies inside one turn: calls run in order (each turn of a stateful
 * BFCL backend reads what the previous call changed: `cd` then `mv`), except
 * that consecutive calls to the same tool form a fan-out — BFCL's parallel
 * pattern (`get_stock_info(AAPL)`, `get_stock_info(MSFT)`) — and depend only
 * on the calls before the run, not on each other.
 */
export function turnDependencies(calls: readonly GroundTruthCall[]): string[][] {
  const deps: string[][] = [];
  let previousGroup: number[] = [];
  let group: number[] = [];
  calls.forEach((call, i) => {
    if (i > 0 && calls[i - 1]!.tool !== call.tool) {
      previousGroup = group;
      group = [];
    }
    group.push(i);
    deps.push(previousGroup.map(String));
  });
  return deps;
}

export interface BuildOptions {
  seed: number;
  latency?: LatencyDistribution;
  /** Multiplies every tool duration (the E/G sweep). */
  latencyScale?: number;
  /** Cap on tasks per workload (quick runs). */
  maxTasks?: number;
  /**
   * Which tool definitions go into a task's prompt: every tool of its BFCL
   * entries (`all`, the paper's setting: ~7k tokens of definitions for a
   * multi-step task), or only the tools its calls use (`called`: a context
   * several times shorter, so each token decodes faster — how `--quick` fits
   * in minutes on a CPU).
   */
  toolDocs?: "all" | "called";
}

/** The task's tool definitions under {@link BuildOptions.toolDocs}. */
function taskTools(tools: ToolSpec[], calls: readonly { tool: string }[], options: BuildOptions): ToolSpec[] {
  const unique = uniqueTools(tools);
  if (options.toolDocs !== "called") return unique;
  const called = new Set(calls.map((c) => c.tool));
  return unique.filter((t) => called.has(t.name));
}

function uniqueTools(tools: ToolSpec[]): ToolSpec[] {
  const seen = new Map<string, ToolSpec>();
  for (const tool of tools) if (!seen.has(tool.name)) seen.set(tool.name, tool);
  return [...seen.values()];
}

/** Adds each call's duration and shows it to the model as the LPT hint. */
function withLatencies(taskId: string, calls: Omit<BenchCall, "latencyMs">[], options: BuildOptions, rngSeed: number): BenchCall[] {
  const rng = mulberry32(rngSeed);
  return calls.map((c) => {
    const latencyMs = drawLatencyMs(rng, options.latency ?? DEFAULT_LATENCY, options.latencyScale ?? 1);
    return { ...c, id: `${taskId}_${c.id}`, dependsOn: c.dependsOn.map((d) => `${taskId}_${d}`), latencyMs, estimatedLatencyMs: latencyMs };
  });
}

export function buildParallelTasks(entries: readonly BfclEntry[], options: BuildOptions): BenchTask[] {
  const single = entries.filter((e) => e.kind === "single" && e.calls.length > 0);
  const picked = options.maxTasks === undefined ? single : shuffled(single, mulberry32(options.seed)).slice(0, options.maxTasks);
  return picked.map((entry, index) => {
    if (entry.kind !== "single") throw new Error("unreachable");
    const id = `p${index}`;
    const calls = entry.calls.map((c, i) => ({ id: `c${i}`, tool: c.tool, arguments: c.arguments, dependsOn: [] as string[] }));
    return {
      id,
      workload: "parallel",
      sources: [entry.id],
      prompt: entry.messages.filter((m) => m.role === "user").map((m) => m.content).join("\n"),
      tools: taskTools(entry.tools, calls, options),
      calls: withLatencies(id, calls, options, options.seed * 7919 + index),
      userInterrupts: [],
    };
  });
}

/** Three first turns of different multi-turn entries, each turn a chain. */
function combinedFirstTurns(picked: MultiTurnEntry[]): { chains: Omit<BenchCall, "latencyMs">[][]; texts: string[] } {
  const chains = picked.map((entry, chain) => {
    const calls = entry.callsByTurn[0]!;
    const deps = turnDependencies(calls);
    return calls.map((c, i) => ({
      id: `k${chain}c${i}`,
      tool: c.tool,
      arguments: c.arguments,
      dependsOn: deps[i]!.map((d) => `k${chain}c${d}`),
    }));
  });
  return { chains, texts: picked.map((e) => e.turns[0]!) };
}

export function buildMultistepTasks(entries: readonly BfclEntry[], options: BuildOptions & { userInterrupts: boolean }): BenchTask[] {
  const multi = entries.filter((e): e is MultiTurnEntry => e.kind === "multi" && (e.callsByTurn[0]?.length ?? 0) > 0);
  if (multi.length < 3) return [];
  const rng = mulberry32(options.seed);
  const count = Math.min(options.maxTasks ?? Math.floor(multi.length / 3), Math.floor(multi.length / 3));
  const order = shuffled(multi, rng);
  const tasks: BenchTask[] = [];
  for (let index = 0; index < count; index++) {
    const picked = order.slice(index * 3, index * 3 + 3);
    const id = `${options.userInterrupts ? "i" : "m"}${index}`;
    const { chains, texts } = combinedFirstTurns(picked);
    // Same durations for the multistep and interrupt variants of a task.
    const calls = withLatencies(id, chains.flat(), options, options.seed * 104729 + index);
    const userInterrupts: UserInterrupt[] = options.userInterrupts
      ? [1, 2].map((chain) => ({
          atMs: chain * 200,
          text: texts[chain]!,
          callIds: calls.filter((c) => c.id.startsWith(`${id}_k${chain}c`)).map((c) => c.id),
        }))
      : [];
    tasks.push({
      id,
      workload: options.userInterrupts ? "interrupts" : "multistep",
      sources: picked.map((e) => e.id),
      prompt: options.userInterrupts ? texts[0]! : texts.map((t, i) => `Task ${i + 1}: ${t}`).join("\n"),
      tools: taskTools(picked.flatMap((e) => e.tools), calls, options),
      calls,
      userInterrupts,
    });
  }
  return tasks;
}

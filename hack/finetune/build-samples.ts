/**
 * @module Fine-tuning samples from BFCL tasks (AsyncLM §4.2): each task's
 * call DAG (built as the BFCL benchmark builds it) is simulated several
 * times with fresh latencies and TPOT, and each run becomes one chat
 * conversation: the CML system prompt listing the tools with the run's
 * latency estimates, the user's request, and the assistant turn with its
 * calls, traps and the engine's interrupts where the simulation put them.
 */
import type { ToolSpec } from "../../common/src/index.js";
import { buildCmlSystemPrompt, type CallStyle } from "../../engine-pod/src/prompt/index.js";
import type { BenchTask } from "../../bench/bfcl/workloads.js";
import { simulate, type Rng, type SampleSegment } from "./simulate.js";
import type { FinetuneSample } from "./validate.js";

export interface BuildSampleOptions {
  rng: Rng;
  countTokens: (text: string) => number;
  callStyle?: CallStyle;
}

/** One simulated conversation for `task`. */
export function buildSample(task: BenchTask, o: BuildSampleOptions): FinetuneSample & { segments: SampleSegment[] } {
  const dag = task.calls.map((c) => ({ id: c.id, tool: c.tool, arguments: c.arguments, dependsOn: c.dependsOn }));
  const sim = simulate(dag, { rng: o.rng, countTokens: o.countTokens, ...(o.callStyle !== undefined ? { callStyle: o.callStyle } : {}) });
  // Each tool's estimate in the prompt: its (first) call's drawn time, as the paper shows estimates to the model.
  const tools: ToolSpec[] = task.tools.map((t) => {
    const first = sim.calls.find((c) => c.tool === t.name);
    const { pool: _pool, ...spec } = t;
    return first === undefined ? spec : { ...spec, estimatedLatencyMs: first.estimatedLatencyMs };
  });
  return {
    messages: [
      { role: "system", content: buildCmlSystemPrompt({ tools, fewShot: false, ...(o.callStyle !== undefined ? { callStyle: o.callStyle } : {}) }) },
      { role: "user", content: task.prompt },
      { role: "assistant", content: sim.segments.map((s) => s.text).join("") },
    ],
    tools,
    dag: sim.calls.map((c) => ({ id: c.id, tool: c.tool, arguments: c.arguments, dependsOn: c.dependsOn, estimatedLatencyMs: c.estimatedLatencyMs })),
    segments: sim.segments,
    meta: { task: task.id, workload: task.workload, sources: task.sources, tpot_ms: sim.tpotMs, makespan_ms: sim.totalMs },
  };
}

/**
 * @module Fine-tuning samples from tasks with a call DAG (AsyncLM §4.2): each
 * task is simulated (fresh latencies, TPOT, results and failures) and becomes
 * one chat conversation, rendered exactly as the engine renders a session
 * for a fine-tuned model: the CML system prompt (the syntax in one line, by
 * default) listing the tools with the run's latency estimates and no
 * few-shot examples, the client's messages,
 * and the assistant turn with its calls, traps, text and the engine's
 * interrupts where the simulation put them.
 */
import type { ChatMessage, ScriptedCall, ToolSpec } from "../../common/src/index.js";
import { cmlPromptMessages, type CallStyle, type PromptInstructions } from "../../engine-pod/src/prompt/index.js";
import { simulate, type Rng, type SampleSegment, type SampleShape, type SimulatedCall } from "./simulate.js";

/** What a sample is built from: a client's conversation, its tools and the calls that answer it. */
export interface TrainingTask {
  id: string;
  /** Optional system text, then the user's request: what a client sends. */
  messages: ChatMessage[];
  tools: ToolSpec[];
  calls: ScriptedCall[];
  /** BFCL ids the task comes from. */
  sources: string[];
  /** How the task was made (`bfcl`, `variant`, `multistep`). */
  origin: string;
}

export interface FinetuneSample {
  /** The rendered conversation: the CML system prompt, the client's messages, the assistant turn. */
  messages: { role: "system" | "user" | "assistant"; content: string }[];
  /** The sample's tools (the system prompt lists them) and its calls: what validation checks against. */
  tools: ToolSpec[];
  dag: SimulatedCall[];
  segments: SampleSegment[];
  meta: Record<string, unknown>;
}

export interface BuildSampleOptions {
  rng: Rng;
  countTokens: (text: string) => number;
  callStyle?: CallStyle;
  shape?: SampleShape;
  /** How much of CML the system prompt explains (default `brief`: the model learns CML from the samples). */
  instructions?: PromptInstructions;
}

/** One simulated conversation for `task`. */
export function buildSample(task: TrainingTask, o: BuildSampleOptions): FinetuneSample {
  const sim = simulate(task.calls, { rng: o.rng, countTokens: o.countTokens, ...(o.callStyle !== undefined ? { callStyle: o.callStyle } : {}), ...(o.shape !== undefined ? { shape: o.shape } : {}) });
  // Each tool's estimate in the prompt: its (first) call's drawn time, as the paper shows estimates to the model.
  const tools: ToolSpec[] = task.tools.map((t) => {
    const first = sim.calls.find((c) => c.tool === t.name);
    const { pool: _pool, ...spec } = t;
    return first === undefined ? spec : { ...spec, estimatedLatencyMs: first.estimatedLatencyMs };
  });
  const prompt = cmlPromptMessages({ messages: task.messages, tools, examples: [], instructions: o.instructions ?? "brief", ...(o.callStyle !== undefined ? { callStyle: o.callStyle } : {}) });
  return {
    messages: [
      ...prompt.map((m) => ({ role: m.role === "system" ? ("system" as const) : ("user" as const), content: m.content })),
      { role: "assistant", content: sim.segments.map((s) => s.text).join("") },
    ],
    tools,
    dag: sim.calls,
    segments: sim.segments,
    meta: { task: task.id, origin: task.origin, sources: task.sources, shape: o.shape ?? "async", tpot_ms: sim.tpotMs, makespan_ms: sim.totalMs },
  };
}

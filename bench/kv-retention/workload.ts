/**
 * @module The kv-retention bench's workload, from its seed alone: agent
 * sessions arriving as a Poisson process, each a prompt and a chain of tool
 * calls whose durations come from a heavy-tailed mixture (most calls return
 * in milliseconds, a few take long). Each latency class is a tool that
 * declares its class's mean latency, as a real tool declares
 * `estimatedLatencyMs`; the engine sees that, never the drawn duration.
 */
import { abortableDelay, requireArg, type BuiltinTool } from "../../common/src/builtin-tools/index.js";
import type { CreateSessionRequest, ToolSpec } from "../../common/src/index.js";
import { seededRandom } from "../lib/stats.js";

/** One latency class: this share of calls, around this mean. */
export interface LatencyClass {
  readonly share: number;
  readonly meanMs: number;
}

/** `SHARE@MEAN_MS,...`, e.g. `0.6@50,0.3@2000,0.1@30000`; shares are normalised. */
export function parseLatencyMix(value: string): LatencyClass[] {
  const classes = value.split(",").map((part) => {
    const m = /^\s*([0-9.]+)@([0-9.]+)\s*$/.exec(part);
    if (m === null) throw new Error(`--tool-latency: "${part}" is not SHARE@MEAN_MS`);
    const share = Number(m[1]);
    const meanMs = Number(m[2]);
    if (!(share > 0) || !(meanMs >= 0)) throw new Error(`--tool-latency: "${part}" needs a share > 0 and a mean ≥ 0`);
    return { share, meanMs };
  });
  const total = classes.reduce((n, c) => n + c.share, 0);
  return classes.map((c) => ({ share: c.share / total, meanMs: c.meanMs }));
}

export interface WorkloadOptions {
  sessions: number;
  /** Arrivals per second. */
  rate: number;
  /** Calls per session, in sequence (each one a pause). */
  calls: number;
  /** Words in each session's prompt (about 1.3 tokens each). */
  promptWords: number;
  mix: readonly LatencyClass[];
  /** Spread of each call's duration around its class mean (log-normal σ). */
  sigma: number;
  seed: number;
}

export interface PlannedSession {
  readonly index: number;
  /** Arrival, ms after the start. */
  readonly arrivalMs: number;
  readonly request: CreateSessionRequest;
  /** The calls' drawn durations (the floor no policy removes). */
  readonly toolMs: readonly number[];
}

const WORDS = "the agent reads a long task statement with its files tools and notes then plans each step carefully before it calls anything".split(" ");

/** A tool per latency class; each run waits what its call's arguments say. */
export function classTools(mix: readonly LatencyClass[]): { tools: BuiltinTool[]; specs: ToolSpec[] } {
  const tools = mix.map((c, i): BuiltinTool => {
    const name = `tool_${i}`;
    return {
      spec: {
        name,
        description: `a tool that usually takes about ${Math.round(c.meanMs)} ms`,
        parameters: { type: "object", properties: { ms: { type: "integer", minimum: 0 } }, required: ["ms"], additionalProperties: false },
        estimatedLatencyMs: c.meanMs,
      },
      run: async (args, signal) => {
        const ms = requireArg(name, args, "ms", "number");
        await abortableDelay(ms, signal);
        return `done after ${ms} ms`;
      },
    };
  });
  return { tools, specs: tools.map((t) => t.spec) };
}

/** The sessions, the same for every policy. */
export function planSessions(options: WorkloadOptions, specs: readonly ToolSpec[]): PlannedSession[] {
  const rng = seededRandom(options.seed);
  const normal = (): number => Math.sqrt(-2 * Math.log(1 - rng())) * Math.cos(2 * Math.PI * rng());
  const pick = (): number => {
    let u = rng();
    for (let i = 0; i < options.mix.length; i++) {
      u -= options.mix[i]!.share;
      if (u < 0) return i;
    }
    return options.mix.length - 1;
  };
  const out: PlannedSession[] = [];
  let t = 0;
  for (let index = 0; index < options.sessions; index++) {
    t += (-Math.log(1 - rng()) / options.rate) * 1000;
    const words = Array.from({ length: options.promptWords }, () => WORDS[Math.floor(rng() * WORDS.length)]!);
    const calls = Array.from({ length: options.calls }, (_, i) => {
      const cls = pick();
      const mean = options.mix[cls]!.meanMs;
      const ms = Math.max(0, Math.round(mean * Math.exp(options.sigma * normal() - (options.sigma * options.sigma) / 2)));
      return { id: `c${i}`, tool: specs[cls]!.name, arguments: { ms }, dependsOn: i === 0 ? [] : [`c${i - 1}`] };
    });
    out.push({
      index,
      arrivalMs: t,
      toolMs: calls.map((c) => c.arguments.ms),
      request: {
        prompt: `Task ${index}: ${words.join(" ")}`,
        tools: [...specs],
        policy: { type: "lpt-dag", calls, thinkTokens: 8, finalText: " All steps are done and the task is complete." },
        prefixReuse: false,
        maxTokens: 512,
      },
    });
  }
  return out;
}

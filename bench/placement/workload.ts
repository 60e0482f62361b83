/**
 * @module The placement workload, a pure function of its flags and seed: A
 * apps, each with its own long system prompt (about P tokens of seeded
 * words), and sessions arriving as a Poisson process at rate R for D
 * seconds, each a short scripted task of the app — a little text, a few
 * tool calls through the tool runners, a short answer. Every policy is run
 * on the same arrivals.
 */
import { withAppDefaults, type AppConfig } from "../../common/src/protocol/index.js";
import { seededRandom } from "../lib/stats.js";
import { sleepChain } from "../lib/sleep-chain.js";

const WORDS = (
  "time year people way day man thing woman life child world school state family student group country problem hand part place case week company system " +
  "program question work government number night point home water room mother area money story fact month lot right study book eye job word business issue " +
  "side kind head house service friend father power hour game line end member law car city community name president team minute idea kid body information back"
).split(" ");

export interface Arrival {
  /** ms after the start. */
  at: number;
  app: number;
  body: Record<string, unknown>;
}

export interface WorkloadOptions {
  apps: number;
  promptTokens: number;
  rate: number;
  durationS: number;
  seed: number;
  /** Tool calls per task. */
  calls: number;
  /** Tool run time per call, ms. */
  toolMs: number;
  /** Every session its own app (a prompt no other session shares) instead of one of `apps`. */
  distinct?: boolean;
}

export const BENCH_NS = "bench";
export const BENCH_POOL = "engines";
export const TOOL_POOL = "tools";

export const SLEEP_SPEC = {
  name: "sleep",
  description: "Waits ms milliseconds, then returns result.",
  parameters: { type: "object", properties: { ms: { type: "integer", minimum: 0 }, result: { type: "string" } }, required: ["ms"] },
  estimatedLatencyMs: 200,
  pool: { namespace: BENCH_NS, name: TOOL_POOL },
};

/** An app's name in run `run` (each run gets apps of its own). */
export function appName(run: number, app: number): string {
  return `r${run}-app-${app}`;
}

/**
 * The apps of run `run`, each with a distinct system prompt of about
 * `promptTokens` tokens. Every run gets prompts of its own (same lengths,
 * other words), so nothing an engine cached in an earlier run is reusable:
 * each run starts cold without restarting the engines.
 */
export function benchApps(o: Pick<WorkloadOptions, "apps" | "promptTokens" | "seed">, run: number): AppConfig[] {
  const rnd = seededRandom(o.seed * 7919 + 17 + run * 104_729);
  return Array.from({ length: o.apps }, (_, i) => {
    const words = Array.from({ length: o.promptTokens }, () => WORDS[Math.floor(rnd() * WORDS.length)]!);
    return withAppDefaults({
      namespace: BENCH_NS,
      name: appName(run, i),
      enginePool: { name: BENCH_POOL },
      systemPrompt: `Run ${run}. You are agent ${i}. Context follows. ${words.join(" ")}`,
      maxTokens: 512,
      tools: [SLEEP_SPEC],
    });
  });
}

/** Poisson arrivals: exponential gaps with mean 1/rate. */
export function arrivals(o: WorkloadOptions): Arrival[] {
  const rnd = seededRandom(o.seed);
  const out: Arrival[] = [];
  let t = 0;
  for (let n = 0; ; n++) {
    t += (-Math.log(1 - rnd()) / o.rate) * 1000;
    if (t > o.durationS * 1000) break;
    // Drawn even with --distinct, so the random stream and the arrival times stay the same.
    const drawn = Math.floor(rnd() * o.apps);
    const app = o.distinct === true ? n : drawn;
    const calls = sleepChain(o.calls, o.toolMs);
    out.push({
      at: t,
      app,
      body: {
        prompt: `Task ${n}: look up item ${Math.floor(rnd() * 1e6)} and report.`,
        kvPolicy: "keep",
        policy: { type: "lpt-dag", calls, thinkTokens: 4, finalText: "Done." },
      },
    });
  }
  return out;
}

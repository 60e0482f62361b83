/**
 * @module Injection through the real engine (`createEngine`, in-process
 * executor), driven by scripted policies — every token is still a real forward
 * pass, and results say `scripted: true`.
 *
 * - `text`: sessions decode plain text (no call blocks, so never in a critical
 *   section) while user interrupts arrive at random times: the injection delay
 *   outside critical sections, and the engine's prefilled-token counter before
 *   and after the injections (must not move).
 * - `tools`: LPT-DAG sessions emit `sleep` calls of random duration with
 *   thinking text between them; results arrive as interrupts (some while a
 *   call block is open, so deferred), and the sessions trap when waiting.
 */
import { pino } from "pino";
import type { ScriptedCall, SessionEvent, ToolSpec } from "../../common/src/index.js";
import { createBuiltinTools } from "../../common/src/builtin-tools/index.js";
import { createEngine, DEFAULT_ENGINE_OPTIONS, loadRuntime, type Engine, type Runtime } from "../../engine-pod/src/engine/index.js";
import { InProcessExecutor } from "../../engine-pod/src/executor/index.js";
import { median, quantile, r3, seededRandom } from "../lib/stats.js";

export interface EngineInjectionResult {
  sessions: number;
  interrupts: number;
  delayTokens: number[];
  delayMs: number[];
  /** Engine `tokensPrefilled` after the prompts were filled vs at the end (text scenario). */
  prefilledBefore: number;
  prefilledAfter: number;
  injectedTokens: number;
  tpotMs: number;
  interruptsDeferred: number;
  traps: { decision: string; costMs: number; contextTokens: number; expectedWaitMs: number }[];
  scripted: boolean;
  /** Text scenario: tokens llama.cpp evaluated on the engine's sequences meanwhile (its own meter)… */
  llamaEvaluated?: number;
  /** …and what decode steps plus injected interrupt tokens account for. */
  llamaExpected?: number;
}

type Done = Extract<SessionEvent, { type: "done" }>;

async function start(modelPath: string, sequences: number, contextSize: number): Promise<{ engine: Engine; executor: InProcessExecutor }> {
  const log = pino({ level: process.env["LOG_LEVEL"] ?? "warn" });
  const executor = new InProcessExecutor({ tools: createBuiltinTools() });
  const options = { ...DEFAULT_ENGINE_OPTIONS, modelPath, sequences, contextSize, threads: 1, kvPolicy: "auto" as const, maxTokens: 1000 };
  // The bench loads the runtime itself so it can read llama.cpp's own token meters.
  const runtime = await loadRuntime(options, log);
  const engine = await createEngine(options, executor, log, { runtime });
  runtimes.set(engine, runtime);
  return { engine, executor };
}

const runtimes = new WeakMap<Engine, Runtime>();

/** Plain-text sessions + user interrupts at random times. */
export async function textScenario(
  modelPath: string,
  options: { sessions: number; tokensPerSession: number; interruptsPerSession: number; expectedTpotMs: number; seed: number },
): Promise<EngineInjectionResult> {
  const { engine, executor } = await start(modelPath, options.sessions, 1024);
  const random = seededRandom(options.seed);
  try {
    const words = " the agent keeps decoding while tools run";
    const pieces = [words.repeat(Math.ceil(options.tokensPerSession / 8))];
    const sessions = Array.from({ length: options.sessions }, (_, i) =>
      engine.createSession({ prompt: `Session ${i}: narrate while updates arrive.`, mode: "async", policy: { type: "text", pieces } }),
    );
    // Wait until every prompt is filled (first text) before reading the prefilled counter.
    await Promise.all(sessions.map((s) => firstOf(s, "text")));
    const prefilledBefore = engine.stats().tokensPrefilled;
    const meterBefore = llamaMeter(engine);
    const decodedBefore = engine.stats().tokensDecoded;
    const horizon = options.tokensPerSession * options.expectedTpotMs * 0.6;
    const timers: NodeJS.Timeout[] = [];
    for (const s of sessions) {
      for (let k = 0; k < options.interruptsPerSession; k++) {
        timers.push(setTimeout(() => engine.interrupt(s.id, { kind: "user", value: `update ${k}: all fine` }), random() * horizon));
      }
    }
    const done = await Promise.all(sessions.map((s) => s.finished));
    timers.forEach(clearTimeout);
    const prefilledAfter = engine.stats().tokensPrefilled;
    const result = collect(sessions.map((s) => s.events), done, { prefilledBefore, prefilledAfter, deferred: engine.stats().interruptsDeferred });
    const meterDelta = llamaMeter(engine) - meterBefore;
    const decoded = engine.stats().tokensDecoded - decodedBefore;
    return { ...result, llamaEvaluated: meterDelta, llamaExpected: decoded + result.injectedTokens };
  } finally {
    await engine.close();
    await executor.close();
  }
}

/** Every token llama.cpp evaluated on the engine's sequences (input + output meters). */
function llamaMeter(engine: Engine): number {
  return runtimes.get(engine)!.sequences.reduce((sum, seq) => sum + seq.tokenMeter.usedInputTokens + seq.tokenMeter.usedOutputTokens, 0);
}

/** LPT-DAG sessions over `sleep` calls with random durations. */
export async function toolScenario(
  modelPath: string,
  options: { sessions: number; callsPerSession: number; thinkTokens: number; maxSleepMs: number; seed: number },
): Promise<EngineInjectionResult> {
  // The tool prompt (CML instructions, few-shot, tool list) is long: leave room after it.
  const { engine, executor } = await start(modelPath, options.sessions, 2048);
  const random = seededRandom(options.seed);
  const sleep = [...createBuiltinTools().values()].find((t) => t.spec.name === "sleep")?.spec as ToolSpec;
  try {
    const sessions = Array.from({ length: options.sessions }, (_, i) => {
      const calls: ScriptedCall[] = Array.from({ length: options.callsPerSession }, (_, c) => {
        const ms = Math.round(50 + random() * options.maxSleepMs);
        return { id: `c${c}`, tool: "sleep", arguments: { ms }, dependsOn: c === options.callsPerSession - 1 ? ["c0"] : [], estimatedLatencyMs: ms };
      });
      return engine.createSession({
        prompt: `Session ${i}: run the calls.`,
        tools: [sleep],
        mode: "async",
        policy: { type: "lpt-dag", calls, thinkTokens: options.thinkTokens, finalText: " all results are in." },
      });
    });
    await Promise.all(sessions.map((s) => firstOf(s, "text").catch(() => undefined)));
    const prefilledBefore = engine.stats().tokensPrefilled;
    const done = await Promise.all(sessions.map((s) => s.finished));
    const prefilledAfter = engine.stats().tokensPrefilled;
    return collect(sessions.map((s) => s.events), done, { prefilledBefore, prefilledAfter, deferred: engine.stats().interruptsDeferred });
  } finally {
    await engine.close();
    await executor.close();
  }
}

function firstOf(session: { events: readonly SessionEvent[]; subscribe(l: (e: SessionEvent) => void): () => void; finished: Promise<Done> }, type: SessionEvent["type"]): Promise<void> {
  if (session.events.some((e) => e.type === type)) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const off = session.subscribe((e) => {
      if (e.type === type) {
        off();
        resolve();
      }
    });
    void session.finished.then(() => {
      off();
      reject(new Error(`session finished before a ${type} event`));
    });
  });
}

function collect(
  eventLists: (readonly SessionEvent[])[],
  done: Done[],
  counters: { prefilledBefore: number; prefilledAfter: number; deferred: number },
): EngineInjectionResult {
  const delayTokens: number[] = [];
  const delayMs: number[] = [];
  const traps: EngineInjectionResult["traps"] = [];
  for (const events of eventLists) {
    for (const e of events) {
      if (e.type === "interrupt") {
        delayTokens.push(e.delayTokens);
        delayMs.push(e.delayMs);
      } else if (e.type === "resume") {
        const trap = [...events].reverse().find((x) => x.type === "trap" && x.t <= e.t);
        if (trap?.type === "trap") traps.push({ decision: e.decision, costMs: r3(e.costMs), contextTokens: trap.contextTokens, expectedWaitMs: r3(trap.expectedWaitMs) });
      }
    }
  }
  const bad = done.filter((d) => d.reason === "error" || d.reason === "cancelled");
  if (bad.length > 0) throw new Error(`engine sessions ended badly: ${bad.map((d) => d.reason).join(", ")}`);
  return {
    sessions: done.length,
    interrupts: delayTokens.length,
    delayTokens,
    delayMs,
    prefilledBefore: counters.prefilledBefore,
    prefilledAfter: counters.prefilledAfter,
    injectedTokens: done.reduce((s, d) => s + d.usage.injectedTokens, 0),
    tpotMs: r3(median(done.map((d) => d.timings.tpotMs))),
    interruptsDeferred: counters.deferred,
    traps,
    scripted: done.every((d) => d.scripted),
  };
}

/** p50/p99/max of a delay list. */
export function summarize(values: readonly number[]): { p50: number; p99: number; max: number } {
  return { p50: r3(quantile(values, 0.5)), p99: r3(quantile(values, 0.99)), max: r3(values.reduce((m, v) => Math.max(m, v), 0)) };
}

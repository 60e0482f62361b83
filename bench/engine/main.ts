/**
 * @module `npm run bench -- engine [--json FILE] [--quick] [--preset bench|test]
 * [--skip-engine]`: the engine benchmark on the generated `bench` model, one
 * thread. Measures decode time per token, prefill rate, the trap handler's
 * keep / swap / recompute costs at 128, 512 and 2048 context tokens, and
 * interrupt injection delay and re-prefill — through the real engine with
 * scripted policies, and through a loop of its own over a bare sequence as a
 * cross-check. Prints a markdown table; writes JSON with `--json`.
 */
import { writeFile } from "node:fs/promises";
import os from "node:os";
import { getLlama, getModuleVersion, LlamaLogLevel } from "node-llama-cpp";
import { KvManager } from "../../engine-pod/src/kv/index.js";
import { ensureModel, isPresetName, type PresetName } from "../../engine-pod/src/model/index.js";
import { summarize, textScenario, toolScenario, type EngineInjectionResult } from "./engine-bench.js";
import { fillerTokens, injectionLoop, measureTpot, measureTrapCosts, type TrapSizeResult } from "./sequence-bench.js";
import { BenchFlags } from "../lib/flags.js";
import { r3 } from "../lib/stats.js";

const TRAP_SIZES = [128, 512, 2048] as const;
const AUTO_WAITS_MS = [10, 100, 1000, 10_000] as const;

interface Args {
  json?: string;
  preset: PresetName;
  quick: boolean;
  skipEngine: boolean;
  seed: number;
}

function parseArgs(argv: string[]): Args {
  const f = new BenchFlags(argv, ["--json FILE", "--preset bench|test", "--quick", "--skip-engine", "--seed N"]);
  const preset = f.str("preset") ?? "bench";
  if (!isPresetName(preset)) throw new Error(`--preset: unknown preset ${preset}`);
  return {
    ...(f.str("json") !== undefined ? { json: f.str("json")! } : {}),
    preset,
    quick: f.has("quick"),
    skipEngine: f.has("skip-engine"),
    seed: f.num("seed", 7, { integer: true }),
  };
}

/** Entry point called by bench/main.ts. */
export async function run(argv: string[]): Promise<void> {
  const args = parseArgs(argv);
  const started = performance.now();
  const log = (msg: string): void => console.error(`[engine-bench ${((performance.now() - started) / 1000).toFixed(1)}s] ${msg}`);
  const modelPath = await ensureModel({ preset: args.preset });
  log(`model ${modelPath}`);

  // ── one bare sequence: TPOT, prefill, trap costs, own injection loop ──────
  const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error, maxThreads: 1 });
  const model = await llama.loadModel({ modelPath });
  const maxContext = Math.max(...TRAP_SIZES) + 64;
  const context = await model.createContext({ contextSize: maxContext, sequences: 1, threads: 1 });
  const seq = context.getSequence();
  const kv = new KvManager({ policy: "auto" });
  const tokens = fillerTokens(model, maxContext);
  let costModel;
  let tpot;
  const trap: Record<string, TrapSizeResult> = {};
  const prefill: { tokens: number; ms: number; tokensPerS: number }[] = [];
  let loop;
  try {
    costModel = await kv.calibrate(seq);
    log(`calibrated in ${costModel.calibrationMs.toFixed(0)} ms`);
    tpot = await measureTpot(seq, tokens.slice(0, 64), args.quick ? 24 : 64);
    log(`tpot ${tpot.medianMs.toFixed(2)} ms`);
    for (const n of TRAP_SIZES) {
      const reps = n >= 2048 ? { keep: 5, swap: 3, recompute: 1 } : n >= 512 ? { keep: 5, swap: 3, recompute: 2 } : { keep: 5, swap: 5, recompute: 3 };
      const { prefillMs, result } = await measureTrapCosts(kv, seq, tokens, n, args.quick ? { keep: 2, swap: 2, recompute: 1 } : reps, AUTO_WAITS_MS);
      prefill.push({ tokens: n, ms: r3(prefillMs), tokensPerS: r3((n / prefillMs) * 1000) });
      trap[String(n)] = result;
      log(`trap costs at ${n} tokens: swap ${result.swap.totalMs} ms, recompute ${result.recompute.totalMs} ms`);
    }
    loop = await injectionLoop(seq, tokens.slice(0, 64), (i) => model.tokenize(` [result ${i}] done.`), {
      steps: args.quick ? 80 : 200,
      interrupts: args.quick ? 12 : 40,
      expectedTpotMs: tpot.medianMs,
      seed: args.seed,
    });
    log(`own injection loop: ${loop.interrupts} interrupts`);
  } finally {
    await kv.close();
    await context.dispose();
    await model.dispose();
    await llama.dispose();
  }

  // ── the real engine ─────────────────────────────────────────────────────
  let text: EngineInjectionResult | undefined;
  let tools: EngineInjectionResult | undefined;
  let engineError: string | undefined;
  if (!args.skipEngine) {
    try {
      text = await textScenario(modelPath, {
        sessions: 4,
        tokensPerSession: args.quick ? 60 : 160,
        interruptsPerSession: args.quick ? 4 : 12,
        expectedTpotMs: tpot.medianMs * 2.5,
        seed: args.seed,
      });
      log(`engine text scenario: ${text.interrupts} interrupts`);
      tools = await toolScenario(modelPath, {
        sessions: 2,
        callsPerSession: args.quick ? 3 : 5,
        thinkTokens: 12,
        maxSleepMs: args.quick ? 400 : 1200,
        seed: args.seed,
      });
      log(`engine tool scenario: ${tools.interrupts} interrupts, ${tools.traps.length} traps`);
    } catch (err) {
      engineError = err instanceof Error ? err.message : String(err);
      log(`engine scenario failed: ${engineError}`);
    }
  }

  // Outside critical sections: the engine's text scenario when it ran, else the own loop.
  const outside = text ?? undefined;
  const injectionSource = outside !== undefined ? "engine (scripted text policy, user interrupts)" : "own loop over a bare sequence (engine not run)";
  const delays = outside?.delayTokens ?? loop.delayTokens;
  // Engine: its prefilled-token counter across the injections, cross-checked by
  // llama.cpp's own meter (evaluated tokens beyond decode steps + injected tokens).
  const reprefill = outside !== undefined ? outside.prefilledAfter - outside.prefilledBefore : loop.reprefillTokens;
  const reprefillMeter =
    outside?.llamaEvaluated !== undefined && outside.llamaExpected !== undefined ? outside.llamaEvaluated - outside.llamaExpected : loop.reprefillTokens;
  const pr512 = prefill.find((p) => p.tokens === 512) ?? prefill[0];

  const result = {
    suite: "engine",
    preset: args.preset,
    model: modelPath,
    threads: 1,
    machine: { cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model ?? "unknown", loadavg: os.loadavg().map(r3) },
    nodeLlamaCpp: await getModuleVersion(),
    scripted: true,
    tpot_ms: r3(tpot.medianMs),
    tpot_p90_ms: r3(tpot.p90Ms),
    prefill_tokens_per_s: pr512?.tokensPerS ?? 0,
    prefill,
    injection_delay_tokens_p99: summarize(delays).p99,
    injection_source: injectionSource,
    reprefill_tokens_on_inject: reprefill,
    reprefill_tokens_on_inject_llama_meter: reprefillMeter,
    trap: Object.fromEntries(
      Object.entries(trap).map(([n, r]) => [n, { keep: r.keep.totalMs, swap: r.swap.totalMs, recompute: r.recompute.totalMs }]),
    ),
    trap_detail: trap,
    cost_model: costModel,
    injection: {
      engine_text: text === undefined ? null : { ...withoutLists(text), delay_tokens: summarize(text.delayTokens), delay_ms: summarize(text.delayMs) },
      engine_tools: tools === undefined ? null : { ...withoutLists(tools), delay_tokens: summarize(tools.delayTokens), delay_ms: summarize(tools.delayMs) },
      own_loop: {
        interrupts: loop.interrupts,
        injected_tokens: loop.injectedTokens,
        reprefill_tokens: loop.reprefillTokens,
        delay_tokens: summarize(loop.delayTokens),
        delay_ms: summarize(loop.delayMs),
      },
      ...(engineError === undefined ? {} : { engine_error: engineError }),
    },
    wall_s: r3((performance.now() - started) / 1000),
  };

  if (args.json !== undefined) await writeFile(args.json, `${JSON.stringify(result, null, 2)}\n`);
  console.log(renderTable(result, trap));
}

function withoutLists(r: EngineInjectionResult): Omit<EngineInjectionResult, "delayTokens" | "delayMs"> {
  const { delayTokens: _t, delayMs: _m, ...rest } = r;
  void _t;
  void _m;
  return rest;
}

function renderTable(
  r: {
    preset: string;
    tpot_ms: number;
    prefill_tokens_per_s: number;
    injection_delay_tokens_p99: number;
    injection_source: string;
    reprefill_tokens_on_inject: number;
    reprefill_tokens_on_inject_llama_meter: number;
    injection: { engine_tools: { delay_tokens: { p99: number }; interruptsDeferred: number; traps: unknown[] } | null; own_loop: { delay_tokens: { p99: number }; reprefill_tokens: number } };
    wall_s: number;
  },
  trap: Record<string, TrapSizeResult>,
): string {
  const lines = [
    `## Engine benchmark (preset \`${r.preset}\`, 1 thread, scripted policies, real forward passes)`,
    "",
    "| metric | value |",
    "| --- | --- |",
    `| tpot_ms (median, 1 sequence) | ${r.tpot_ms} |`,
    `| prefill_tokens_per_s (512-token chunk) | ${r.prefill_tokens_per_s} |`,
    `| injection_delay_tokens_p99 (outside critical sections; ${r.injection_source}) | ${r.injection_delay_tokens_p99} |`,
    `| reprefill_tokens_on_inject (engine counter / llama.cpp meter) | ${r.reprefill_tokens_on_inject} / ${r.reprefill_tokens_on_inject_llama_meter} |`,
    `| own-loop injection delay p99 (tokens) / re-prefill | ${r.injection.own_loop.delay_tokens.p99} / ${r.injection.own_loop.reprefill_tokens} |`,
  ];
  if (r.injection.engine_tools !== null) {
    lines.push(
      `| engine tool scenario: delay p99 incl. deferred (tokens) / deferred / traps | ${r.injection.engine_tools.delay_tokens.p99} / ${r.injection.engine_tools.interruptsDeferred} / ${r.injection.engine_tools.traps.length} |`,
    );
  }
  lines.push(
    "",
    "| context tokens | keep ms | swap ms (save + load) | recompute ms (re-evaluate) | model estimate swap / recompute ms | state bytes | continuation preserved | auto @ wait 10 / 100 / 1000 / 10000 ms |",
    "| --- | --- | --- | --- | --- | --- | --- | --- |",
  );
  for (const [n, t] of Object.entries(trap)) {
    lines.push(
      `| ${n} | ${t.keep.totalMs} | ${t.swap.totalMs} (${t.swap.pauseMs} + ${t.swap.resumeMs}) | ${t.recompute.totalMs} | ${t.estimated.swapMs} / ${t.estimated.recomputeMs} | ${t.swap.bytes ?? "-"} | ${t.continuationPreserved ? "yes" : "NO"} | ${Object.values(t.autoDecision).join(" / ")} |`,
    );
  }
  lines.push("", `wall time ${r.wall_s} s`);
  return lines.join("\n");
}

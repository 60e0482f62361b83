/**
 * @module `npm run bench -- facts [--json FILE] [--preset bench|test]
 * [--threads 1,2,4] [--quick]`: the llama.cpp facts the engine's design rests
 * on, measured on a bare node-llama-cpp context (no engine code), so anyone
 * can re-check them on their own hardware:
 *
 * 1. threads — decode time per token at each thread count;
 * 2. batching — ms per lockstep step for 1, 2, 4 and 8 sequences on
 *    contiguous ids (what batching buys on this hardware) and for 8 on every
 *    other id (why the slot allocator compacts);
 * 3. injection — appending an interrupt's tokens in place vs re-prefilling the
 *    whole history (why interrupts are injected, not re-entered);
 * 4. fork — copying a resident prefix into another sequence vs evaluating it
 *    again (why shared prefixes are forked);
 * 5. batching strategy — many concurrent prefills under `firstInFirstOut` vs
 *    `maximumParallelism`.
 *
 * Swap vs recompute for the trap handler is measured by `npm run bench --
 * engine`. docs/engine-facts.md quotes a run of this suite.
 */
import { writeFile } from "node:fs/promises";
import os from "node:os";
import { getLlama, LlamaLogLevel, type LlamaContextSequence, type Token } from "node-llama-cpp";
import { forkPrefix } from "../../engine-pod/src/kv/index.js";
import { ensureModel, isPresetName, type PresetName } from "../../engine-pod/src/model/index.js";
import { BenchFlags } from "../lib/flags.js";
import { median, r3 } from "../lib/stats.js";
import { fillerTokens } from "../engine/sequence-bench.js";
import { lockstepStepMs } from "../lib/step-costs.js";

interface Args {
  json?: string;
  preset: PresetName;
  threads: number[];
  quick: boolean;
}

function parseArgs(argv: string[]): Args {
  const f = new BenchFlags(argv, ["--json FILE", "--preset bench|test", "--threads 1,2,4", "--quick"]);
  const preset = f.str("preset") ?? "bench";
  if (!isPresetName(preset)) throw new Error(`--preset: unknown preset ${preset}`);
  return {
    ...(f.str("json") !== undefined ? { json: f.str("json")! } : {}),
    preset,
    threads: f.nums("threads", [1, 2, 4], { integer: true, min: 1 }),
    quick: f.has("quick"),
  };
}

/** Entry point called by bench/main.ts. */
export async function run(argv: string[]): Promise<void> {
  const args = parseArgs(argv);
  const say = (msg: string): void => console.error(`[facts] ${msg}`);
  const modelPath = await ensureModel({ preset: args.preset });
  const maxThreads = Math.max(...args.threads);
  const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error, maxThreads });
  const model = await llama.loadModel({ modelPath });
  const tokens = fillerTokens(model, 2048);
  const result: Record<string, unknown> = {
    suite: "facts",
    preset: args.preset,
    machine: { cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model ?? "unknown", loadavg: os.loadavg().map(r3) },
  };
  try {
    // 1. threads
    const threads: { threads: number; tpotMs: number; tokens: number }[] = [];
    for (const t of args.threads) {
      const ctx = await model.createContext({ contextSize: 256, sequences: 1, threads: t });
      try {
        const m = await decodeTpot(ctx.getSequence(), tokens.slice(0, 32), args.quick ? 12 : 32, 20_000);
        threads.push({ threads: t, tpotMs: r3(m.medianMs), tokens: m.tokens });
        say(`threads ${t}: ${m.medianMs.toFixed(2)} ms/token over ${m.tokens} tokens`);
      } finally {
        await ctx.dispose();
      }
    }
    result["threads"] = threads;

    // 2. batching: 1, 2, 4 and 8 lockstep sequences on contiguous ids, and 8 on ids 0,2,..,14
    const gaps: Record<string, number> = {};
    {
      const ctx = await model.createContext({ contextSize: 16 * 128, sequences: 16, threads: 1 });
      try {
        const seqs = Array.from({ length: 16 }, () => ctx.getSequence());
        for (const [label, ids] of [["1", [0]], ["2", [0, 1]], ["4", [0, 1, 2, 3]], ["contiguous", [0, 1, 2, 3, 4, 5, 6, 7]], ["gapped", [0, 2, 4, 6, 8, 10, 12, 14]]] as const) {
          gaps[label] = r3(await lockstepStepMs(ids.map((i) => seqs[i]!), tokens.slice(0, 16), args.quick ? 10 : 30));
          for (const s of seqs) await s.clearHistory();
          say(`${ids.length} sequence(s) on ${label} ids: ${gaps[label]} ms/step`);
        }
      } finally {
        await ctx.dispose();
      }
    }
    result["batch_gap_ms_per_step"] = gaps;

    // 3. injection vs re-prefill, and 4. fork vs evaluate
    const injection: { historyTokens: number; injectMs: number; reprefillMs: number }[] = [];
    const fork: { prefixTokens: number; method: string; forkMs: number; evaluateMs: number }[] = [];
    {
      const ctx = await model.createContext({ contextSize: 2048, sequences: 2, threads: 1 });
      try {
        const [a, b] = [ctx.getSequence(), ctx.getSequence()];
        const intr = model.tokenize(" [result 1] the weather in Paris is 18C.", false, "trimLeadingSpace");
        for (const n of args.quick ? [256] : [256, 1024]) {
          await a.clearHistory();
          await a.evaluateWithoutGeneratingNewTokens(tokens.slice(0, n));
          let t0 = performance.now();
          await a.evaluateWithoutGeneratingNewTokens(intr);
          const injectMs = performance.now() - t0;
          await a.clearHistory();
          t0 = performance.now();
          await a.evaluateWithoutGeneratingNewTokens([...tokens.slice(0, n), ...intr]);
          const reprefillMs = performance.now() - t0;
          injection.push({ historyTokens: n, injectMs: r3(injectMs), reprefillMs: r3(reprefillMs) });
          say(`inject ${intr.length} tokens after ${n}: ${injectMs.toFixed(1)} ms in place vs ${reprefillMs.toFixed(1)} ms re-prefill`);

          await b.clearHistory();
          const forked = await forkPrefix(b, a, n);
          await b.clearHistory();
          t0 = performance.now();
          await b.evaluateWithoutGeneratingNewTokens(tokens.slice(0, n));
          const evaluateMs = performance.now() - t0;
          fork.push({ prefixTokens: n, method: forked.method, forkMs: r3(forked.ms), evaluateMs: r3(evaluateMs) });
          say(`prefix of ${n}: ${forked.method} ${forked.ms.toFixed(1)} ms vs evaluate ${evaluateMs.toFixed(1)} ms`);
        }
      } finally {
        await ctx.dispose();
      }
    }
    result["injection"] = injection;
    result["fork"] = fork;

    // 5. batching strategy for concurrent prefills
    const strategy: Record<string, number> = {};
    const prefills = args.quick ? 4 : 8;
    const prefillLen = args.quick ? 128 : 256;
    for (const s of ["firstInFirstOut", "maximumParallelism"] as const) {
      const ctx = await model.createContext({
        contextSize: prefills * (prefillLen + 16),
        sequences: prefills,
        threads: 1,
        batching: { itemPrioritizationStrategy: s },
      });
      try {
        const seqs = Array.from({ length: prefills }, () => ctx.getSequence());
        const t0 = performance.now();
        await Promise.all(seqs.map((q) => q.evaluateWithoutGeneratingNewTokens(tokens.slice(0, prefillLen))));
        strategy[s] = r3(performance.now() - t0);
        say(`${prefills} concurrent prefills of ${prefillLen} tokens, ${s}: ${strategy[s]} ms`);
      } finally {
        await ctx.dispose();
      }
    }
    result["prefill_strategy_ms"] = { prefills, tokensEach: prefillLen, ...strategy };
  } finally {
    await model.dispose();
    await llama.dispose();
  }
  console.log(report(result));
  if (args.json) {
    await writeFile(args.json, `${JSON.stringify(result, null, 2)}\n`);
    say(`wrote ${args.json}`);
  }
}

/** Median ms per decoded token after `prompt`, stopping early once `budgetMs` is spent. */
async function decodeTpot(seq: LlamaContextSequence, prompt: Token[], n: number, budgetMs: number): Promise<{ medianMs: number; tokens: number }> {
  const gaps: number[] = [];
  const start = performance.now();
  let last = start;
  const gen = seq.evaluate(prompt, { temperature: 0 });
  let first = true;
  for await (const _ of gen) {
    const now = performance.now();
    if (!first) gaps.push(now - last);
    first = false;
    last = now;
    if (gaps.length >= n || now - start > budgetMs) break;
  }
  await seq.clearHistory();
  return { medianMs: median(gaps), tokens: gaps.length };
}

function report(r: Record<string, unknown>): string {
  const lines = ["| fact | measurement |", "| --- | --- |"];
  for (const t of r["threads"] as { threads: number; tpotMs: number }[]) lines.push(`| decode, ${t.threads} thread(s) | ${t.tpotMs} ms/token |`);
  const g = r["batch_gap_ms_per_step"] as Record<string, number>;
  for (const b of ["1", "2", "4"]) if (g[b] !== undefined) lines.push(`| ${b} sequence(s) in lockstep | ${g[b]} ms/step (batching gain ${r3((Number(b) * g["1"]!) / g[b]!)}x) |`);
  lines.push(`| 8 sequences, contiguous ids | ${g["contiguous"]} ms/step (batching gain ${r3((8 * g["1"]!) / g["contiguous"]!)}x) |`, `| 8 sequences, every other id | ${g["gapped"]} ms/step |`);
  for (const i of r["injection"] as { historyTokens: number; injectMs: number; reprefillMs: number }[]) {
    lines.push(`| interrupt after ${i.historyTokens} tokens | ${i.injectMs} ms in place vs ${i.reprefillMs} ms re-prefill (${r3(i.reprefillMs / i.injectMs)}x) |`);
  }
  for (const f of r["fork"] as { prefixTokens: number; method: string; forkMs: number; evaluateMs: number }[]) {
    lines.push(`| shared prefix of ${f.prefixTokens} tokens | ${f.method} ${f.forkMs} ms vs evaluate ${f.evaluateMs} ms |`);
  }
  const s = r["prefill_strategy_ms"] as Record<string, number>;
  lines.push(`| ${s["prefills"]} concurrent prefills × ${s["tokensEach"]} | firstInFirstOut ${s["firstInFirstOut"]} ms, maximumParallelism ${s["maximumParallelism"]} ms |`);
  const m = r["machine"] as { cpus: number; loadavg: number[] };
  lines.push("", `machine: ${m.cpus} cpus, load average ${m.loadavg.join(" ")} at start (timings scale with load)`);
  return lines.join("\n");
}


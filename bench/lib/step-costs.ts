/**
 * @module What a forward pass costs on this machine, measured on a bare
 * node-llama-cpp context (no engine code, one thread, as the benches' engines
 * run): ms per prefilled token, and ms per lockstep decode step with b
 * sequences advancing together (continuous batching). `b x step(1) / step(b)`
 * is what batching b requests buys here; on a GPU it is close to b for small
 * b, on a CPU much less. The programs bench bounds its speedups with it.
 */
import { getLlama, LlamaLogLevel, type LlamaContextSequence, type Token } from "node-llama-cpp";
import { ensureModel, type PresetName } from "../../engine-pod/src/model/index.js";
import { fillerTokens } from "../engine/sequence-bench.js";
import { median, r3 } from "./stats.js";

export interface StepCosts {
  /** ms per token of a prefill of `prefillTokens` tokens. */
  prefillMsPerToken: number;
  prefillTokens: number;
  /** Lockstep batch size → median ms per decode step. */
  stepMs: Record<number, number>;
}

/** Median ms per step when every sequence advances one token per step together. */
export async function lockstepStepMs(seqs: LlamaContextSequence[], prompt: Token[], steps: number): Promise<number> {
  const gens = seqs.map((s) => s.evaluate(prompt, { temperature: 0 })[Symbol.asyncIterator]());
  await Promise.all(gens.map((g) => g.next())); // prefill + first token
  const times: number[] = [];
  for (let i = 0; i < steps; i++) {
    const t0 = performance.now();
    await Promise.all(gens.map((g) => g.next()));
    times.push(performance.now() - t0);
  }
  await Promise.all(gens.map((g) => g.return?.(undefined)));
  return median(times);
}

/** Measures {@link StepCosts} for `preset` at each batch size in `batches` (one thread). */
export async function measureStepCosts(preset: PresetName, batches: readonly number[], options: { steps?: number; prefillTokens?: number } = {}): Promise<StepCosts> {
  const steps = options.steps ?? 16;
  const prefillTokens = options.prefillTokens ?? 128;
  const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error, maxThreads: 1 });
  const model = await llama.loadModel({ modelPath: await ensureModel({ preset }) });
  try {
    const tokens = fillerTokens(model, prefillTokens + 16);
    const widest = Math.max(1, ...batches);
    const ctx = await model.createContext({ contextSize: widest * (prefillTokens + steps + 64), sequences: widest, threads: 1 });
    try {
      const seqs = Array.from({ length: widest }, () => ctx.getSequence());
      // Warm-up, then the median of three prefills.
      const prefill: number[] = [];
      for (let i = 0; i < 4; i++) {
        await seqs[0]!.clearHistory();
        const t0 = performance.now();
        await seqs[0]!.evaluateWithoutGeneratingNewTokens(tokens.slice(0, prefillTokens));
        if (i > 0) prefill.push(performance.now() - t0);
      }
      await seqs[0]!.clearHistory();
      const stepMs: Record<number, number> = {};
      for (const b of [...new Set(batches)].sort((x, y) => x - y)) {
        stepMs[b] = r3(await lockstepStepMs(seqs.slice(0, b), tokens.slice(0, 16), steps));
        for (const s of seqs) await s.clearHistory();
      }
      return { prefillMsPerToken: r3(median(prefill) / prefillTokens), prefillTokens, stepMs };
    } finally {
      await ctx.dispose();
    }
  } finally {
    await model.dispose();
    await llama.dispose();
  }
}

/**
 * @module Measurements on one real llama.cpp sequence (no engine): decode time
 * per token, prefill rate, the trap handler's keep / swap / recompute costs at
 * several context sizes (each round checked to leave the greedy continuation
 * unchanged), and an interrupt-injection loop of its own over the sequence's
 * `evaluate()` generator (arrivals at random times, injected at the next token
 * boundary through `next(tokens)`), with a re-prefill check from llama.cpp's
 * own token meter.
 */
import type { LlamaContextSequence, LlamaModel, Token } from "node-llama-cpp";
import { estimateTrapCosts, type KvManager } from "../../engine-pod/src/kv/index.js";
import { median, quantile, r3, seededRandom } from "../lib/stats.js";

export interface TrapCost {
  /** Pause side (keep: nothing; swap: save + clear; recompute: clear), ms. */
  pauseMs: number;
  /** Resume side (keep: nothing; swap: load; recompute: re-evaluation), ms. */
  resumeMs: number;
  totalMs: number;
  /** Swap only: state size. */
  bytes?: number;
  reps: number;
}

export interface TrapSizeResult {
  contextTokens: number;
  keep: TrapCost;
  swap: TrapCost;
  recompute: TrapCost;
  /** Every round left the sequence's greedy continuation unchanged. */
  continuationPreserved: boolean;
  /** What the calibrated auto policy picks under full pressure, by expected wait (ms). */
  autoDecision: Record<string, string>;
  /** The calibrated cost model's estimates for this size, to compare with the measured costs. */
  estimated: { swapMs: number; recomputeMs: number };
}

export interface InjectionLoopResult {
  interrupts: number;
  delayTokens: number[];
  delayMs: number[];
  injectedTokens: number;
  /** Tokens llama.cpp evaluated beyond prompt + fed-back samples + injected tokens (0 = nothing re-prefilled). */
  reprefillTokens: number;
}

/** `count` tokens of filler text. */
export function fillerTokens(model: LlamaModel, count: number): Token[] {
  const text = "The agent keeps decoding while its tools run, and every result arrives as an interrupt in the stream. ";
  const out: Token[] = [];
  while (out.length < count) out.push(...model.tokenize(text));
  return out.slice(0, count);
}

/** Greedy decode of `steps` tokens after `prompt`; returns the median and p90 gap between tokens. */
export async function measureTpot(seq: LlamaContextSequence, prompt: readonly Token[], steps: number): Promise<{ medianMs: number; p90Ms: number; steps: number }> {
  await seq.clearHistory();
  const gaps: number[] = [];
  let last = 0;
  let n = 0;
  for await (const token of seq.evaluate(prompt.slice())) {
    void token;
    const now = performance.now();
    if (n > 0) gaps.push(now - last);
    last = now;
    if (++n > steps) break;
  }
  await seq.clearHistory();
  return { medianMs: median(gaps), p90Ms: quantile(gaps, 0.9), steps: gaps.length };
}

async function greedyTail(seq: LlamaContextSequence, next: Token, count: number): Promise<Token[]> {
  const out: Token[] = [];
  for await (const token of seq.evaluate([next])) {
    out.push(token);
    if (out.length >= count) break;
  }
  return out;
}

/**
 * Fills `seq` with `n` tokens (timed: the prefill figure), then runs keep,
 * swap and recompute rounds through the KV manager. After every round the
 * sequence must hold the same tokens and continue with the same greedy tokens.
 */
export async function measureTrapCosts(
  kv: KvManager,
  seq: LlamaContextSequence,
  tokens: readonly Token[],
  n: number,
  reps: { keep: number; swap: number; recompute: number },
  waits: readonly number[],
): Promise<{ prefillMs: number; result: TrapSizeResult }> {
  await seq.clearHistory();
  const t0 = performance.now();
  await seq.evaluateWithoutGeneratingNewTokens(tokens.slice(0, n));
  const prefillMs = performance.now() - t0;
  const next = tokens[n] as Token;
  const reference = await greedyTail(seq, next, 3);
  await seq.eraseContextTokenRanges([{ start: n, end: seq.nextTokenIndex }]);
  const held = seq.contextTokens.slice();
  let preserved = true;

  const rounds = async (decision: "keep" | "swap" | "recompute", count: number): Promise<TrapCost> => {
    const pause: number[] = [];
    const resume: number[] = [];
    let bytes: number | undefined;
    for (let i = 0; i < count; i++) {
      const { paused, pauseMs } = await kv.trap({ sequence: seq, expectedWaitMs: 0, kvPressure: 1, override: decision });
      if (paused.decision === "swap") bytes = paused.bytes;
      const r = await kv.resume(paused);
      pause.push(pauseMs);
      resume.push(r.resumeMs);
      const same = seq.nextTokenIndex === held.length && seq.contextTokens.every((t, j) => t === held[j]);
      const tail = await greedyTail(seq, next, 3);
      await seq.eraseContextTokenRanges([{ start: n, end: seq.nextTokenIndex }]);
      if (!same || tail.some((t, j) => t !== reference[j])) preserved = false;
    }
    const pauseMs = median(pause);
    const resumeMs = median(resume);
    return { pauseMs: r3(pauseMs), resumeMs: r3(resumeMs), totalMs: r3(pauseMs + resumeMs), ...(bytes === undefined ? {} : { bytes }), reps: count };
  };

  const keep = await rounds("keep", reps.keep);
  const swap = await rounds("swap", reps.swap);
  const recompute = await rounds("recompute", reps.recompute);
  const autoDecision: Record<string, string> = {};
  for (const w of waits) autoDecision[String(w)] = kv.decide({ expectedWaitMs: w, contextTokens: n, kvPressure: 1, override: "auto" }).decision;
  const estimate = estimateTrapCosts(kv.costModel, n);
  await seq.clearHistory();
  return {
    prefillMs,
    result: {
      contextTokens: n,
      keep,
      swap,
      recompute,
      continuationPreserved: preserved,
      autoDecision,
      estimated: { swapMs: r3(estimate.swapMs), recomputeMs: r3(estimate.recomputeMs) },
    },
  };
}

/**
 * Decodes `steps` tokens greedily while `interrupts` results arrive at
 * uniformly random times over the expected run; each is appended at the next
 * token boundary as `[sampled token, ...interrupt tokens]` through the
 * generator's `next()`. Delay = tokens decoded between arrival and injection.
 */
export async function injectionLoop(
  seq: LlamaContextSequence,
  prompt: readonly Token[],
  interruptTokens: (i: number) => Token[],
  options: { steps: number; interrupts: number; expectedTpotMs: number; seed: number },
): Promise<InjectionLoopResult> {
  await seq.clearHistory();
  const random = seededRandom(options.seed);
  const queue: { i: number; arrivedAt: number; arrivedStep: number }[] = [];
  let steps = 0;
  const horizon = options.steps * options.expectedTpotMs * 0.8;
  const timers = Array.from({ length: options.interrupts }, (_, i) =>
    setTimeout(() => queue.push({ i, arrivedAt: performance.now(), arrivedStep: steps }), random() * horizon),
  );
  // llama.cpp's meter: input + output together count every evaluated token.
  const evaluatedSoFar = (): number => seq.tokenMeter.usedInputTokens + seq.tokenMeter.usedOutputTokens;
  const meterBefore = evaluatedSoFar();
  const delayTokens: number[] = [];
  const delayMs: number[] = [];
  let fed = 0;
  let injected = 0;
  const gen = seq.evaluate(prompt.slice());
  try {
    let step = await gen.next();
    while (!step.done) {
      steps++;
      if (steps >= options.steps) break;
      const token = step.value;
      let input: Token[] = [token];
      if (queue.length > 0) {
        const now = performance.now();
        for (const q of queue.splice(0)) {
          const tokens = interruptTokens(q.i);
          input = input.concat(tokens);
          injected += tokens.length;
          delayTokens.push(steps - q.arrivedStep);
          delayMs.push(now - q.arrivedAt);
        }
      }
      fed += input.length;
      step = await gen.next(input);
    }
  } finally {
    await gen.return(undefined);
    for (const timer of timers) clearTimeout(timer);
  }
  const evaluated = evaluatedSoFar() - meterBefore;
  const expected = prompt.length + fed;
  await seq.clearHistory();
  return { interrupts: delayTokens.length, delayTokens, delayMs, injectedTokens: injected, reprefillTokens: evaluated - expected };
}

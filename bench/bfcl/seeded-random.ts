/**
 * @module A small seeded PRNG (mulberry32) and the tool-latency distribution
 * of the benchmark: every run with the same seed sees the same tasks, the
 * same call order and the same tool durations in every mode.
 */

import { seededRandom } from "../lib/stats.js";

export type Rng = () => number;

/** The benchmark's seeded PRNG (mulberry32). */
export const mulberry32: (seed: number) => Rng = seededRandom;

/** Fisher–Yates on a copy. */
export function shuffled<T>(items: readonly T[], rng: Rng): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rng() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

export interface LatencyDistribution {
  minMs: number;
  maxMs: number;
  /** Mean of the exponential part added to the minimum, before truncation. */
  tailMeanMs: number;
}

/**
 * The paper's measured tool range: 30–500 ms with a mean near 110 ms. A
 * minimum plus an exponential tail truncated at the maximum gives that shape:
 * with a tail mean of 81.5 ms the truncated mean is 30 + 81.5 − 470·e^(−470/81.5)/(1 − e^(−470/81.5)) ≈ 110 ms.
 */
export const DEFAULT_LATENCY: LatencyDistribution = { minMs: 30, maxMs: 500, tailMeanMs: 81.5 };

/** One draw, multiplied by `scale` (the sweep's knob). Inverse-CDF of the truncated exponential. */
export function drawLatencyMs(rng: Rng, dist: LatencyDistribution = DEFAULT_LATENCY, scale = 1): number {
  const span = dist.maxMs - dist.minMs;
  const cdfMax = 1 - Math.exp(-span / dist.tailMeanMs);
  const tail = -dist.tailMeanMs * Math.log(1 - rng() * cdfMax);
  return Math.round((dist.minMs + Math.min(tail, span)) * scale);
}

/** Analytic mean of {@link drawLatencyMs} at scale 1. */
export function latencyMeanMs(dist: LatencyDistribution = DEFAULT_LATENCY): number {
  const span = dist.maxMs - dist.minMs;
  const m = dist.tailMeanMs;
  // Mean of an exponential truncated to [0, span].
  const truncatedMean = m - (span * Math.exp(-span / m)) / (1 - Math.exp(-span / m));
  return dist.minMs + truncatedMean;
}

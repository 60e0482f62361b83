/** @module Percentiles and medians for benchmark figures (nearest-rank on sorted copies). */

export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

export const median = (values: readonly number[]): number => percentile(values, 50);

export const mean = (values: readonly number[]): number =>
  values.length === 0 ? NaN : values.reduce((s, v) => s + v, 0) / values.length;

/**
 * @module Speculation's own counters, beside the tool cache's: what the
 * draft proposed and the main model accepted (O2), results appended without
 * a trap (O3), draft runs, and the tool time each hit saved. Plain numbers
 * the engine-side pieces advance; the Prometheus collectors read them at
 * scrape time.
 */
import type { ToolCacheStats } from "./tool-cache.js";

export class SpeculationStats {
  /** Turns at which the draft ran (client-side speculation). */
  draftRuns = 0;
  /** Draft model time over all runs, ms (g summed). */
  draftMs = 0;
  /** O2: draft tokens proposed for validation / accepted by the main model. */
  draftTokensProposed = 0;
  draftTokensAccepted = 0;
  /** O2 validation passes. */
  validations = 0;
  /** O3: cached results appended at a call's end without a trap or re-entry. */
  o3Appends = 0;
  /** Tool time masked by hits, ms (per hit: how long the tool had run when the main model asked). */
  savedToolMs = 0;
  /** One entry per hit (bounded ring, for the histogram). */
  private readonly savedQueue: number[] = [];

  recordHit(savedMs: number): void {
    this.savedToolMs += savedMs;
    if (this.savedQueue.length < 10_000) this.savedQueue.push(savedMs);
  }

  /** The per-hit savings since the last call (drained by the metrics collector). */
  drainSaved(): number[] {
    return this.savedQueue.splice(0);
  }
}

/** Everything speculation reports: the cache's counters and its own. */
export interface SpeculationSnapshot {
  cache: ToolCacheStats;
  stats: SpeculationStats;
  /** The draft model loaded, or null. */
  draftModel: string | null;
}

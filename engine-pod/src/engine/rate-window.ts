/**
 * @module A rate over a sliding time window (decode tokens per second for the
 * engine's stats and the router's heartbeats): counts are bucketed per
 * 100 ms so recording stays O(1) however many tokens a step decodes.
 */
export class RateWindow {
  private readonly buckets: { at: number; count: number }[] = [];

  constructor(
    private readonly windowMs = 5000,
    private readonly now: () => number = () => performance.now(),
  ) {}

  record(count: number): void {
    const t = this.now();
    const last = this.buckets[this.buckets.length - 1];
    if (last !== undefined && t - last.at < 100) last.count += count;
    else this.buckets.push({ at: t, count });
    this.trim(t);
  }

  /** Events per second over the window (0 when nothing was recorded in it). */
  perSecond(): number {
    const t = this.now();
    this.trim(t);
    const total = this.buckets.reduce((sum, b) => sum + b.count, 0);
    return total === 0 ? 0 : Math.round((total / this.windowMs) * 1000 * 10) / 10;
  }

  private trim(t: number): void {
    while (this.buckets.length > 0 && t - this.buckets[0]!.at > this.windowMs) this.buckets.shift();
  }
}

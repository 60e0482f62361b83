/**
 * @module A pool several AgentApps use gets the most any of them wants: each
 * app's decision is recorded per pool, and a want expires when its app has
 * not renewed it for a while (the app was deleted, or stopped referencing the
 * pool), so a departed app does not hold replicas up forever.
 */
export class PoolWants {
  private readonly byPool = new Map<string, Map<string, { desired: number; at: number }>>();

  /** `ttlMs`: how long an app's want counts without being renewed. */
  constructor(private readonly ttlMs: number) {}

  /** Records that `app` wants `desired` replicas of `pool` at `now`; returns the most any app still wants. */
  record(pool: string, app: string, desired: number, now: number): number {
    const wants = this.byPool.get(pool) ?? new Map<string, { desired: number; at: number }>();
    this.byPool.set(pool, wants);
    wants.set(app, { desired, at: now });
    let most = desired;
    for (const [k, w] of wants) {
      if (w.at < now - this.ttlMs) wants.delete(k);
      else most = Math.max(most, w.desired);
    }
    return most;
  }

  /** Drops an app's wants at once (the app is gone). */
  forget(app: string): void {
    for (const wants of this.byPool.values()) wants.delete(app);
  }
}

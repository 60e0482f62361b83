/**
 * @module The cold-start hold: when an app's EnginePool has no ready engine
 * (scaled to zero, or its pods still loading), the app's requests wait here
 * instead of failing at once, in a bounded queue per pool, until an engine's
 * heartbeat says it is ready (then placement runs again) or the hold
 * timeout passes. A request past the timeout, or one that finds the queue
 * full, gets 503 `no_engine` with `Retry-After`. The counts held per pool
 * go into the router's presence, where the operator's autoscaler reads them
 * to wake a pool at zero; the first request held for a pool is announced at
 * once (`onFirstHeld`), not at the next presence beat.
 */
import type { EngineRegistry } from "./engine-registry.js";
import { HttpError, RouterCode } from "./errors.js";
import type { RouterMetrics } from "./metrics.js";

export interface ColdStartHoldOptions {
  engines: EngineRegistry;
  metrics: RouterMetrics;
  /** Most requests held at once per EnginePool; one more is refused at once (0: none is held). */
  maxHeld: number;
  /** How long a request may wait for a ready engine, from when it first found none (0: none is held). */
  timeoutMs: number;
  retryAfterSeconds: number;
  /** Called when a pool goes from no request held to one (e.g. to publish the presence now). */
  onFirstHeld?: (pool: { namespace: string; name: string }) => void;
}

export class ColdStartHold {
  /** Pool key (`ns/name`) → requests held now. */
  private readonly held = new Map<string, number>();

  constructor(private readonly options: ColdStartHoldOptions) {}

  /** Whether requests are held at all (a zero bound or timeout turns the hold off). */
  get enabled(): boolean {
    return this.options.maxHeld > 0 && this.options.timeoutMs > 0;
  }

  /** When a request that finds no ready engine now stops waiting (performance.now() ms). */
  deadline(): number {
    return performance.now() + this.options.timeoutMs;
  }

  /** Requests held now, by pool key (`namespace/name`); pools with none are absent. */
  heldByPool(): ReadonlyMap<string, number> {
    return this.held;
  }

  /** Requests held now for `pool`. */
  heldFor(pool: { namespace: string; name: string }): number {
    return this.held.get(`${pool.namespace}/${pool.name}`) ?? 0;
  }

  /**
   * Waits until `pool` has a ready engine, until `deadline` (performance.now()
   * ms; the caller keeps it across re-holds so a request waits at most the
   * timeout in all), or until `signal` aborts. Throws 503 with `Retry-After`
   * when the pool's queue is full or the deadline passes; `why` says what
   * the router sees of the pool (for the message).
   */
  async hold(pool: { namespace: string; name: string }, deadline: number, why: () => string, signal?: AbortSignal): Promise<void> {
    const { engines, metrics } = this.options;
    const key = `${pool.namespace}/${pool.name}`;
    const ready = (): boolean => engines.loads(pool.namespace, pool.name).length > 0;
    if (ready()) return;
    const retryAfter = { "Retry-After": String(this.options.retryAfterSeconds) };
    const now = this.heldFor(pool);
    if (now >= this.options.maxHeld) {
      metrics.coldStartRefusals.inc({ reason: "queue_full" });
      throw new HttpError(503, RouterCode.NoEngine, `EnginePool ${key} has no ready engine (${why()}) and ${now} request(s) already wait for one to start (the router holds at most ${this.options.maxHeld}); retry later`, retryAfter);
    }
    this.set(key, now + 1);
    if (now === 0) this.options.onFirstHeld?.(pool);
    const started = performance.now();
    let outcome: "ready" | "timeout" | "aborted" = "timeout";
    try {
      for (;;) {
        if (ready()) {
          outcome = "ready";
          return;
        }
        if (signal?.aborted === true) {
          outcome = "aborted";
          throw signal.reason;
        }
        const left = deadline - performance.now();
        if (left <= 0) break;
        // Woken by each heartbeat of the pool: the first one of a new engine is sent once its model is loaded.
        await engines.changed(pool.namespace, pool.name, left, signal);
      }
      metrics.coldStartRefusals.inc({ reason: "timeout" });
      throw new HttpError(503, RouterCode.NoEngine, `EnginePool ${key} has no ready engine after holding the request ${Math.round(performance.now() - started)} ms for one to start (${why()}); retry later`, retryAfter);
    } finally {
      this.set(key, this.heldFor(pool) - 1);
      metrics.coldStartHoldSeconds.observe({ outcome }, (performance.now() - started) / 1000);
    }
  }

  private set(key: string, n: number): void {
    if (n <= 0) this.held.delete(key);
    else this.held.set(key, n);
    this.options.metrics.coldStartHeld.set({ pool: key }, Math.max(0, n));
  }
}

/**
 * @module Which pools at zero need the autoscaler now rather than at its next
 * tick: a builtin-mode pool at zero replicas with work waiting for it (calls
 * pending on a ToolPool's consumer, requests the routers hold for an
 * EnginePool). Between ticks the operator polls only those pools (one cheap
 * read each) and, when this says so, runs the app's autoscaler pass at once,
 * so a call or request waits for the cold start, not for a tick (up to
 * `--autoscale-interval-ms`) as well. The pass itself decides the count with
 * {@link decideAutoscaling}; this only says when to run it.
 */
import type { ScaledPool } from "./decide.js";

/** A builtin-mode pool at zero: one whose waiting work is worth a look between ticks (external mode is HPA's or KEDA's). */
export function asleep(pool: ScaledPool): boolean {
  return pool.replicas === 0 && pool.autoscaling !== undefined && (pool.autoscaling.mode ?? "builtin") === "builtin";
}

/** True when `pool` is asleep and `waiting` calls or requests wait for it: its app's pass should run now. */
export function wakesFromZero(pool: ScaledPool, waiting: number): boolean {
  return waiting > 0 && asleep(pool);
}

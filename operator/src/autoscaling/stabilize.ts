/**
 * @module From per-sample recommendations to one replica count, the way
 * Kubernetes' HPA stabilises: up at once to the latest recommendation; down
 * only to the highest recommendation over the stabilisation window, and only
 * once the window has been observed in full (an operator that just started
 * has not seen the last five minutes, so it does not shrink anything); to
 * zero only when minReplicas is 0 and every sample over the idle period was
 * idle; from zero to one at once when work waits for the pool (the routers
 * hold requests for it) though no replica reports a signal to size from.
 * Always within [minReplicas, maxReplicas].
 */
import { ENGINE_TTFT_WINDOW_MS } from "../../../common/src/protocol/index.js";
import { AUTOSCALING_DEFAULTS, type AutoscalingSpec } from "../api/index.js";
import { CALL_RATE_WINDOW_MS, CALL_TIME_WINDOW_MS, ENGINE_GROWTH_WINDOW_MS } from "./policy.js";

/** Bounds with the schema's defaults filled in. */
export type Bounds = Required<AutoscalingSpec>;

export function boundsOf(spec: AutoscalingSpec): Bounds {
  return { ...AUTOSCALING_DEFAULTS, ...spec };
}

/**
 * How long a window of samples a pool's decision needs, ms: its stabilisation
 * (or idle) window, and at least every window a rule reads (the engines' TTFT
 * window, to see when capacity last rose; the calls' mean-time and rate
 * windows; the engines' growth window), so a pool with a short stabilisation
 * window still measures over the windows the rules state.
 */
export function windowMsOf(b: Bounds): number {
  const rules = Math.max(ENGINE_TTFT_WINDOW_MS, CALL_TIME_WINDOW_MS, CALL_RATE_WINDOW_MS, ENGINE_GROWTH_WINDOW_MS);
  return Math.max(rules, 1000 * Math.max(b.scaleDownStabilizationSeconds, b.minReplicas === 0 ? b.idleSecondsBeforeZero : 0));
}

/** One sample's recommendation: replicas (null: no signal to size from) and whether the pool had no work. */
export interface Recommendation {
  at: number;
  replicas: number | null;
  idle: boolean;
  /** Work waits for this pool with no replica to measure (requests held by the routers): a pool at zero wakes. */
  wake?: boolean;
}

/** Why the count is what it is. */
export type StabilizedBy =
  | "demand" // the latest sample asks for more
  | "capped" // it asks for more than maxReplicas
  | "window" // the highest over the stabilisation window is lower
  | "idle" // idle long enough to go to zero
  | "below-min"
  | "above-max"
  | "hold-window" // lower, but not for a whole window yet
  | "steady"
  | "wake" // at zero, and work waits for it
  | "no-signal";

export interface Stabilized {
  desired: number;
  by: StabilizedBy;
  /** The highest recommendation over the window (for the reason). */
  peak: number;
}

export function stabilize(now: number, current: number, b: Bounds, history: readonly Recommendation[]): Stabilized {
  const latest = history.at(-1);
  if (current < b.minReplicas) return { desired: b.minReplicas, by: "below-min", peak: latest?.replicas ?? 0 };
  if (current > b.maxReplicas) return { desired: b.maxReplicas, by: "above-max", peak: latest?.replicas ?? 0 };
  if (current === 0 && latest?.wake === true) return { desired: Math.min(b.maxReplicas, Math.max(1, b.minReplicas)), by: "wake", peak: latest.replicas ?? 0 };
  if (latest === undefined || latest.replicas === null) return { desired: current, by: "no-signal", peak: 0 };
  if (latest.replicas > current) {
    return latest.replicas > b.maxReplicas ? { desired: b.maxReplicas, by: current === b.maxReplicas ? "steady" : "capped", peak: latest.replicas } : { desired: latest.replicas, by: "demand", peak: latest.replicas };
  }
  const oldest = history[0]?.at ?? now;
  const windowStart = now - 1000 * b.scaleDownStabilizationSeconds;
  const peak = Math.max(0, ...history.filter((r) => r.at >= windowStart && r.replicas !== null).map((r) => r.replicas ?? 0));
  const idleStart = now - 1000 * b.idleSecondsBeforeZero;
  const idleLongEnough = b.minReplicas === 0 && oldest <= idleStart && history.filter((r) => r.at >= idleStart).every((r) => r.idle);
  const target = Math.max(peak, idleLongEnough ? 0 : Math.max(b.minReplicas, 1));
  if (target >= current) return { desired: current, by: "steady", peak };
  if (oldest > windowStart) return { desired: current, by: "hold-window", peak };
  return { desired: target, by: target === 0 ? "idle" : "window", peak };
}

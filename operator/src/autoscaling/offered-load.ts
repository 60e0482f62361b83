/**
 * @module A tool pool's offered load from its consumer's counters over the
 * window of samples: the calls' arrival rate (calls delivered to runners
 * plus the growth of those waiting, per second, over the last
 * {@link CALL_RATE_WINDOW_MS}) and their mean time on a runner (Little's
 * law: the calls running on average over the last {@link CALL_TIME_WINDOW_MS},
 * divided by the rate they finished at). Their product is the runner slots
 * the calls keep busy, known as soon as the calls arrive, before any queue
 * forms. Intervals across which the delivered counter fell (the consumer was
 * recreated) or is missing are left out.
 */
import { CALL_RATE_WINDOW_MS, CALL_TIME_WINDOW_MS } from "./policy.js";
import type { SignalSample, ToolPoolSignal } from "./signals.js";

export interface OfferedLoad {
  /** Calls arriving on the pool's consumer per second. */
  callsPerSecond: number;
  /** Mean time a call keeps a runner slot, ms. */
  callMs: number;
}

/** The intervals between consecutive samples of `pool` ending after `since` and at or before `at`, with usable counters. */
function intervals(samples: readonly SignalSample[], pool: string, at: number, since: number): { a: ToolPoolSignal & { delivered: number }; b: ToolPoolSignal & { delivered: number }; ms: number }[] {
  const out = [];
  for (let i = samples.length - 1; i > 0; i--) {
    const sb = samples[i]!;
    if (sb.at > at) continue;
    if (sb.at <= since) break;
    const sa = samples[i - 1]!;
    const a = sa.tools[pool];
    const b = sb.tools[pool];
    const ms = sb.at - sa.at;
    if (a?.delivered === undefined || b?.delivered === undefined || b.delivered < a.delivered || ms <= 0) continue;
    out.push({ a: { ...a, delivered: a.delivered }, b: { ...b, delivered: b.delivered }, ms });
  }
  return out;
}

/** Calls arriving per second over the {@link CALL_RATE_WINDOW_MS} before `at` (absent: no interval with counters). */
export function callArrivalRate(samples: readonly SignalSample[], pool: string, at: number): number | undefined {
  const recent = intervals(samples, pool, at, at - CALL_RATE_WINDOW_MS);
  if (recent.length === 0) return undefined;
  // Every call that arrived was either delivered or still waits.
  const arrived = recent.reduce((n, { a, b }) => n + (b.delivered - a.delivered) + (b.pending - a.pending), 0);
  return Math.max(0, arrived) / (recent.reduce((n, { ms }) => n + ms, 0) / 1000);
}

/** A call's mean time on a runner over the {@link CALL_TIME_WINDOW_MS} before `at`, ms (absent: no call finished to time one by). */
export function meanCallMs(samples: readonly SignalSample[], pool: string, at: number): number | undefined {
  const longer = intervals(samples, pool, at, at - CALL_TIME_WINDOW_MS);
  // Every delivery finished (acked, handed back) unless it is still running.
  const finished = longer.reduce((n, { a, b }) => n + (b.delivered - a.delivered) - (b.ackPending - a.ackPending), 0);
  const busyMs = longer.reduce((n, { a, b, ms }) => n + ((a.ackPending + b.ackPending) / 2) * ms, 0);
  return finished < 1 ? undefined : busyMs / finished;
}

/** The offered load as of the sample at `at` (absent: no interval with counters, or no call finished to time one by). */
export function offeredLoad(samples: readonly SignalSample[], pool: string, at: number): OfferedLoad | undefined {
  const callsPerSecond = callArrivalRate(samples, pool, at);
  const callMs = meanCallMs(samples, pool, at);
  return callsPerSecond === undefined || callMs === undefined ? undefined : { callsPerSecond, callMs };
}

/**
 * @module How many runners one sample of a tool pool asks for, the most of
 * two rules. Offered load (Little's law): the calls' arrival rate times their
 * mean time on a runner is the slots they keep busy; runners for that at
 * {@link TOOL_TARGET_UTILISATION} of their slots, so the count follows the
 * calls as they arrive, before a queue forms. Backlog: enough concurrency
 * slots for every outstanding call (waiting and running), unless the calls
 * that wait are measured to wait within the app's budget for tool waits, in
 * which case waiting is tolerated and no runner is added. The measured wait
 * lags: it is taken as a call starts, so calls still waiting are not in it.
 * With the mean call time measured, the wait the last pending call will have
 * is forecast too (Little's law: the calls queued beyond the free slots are
 * served a slot-round per mean call time), and a forecast over the budget is
 * a backlog whatever the measured wait says. A pool at zero with
 * calls pending always asks for runners: with none, the calls would wait for
 * ever, whatever a departed runner last measured.
 */
import type { AppSlo } from "../api/index.js";
import type { OfferedLoad } from "./offered-load.js";
import { TOOL_TARGET_UTILISATION, TOOL_WAIT_SHARE } from "./policy.js";
import type { ToolPoolSignal } from "./signals.js";

export interface RunnerDemand {
  /** Runners this sample asks for. */
  runners: number;
  pending: number;
  running: number;
  waitP90Ms?: number;
  /** The wait the last pending call will have, ms, forecast from the mean call time (absent: no call pending, no call time measured, or no runner). */
  forecastWaitMs?: number;
  /** The tool-wait budget the SLO gives (absent: no task-latency objective). */
  waitBudgetMs?: number;
  /** Calls wait, or will wait by the forecast, longer than the budget, or wait with no measure of how long: the tools hold tasks up. */
  backlogged: boolean;
  /** The calls' arrival rate and mean time (absent: not measured). */
  offered?: OfferedLoad;
  /** Runners the offered load asks for at the target utilisation (0: not measured). */
  runnersForLoad: number;
  /** Nothing waiting or running, and no call arrived lately. */
  idle: boolean;
}

/** The SLO's allowance for one call's wait for a runner, ms. */
export function toolWaitBudgetMs(slo: AppSlo | undefined): number | undefined {
  return slo?.taskLatencyP90Ms === undefined ? undefined : slo.taskLatencyP90Ms * TOOL_WAIT_SHARE;
}

/** Runners whose slots the offered load fills to the target utilisation. */
export function runnersForLoad(offered: OfferedLoad | undefined, concurrency: number): number {
  if (offered === undefined) return 0;
  const busySlots = (offered.callsPerSecond * offered.callMs) / 1000;
  // The epsilon keeps a load of exactly n runners' worth from asking for n + 1 through rounding.
  return Math.max(0, Math.ceil(busySlots / Math.max(1, concurrency) / TOOL_TARGET_UTILISATION - 1e-9));
}

/**
 * The wait of the last of `pending` calls, ms: those the free slots take
 * start at once; the rest are served `current × concurrency` at a time, one
 * round per mean call time (0: the free slots take them all; absent: no
 * call pending, or no runner to serve one).
 */
export function forecastWaitMs(pending: number, running: number, current: number, concurrency: number, callMs: number): number | undefined {
  const slots = current * Math.max(1, concurrency);
  if (pending === 0 || slots === 0) return undefined;
  const queued = Math.max(0, pending - Math.max(0, slots - running));
  return Math.ceil(queued / slots) * callMs;
}

export function runnerDemand(signal: ToolPoolSignal | undefined, concurrency: number, current: number, slo: AppSlo | undefined, offered?: OfferedLoad): RunnerDemand {
  const pending = signal?.pending ?? 0;
  const running = signal?.ackPending ?? 0;
  const budget = toolWaitBudgetMs(slo);
  const wait = signal?.waitP90Ms;
  const withinBudget = wait !== undefined && budget !== undefined && wait <= budget;
  const forecast = offered === undefined ? undefined : forecastWaitMs(pending, running, current, concurrency, offered.callMs);
  const forecastOver = forecast !== undefined && budget !== undefined && forecast > budget;
  const backlogged = pending > 0 && (!withinBudget || current === 0 || forecastOver);
  const needed = Math.ceil((pending + running) / Math.max(1, concurrency));
  const forBacklog = backlogged ? needed : Math.min(needed, Math.max(current, Math.ceil(running / Math.max(1, concurrency))));
  const forLoad = runnersForLoad(offered, concurrency);
  return {
    runners: Math.max(forBacklog, forLoad),
    pending,
    running,
    ...(wait !== undefined ? { waitP90Ms: wait } : {}),
    ...(forecast !== undefined ? { forecastWaitMs: forecast } : {}),
    ...(budget !== undefined ? { waitBudgetMs: budget } : {}),
    ...(offered !== undefined ? { offered } : {}),
    runnersForLoad: forLoad,
    backlogged,
    idle: pending + running === 0 && (offered?.callsPerSecond ?? 0) === 0,
  };
}

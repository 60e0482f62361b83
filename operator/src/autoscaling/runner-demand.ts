/**
 * @module How many runners one sample of a tool pool asks for: enough
 * concurrency slots for every outstanding call (waiting and running), unless
 * the calls that wait are measured to wait within the app's budget for tool
 * waits, in which case waiting is tolerated and no runner is added. A pool
 * at zero with calls pending always asks for runners: with none, the calls
 * would wait for ever, whatever a departed runner last measured.
 */
import type { AppSlo } from "../api/index.js";
import { TOOL_WAIT_SHARE } from "./policy.js";
import type { ToolPoolSignal } from "./signals.js";

export interface RunnerDemand {
  /** Runners this sample asks for. */
  runners: number;
  pending: number;
  running: number;
  waitP90Ms?: number;
  /** The tool-wait budget the SLO gives (absent: no task-latency objective). */
  waitBudgetMs?: number;
  /** Calls wait longer than the budget, or wait with no measure of how long: the tools hold tasks up. */
  backlogged: boolean;
  /** Nothing waiting or running. */
  idle: boolean;
}

/** The SLO's allowance for one call's wait for a runner, ms. */
export function toolWaitBudgetMs(slo: AppSlo | undefined): number | undefined {
  return slo?.taskLatencyP90Ms === undefined ? undefined : slo.taskLatencyP90Ms * TOOL_WAIT_SHARE;
}

export function runnerDemand(signal: ToolPoolSignal | undefined, concurrency: number, current: number, slo: AppSlo | undefined): RunnerDemand {
  const pending = signal?.pending ?? 0;
  const running = signal?.ackPending ?? 0;
  const budget = toolWaitBudgetMs(slo);
  const wait = signal?.waitP90Ms;
  const withinBudget = wait !== undefined && budget !== undefined && wait <= budget;
  const backlogged = pending > 0 && (!withinBudget || current === 0);
  const needed = Math.ceil((pending + running) / Math.max(1, concurrency));
  return {
    runners: backlogged ? needed : Math.min(needed, Math.max(current, Math.ceil(running / Math.max(1, concurrency)))),
    pending,
    running,
    ...(wait !== undefined ? { waitP90Ms: wait } : {}),
    ...(budget !== undefined ? { waitBudgetMs: budget } : {}),
    backlogged,
    idle: pending + running === 0,
  };
}

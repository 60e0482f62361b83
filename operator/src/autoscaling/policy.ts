/**
 * @module The joint autoscaler's fixed policy numbers, in one place so the
 * README and the reasons quote the same figures.
 */

/**
 * The share of an app's task-latency objective its tool calls may spend
 * waiting for a runner (not running): a task makes several calls, and each
 * call's wait adds to the task. Calls pending while the measured p90 wait is
 * within this budget do not add runners.
 */
export const TOOL_WAIT_SHARE = 0.1;

/** KV cells in use, as a share of the pool's, from which queued sessions count as KV pressure (one engine more). */
export const KV_PRESSURE = 0.9;

/**
 * The share of its runners' concurrency slots a tool pool's offered load
 * (call arrival rate × mean call time) may fill: runners are added before
 * they are all busy, so calls do not queue while new ones start.
 */
export const TOOL_TARGET_UTILISATION = 0.75;

/** How far back a tool pool's call arrival rate is measured, ms: short, so a burst shows within a few ticks. */
export const CALL_RATE_WINDOW_MS = 10_000;

/** How far back a tool pool's mean call time is measured, ms: longer, for enough finished calls (a tool's duration changes slowly). */
export const CALL_TIME_WINDOW_MS = 60_000;

/**
 * The share of the ready engines' sequences the sessions that hold or want
 * one may fill while their number grows: above it the engines ask for one
 * engine more, so it starts (seconds to minutes) before the last sequence is
 * taken and the next sessions are refused.
 */
export const ENGINE_SEQUENCE_TARGET = 0.8;

/** How far back a rise in the sessions wanting sequences counts as growth, ms. */
export const ENGINE_GROWTH_WINDOW_MS = 30_000;

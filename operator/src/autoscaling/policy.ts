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

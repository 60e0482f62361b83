/**
 * @module The cost floor the autoscale bench measures each policy against:
 * the replica-seconds of a clairvoyant follower. It knows, for every slice
 * of the run, the work the policy's tasks did in that slice, and sizes each
 * side to it at the joint scaler's own targets, with no start-up time and no
 * stabilisation hold: runners for the slice's tool work at
 * {@link TOOL_TARGET_UTILISATION} of their slots, engines for the slice's
 * sequence-seconds at {@link ENGINE_SEQUENCE_TARGET} of their sequences,
 * each within its pool's bounds. A scaler that reads live signals comes
 * near it from above: it sees load after it arrives, pays for every start,
 * and holds replicas through its scale-down window (it can dip below it for
 * a moment only by letting work queue that the follower would not). The gap
 * between a policy's replica-seconds and this floor is what its lag and
 * holds cost; the floor's own gap to static max is what the trace leaves
 * to save at all.
 *
 * A task holds a sequence from its session's opening to its end, and its
 * tool work (`calls × toolMs`) is spread evenly over that span: the bench
 * knows each task's total round trips, not when each call ran. The slice is
 * the scaler's call-rate window ({@link CALL_RATE_WINDOW_MS}), the shortest
 * span its load figures average over.
 *
 * With `holdMs`, the follower also holds each side through a scale-down
 * window as the HPA rule does: a slice gets the most that it or any slice
 * that started less than `holdMs` before it asked for. That floor is what a
 * scaler with perfect signals would pay with the pools' stabilisation
 * window, so it splits a policy's excess over the plain floor into the
 * window's share and the scaler's own (lag, starts, noisy samples).
 */
import { CALL_RATE_WINDOW_MS, ENGINE_SEQUENCE_TARGET, TOOL_TARGET_UTILISATION } from "../../operator/src/autoscaling/policy.js";
import { runnersForLoad } from "../../operator/src/autoscaling/runner-demand.js";
import type { PoolBounds } from "./policies.js";
import type { TaskResult } from "./task-client.js";

export interface FollowerSetup {
  /** The span to cover, ms from the run's start (the run's end: replica-seconds are counted to it). */
  endMs: number;
  calls: number;
  toolMs: number;
  sequencesPerEngine: number;
  runnerConcurrency: number;
  engines: PoolBounds;
  runners: PoolBounds;
  /** Slice length, ms (default {@link CALL_RATE_WINDOW_MS}). */
  sliceMs?: number;
  /** Scale-down window to hold each side through, ms (default 0: none). */
  holdMs?: number;
}

export interface FollowerBound {
  engineSeconds: number;
  runnerSeconds: number;
}

interface Slice {
  fromMs: number;
  toMs: number;
  engines: number;
  runners: number;
}

function within(want: number, b: PoolBounds): number {
  return Math.min(b.maxReplicas, Math.max(b.minReplicas, want));
}

/** Each slice's counts, sized to its own work. */
function slices(tasks: readonly TaskResult[], o: FollowerSetup, sliceMs: number): Slice[] {
  // Each completed task's sequence span; a failed task held nothing the bench can place in time.
  const spans = tasks.flatMap((t) => (t.ok && t.taskMs !== undefined && t.parts !== undefined ? [{ from: t.atMs + t.parts.openMs, to: t.atMs + t.taskMs }] : []));
  const out: Slice[] = [];
  for (let lo = 0; lo < o.endMs; lo += sliceMs) {
    const hi = Math.min(o.endMs, lo + sliceMs);
    let sequenceMs = 0;
    let toolWorkMs = 0;
    for (const s of spans) {
      const overlap = Math.max(0, Math.min(s.to, hi) - Math.max(s.from, lo));
      if (overlap === 0) continue;
      sequenceMs += overlap;
      const length = s.to - s.from;
      toolWorkMs += length > 0 ? (overlap / length) * o.calls * o.toolMs : 0;
    }
    // The epsilon keeps a load of exactly n engines' worth from asking for n + 1 through rounding.
    const engines = Math.ceil(sequenceMs / (hi - lo) / Math.max(1, o.sequencesPerEngine) / ENGINE_SEQUENCE_TARGET - 1e-9);
    // The slice's tool work as the scaler's offered load (its calls' rate × their time), sized by the scaler's own rule.
    const offered = toolWorkMs > 0 ? { callsPerSecond: toolWorkMs / o.toolMs / ((hi - lo) / 1000), callMs: o.toolMs } : undefined;
    out.push({ fromMs: lo, toMs: hi, engines: within(engines, o.engines), runners: within(runnersForLoad(offered, o.runnerConcurrency), o.runners) });
  }
  return out;
}

export function followerBound(tasks: readonly TaskResult[], o: FollowerSetup): FollowerBound {
  const all = slices(tasks, o, o.sliceMs ?? CALL_RATE_WINDOW_MS);
  const hold = o.holdMs ?? 0;
  let engineSeconds = 0;
  let runnerSeconds = 0;
  for (const s of all) {
    // The slices that started within the window before this one did, this one included.
    const held = all.filter((x) => x === s || (x.fromMs < s.fromMs && x.fromMs > s.fromMs - hold));
    const seconds = (s.toMs - s.fromMs) / 1000;
    engineSeconds += Math.max(...held.map((x) => x.engines)) * seconds;
    runnerSeconds += Math.max(...held.map((x) => x.runners)) * seconds;
  }
  return { engineSeconds, runnerSeconds };
}

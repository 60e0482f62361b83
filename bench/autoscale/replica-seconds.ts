/**
 * @module The cost side of the autoscale bench: a pool's replica count over
 * time, as a step function recorded at each change, and its integral,
 * replica-seconds. A process counts from the moment it is started (a pod
 * is paid for while it loads its model) until it has exited (a draining
 * one still holds its machine).
 */
export interface ReplicaStep {
  /** ms after the run's start. */
  atMs: number;
  replicas: number;
}

export class ReplicaTimeline {
  private readonly steps: ReplicaStep[] = [];

  /** `initial` replicas from time 0. */
  constructor(initial: number) {
    this.steps.push({ atMs: 0, replicas: initial });
  }

  /** The count is `replicas` from `atMs` on (a change at the same instant replaces the earlier one). */
  record(atMs: number, replicas: number): void {
    const last = this.steps.at(-1)!;
    if (atMs < last.atMs) throw new Error(`replica timeline: ${atMs} ms is before the last change at ${last.atMs} ms`);
    if (last.replicas === replicas) return;
    if (last.atMs === atMs) this.steps.pop();
    this.steps.push({ atMs, replicas });
  }

  /** Starts over with `replicas` from time 0 (the clock was reset: a run's trace starts). */
  reset(replicas: number): void {
    this.steps.splice(0, this.steps.length, { atMs: 0, replicas });
  }

  get current(): number {
    return this.steps.at(-1)!.replicas;
  }

  /** The changes, first at 0. */
  get changes(): readonly ReplicaStep[] {
    return this.steps;
  }

  /** The integral of the count over [0, endMs], in replica-seconds. */
  replicaSeconds(endMs: number): number {
    return replicaSeconds(this.steps, endMs);
  }
}

/** The integral of a step function (each step holding until the next) over [0, endMs], in replica-seconds. */
export function replicaSeconds(steps: readonly ReplicaStep[], endMs: number): number {
  let total = 0;
  for (let i = 0; i < steps.length; i++) {
    const from = Math.max(0, steps[i]!.atMs);
    const to = Math.min(endMs, steps[i + 1]?.atMs ?? endMs);
    if (to > from) total += (steps[i]!.replicas * (to - from)) / 1000;
  }
  return total;
}

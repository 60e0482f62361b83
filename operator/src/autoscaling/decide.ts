/**
 * @module The joint autoscaler's decision for one AgentApp: from its SLO,
 * its pools' bounds and replicas, and a window of signal samples, the replica
 * count each builtin-mode pool should have and why. The calls' offered load
 * (arrival rate × mean call time at a target utilisation) and their backlog
 * drive the runners; the sessions that hold or want a sequence, less those
 * whose calls wait for a runner (the tool backlog explains them), with
 * headroom while they grow, KV pressure and a recent TTFT p90 over the app's
 * `slo.ttftP90Ms`, drive the engines; scale-downs wait out the stabilisation
 * window; a pool with minReplicas 0 goes to zero after idling, and wakes when
 * the routers hold requests for it (engines) or calls wait on its consumer
 * (runners). Pure: the
 * controller gathers the samples and applies the result.
 */
import { ENGINE_TTFT_WINDOW_MS } from "../../../common/src/protocol/index.js";
import type { AppSlo, AutoscalingSpec, ScaleDirection } from "../api/index.js";
import { engineDemand, type EngineDemand } from "./engine-demand.js";
import { engineReason, toolReason, type PoolKindName } from "./reason.js";
import { ENGINE_GROWTH_WINDOW_MS } from "./policy.js";
import { runnerDemand, type RunnerDemand } from "./runner-demand.js";
import { offeredLoad } from "./offered-load.js";
import { engineLoad, outstandingCalls, type SignalSample } from "./signals.js";
import { boundsOf, stabilize, type Recommendation } from "./stabilize.js";

export interface ScaledPool {
  name: string;
  /** spec.replicas now. */
  replicas: number;
  autoscaling?: AutoscalingSpec;
}

export interface ScaledToolPool extends ScaledPool {
  /** Calls one runner executes at once (spec.concurrency). */
  concurrency: number;
}

export interface AutoscaleInput {
  /** Epoch ms of the decision (the last sample's time or later). */
  now: number;
  slo?: AppSlo;
  enginePool?: ScaledPool;
  toolPools: readonly ScaledToolPool[];
  /** Samples, oldest first, covering at least the longest window any pool needs. */
  window: readonly SignalSample[];
}

export interface PoolDecision {
  kind: PoolKindName;
  name: string;
  current: number;
  desired: number;
  /** Absent when the count stays. */
  direction?: ScaleDirection;
  reason: string;
}

/** The side that holds the app's tasks up in the latest sample. */
export type Bottleneck = "tools" | "generation" | "both" | "none";

export interface AutoscaleDecision {
  bottleneck: Bottleneck;
  /** One per builtin-mode pool; external-mode and unscaled pools are left out. */
  pools: PoolDecision[];
}

function isBuiltin(p: ScaledPool): p is ScaledPool & { autoscaling: AutoscalingSpec } {
  return p.autoscaling !== undefined && (p.autoscaling.mode ?? "builtin") === "builtin";
}

function decision(kind: PoolKindName, name: string, current: number, desired: number, reason: string): PoolDecision {
  return { kind, name, current, desired, ...(desired !== current ? { direction: desired > current ? "up" : "down" } : {}), reason };
}

export function decideAutoscaling(input: AutoscaleInput): AutoscaleDecision {
  const samples = input.window;
  const toolsOutstanding = (s: SignalSample): number => input.toolPools.reduce((n, p) => n + outstandingCalls(s.tools[p.name]), 0);
  const toolsPending = (s: SignalSample): number => input.toolPools.reduce((n, p) => n + (s.tools[p.name]?.pending ?? 0), 0);
  // Per sample, the calls waiting for runners on pools the tools hold up (waits over the budget, or unmeasured).
  const backloggedPending = samples.map(() => 0);
  const pools: PoolDecision[] = [];
  let toolsBacklogged = false;
  let generationBacklogged = false;

  for (const pool of input.toolPools) {
    const demands = samples.map((s) => ({ at: s.at, d: runnerDemand(s.tools[pool.name], pool.concurrency, pool.replicas, input.slo, offeredLoad(samples, pool.name, s.at)) }));
    demands.forEach(({ d }, i) => {
      if (d.backlogged) backloggedPending[i]! += d.pending;
    });
    const latest: RunnerDemand | undefined = demands.at(-1)?.d;
    toolsBacklogged ||= latest?.backlogged === true;
    if (!isBuiltin(pool) || latest === undefined) continue;
    const b = boundsOf(pool.autoscaling);
    const history: Recommendation[] = demands.map(({ at, d }) => ({ at, replicas: d.runners, idle: d.idle }));
    const s = stabilize(input.now, pool.replicas, b, history);
    pools.push(decision("ToolPool", pool.name, pool.replicas, s.desired, toolReason(pool.name, pool.replicas, s, b, latest, pool.concurrency)));
  }

  const engine = input.enginePool;
  const ttftTarget = input.slo?.ttftP90Ms !== undefined ? { ttftTargetMs: input.slo.ttftP90Ms } : {};
  if (engine !== undefined) {
    const loads = samples.map((s) => ({ at: s.at, load: engineLoad(s.engines) }));
    // Did more engines become ready within the TTFT window before this sample?
    const capacityRose = (i: number): boolean => {
      const now = loads[i]!;
      return loads.slice(0, i).some((l) => l.at >= now.at - ENGINE_TTFT_WINDOW_MS && l.load.engines < now.load.engines);
    };
    const demands: { at: number; d: EngineDemand }[] = [];
    samples.forEach((s, i) => {
      // The fewest sequences held over the growth window before this sample: did they grow?
      const before = demands.filter((x) => x.at >= s.at - ENGINE_GROWTH_WINDOW_MS && x.d.engines !== null).map((x) => x.d.sequencesHeld);
      const low = before.length > 0 ? { sequencesHeldLow: Math.min(...before) } : {};
      demands.push({
        at: s.at,
        d: engineDemand(loads[i]!.load, { outstandingToolCalls: toolsOutstanding(s), pendingToolCalls: toolsPending(s), backloggedToolCalls: backloggedPending[i]!, heldRequests: s.heldRequests ?? 0, ...ttftTarget, ttftPredatesCapacity: capacityRose(i), ...low }),
      });
    });
    const latest: EngineDemand | undefined = demands.at(-1)?.d;
    generationBacklogged = latest?.backlogged === true;
    if (isBuiltin(engine) && latest !== undefined) {
      const b = boundsOf(engine.autoscaling);
      const history: Recommendation[] = demands.map(({ at, d }) => ({ at, replicas: d.engines, idle: d.idle, wake: d.engines === null && d.heldRequests > 0 }));
      const s = stabilize(input.now, engine.replicas, b, history);
      pools.unshift(decision("EnginePool", engine.name, engine.replicas, s.desired, engineReason(engine.name, engine.replicas, s, b, latest)));
    }
  }

  const bottleneck: Bottleneck = toolsBacklogged && generationBacklogged ? "both" : toolsBacklogged ? "tools" : generationBacklogged ? "generation" : "none";
  return { bottleneck, pools };
}

/**
 * @module The scaling policies the autoscale bench compares, each a
 * function from the window of live signal samples and the pools' current
 * counts to the counts wanted:
 * - `static`: both pools at their maximum throughout;
 * - `engine-only`: engines sized on queue depth alone, the way KEDA on
 *   `num_requests_waiting` or KubeAI on active requests scale (sessions
 *   active or queued per engine against a target share of its sequences,
 *   stabilised like an HPA); the tool runners stay at their minimum;
 * - `joint`: the operator's own decision function,
 *   {@link decideAutoscaling}, fed through a small adapter from the
 *   process world (the bench's counts play spec.replicas).
 */
import type { AutoscalingSpec } from "../../operator/src/api/index.js";
import { boundsOf, decideAutoscaling, engineLoad, stabilize, type Recommendation, type SignalSample } from "../../operator/src/autoscaling/index.js";

export const POLICIES = ["static", "engine-only", "joint"] as const;
export type PolicyName = (typeof POLICIES)[number];

export interface PoolBounds {
  minReplicas: number;
  maxReplicas: number;
}

export interface ScaleSetup {
  engines: PoolBounds;
  runners: PoolBounds;
  /** Calls one runner runs at once. */
  runnerConcurrency: number;
  sloTaskP90Ms: number;
  /** Scale-down stabilisation window, s (both sides, every policy that scales). */
  stabilizationS: number;
  /** With minReplicas 0: idle seconds before zero. */
  idleS: number;
  /** engine-only: the share of an engine's sequences its active and queued sessions may fill before it adds engines (KEDA's/KubeAI's target value). */
  engineTarget: number;
}

export interface ScaleInput {
  now: number;
  window: readonly SignalSample[];
  engines: number;
  runners: number;
}

export interface ScaleWant {
  engines: number;
  runners: number;
  /** Why, one sentence per side that changes. */
  reasons: string[];
}

export interface Policy {
  name: PolicyName;
  /** The counts each run starts with. */
  initial: { engines: number; runners: number };
  decide(input: ScaleInput): ScaleWant;
}

/** The bench's names for the pools (the operator's reasons quote them). */
export const ENGINE_POOL_NAME = "engines";
export const TOOL_POOL_NAME = "tools";

function spec(b: PoolBounds, s: ScaleSetup): AutoscalingSpec {
  return { mode: "builtin", minReplicas: b.minReplicas, maxReplicas: b.maxReplicas, scaleDownStabilizationSeconds: s.stabilizationS, idleSecondsBeforeZero: s.idleS };
}

function staticPolicy(s: ScaleSetup): Policy {
  const initial = { engines: s.engines.maxReplicas, runners: s.runners.maxReplicas };
  return { name: "static", initial, decide: () => ({ ...initial, reasons: [] }) };
}

/**
 * Sessions active or queued (in the engines, or in the routers' capacity
 * queue), per engine, against `engineTarget` of its sequences: the count a
 * queue-depth scaler asks for.
 */
export function queueDepthEngines(sample: SignalSample, target: number): number | null {
  const load = engineLoad(sample.engines);
  if (load.engines === 0) return null;
  const perEngine = Math.max(1, (load.totalSequences / load.engines) * target);
  return Math.ceil((load.activeSessions + load.queuedSessions + (sample.heldRequests ?? 0)) / perEngine);
}

function engineOnlyPolicy(s: ScaleSetup): Policy {
  const bounds = boundsOf(spec(s.engines, s));
  return {
    name: "engine-only",
    initial: { engines: s.engines.minReplicas, runners: s.runners.minReplicas },
    decide({ now, window, engines }) {
      const history: Recommendation[] = window.map((x) => {
        const load = engineLoad(x.engines);
        return { at: x.at, replicas: queueDepthEngines(x, s.engineTarget), idle: load.activeSessions + load.queuedSessions === 0 };
      });
      // The HPA's own rule (up at once, down to the window's peak), as KEDA drives an HPA.
      const st = stabilize(now, engines, bounds, history);
      const latest = window.at(-1);
      const load = latest === undefined ? undefined : engineLoad(latest.engines);
      const reasons =
        st.desired === engines || load === undefined
          ? []
          : [`engines ${engines}→${st.desired}: ${load.activeSessions} active + ${load.queuedSessions} queued sessions on ${load.totalSequences} sequences (target ${Math.round(s.engineTarget * 100)}%), ${st.by}`];
      return { engines: st.desired, runners: s.runners.minReplicas, reasons };
    },
  };
}

function jointPolicy(s: ScaleSetup): Policy {
  return {
    name: "joint",
    initial: { engines: s.engines.minReplicas, runners: s.runners.minReplicas },
    decide({ now, window, engines, runners }) {
      const d = decideAutoscaling({
        now,
        slo: { taskLatencyP90Ms: s.sloTaskP90Ms },
        enginePool: { name: ENGINE_POOL_NAME, replicas: engines, autoscaling: spec(s.engines, s) },
        toolPools: [{ name: TOOL_POOL_NAME, replicas: runners, concurrency: s.runnerConcurrency, autoscaling: spec(s.runners, s) }],
        window,
      });
      const want = { engines, runners, reasons: [] as string[] };
      for (const p of d.pools) {
        if (p.kind === "EnginePool") want.engines = p.desired;
        else want.runners = p.desired;
        if (p.direction !== undefined) want.reasons.push(p.reason);
      }
      return want;
    },
  };
}

export function policyOf(name: PolicyName, setup: ScaleSetup): Policy {
  switch (name) {
    case "static":
      return staticPolicy(setup);
    case "engine-only":
      return engineOnlyPolicy(setup);
    case "joint":
      return jointPolicy(setup);
  }
}

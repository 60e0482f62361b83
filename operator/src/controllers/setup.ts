/**
 * @module Wires the three reconcilers and the joint autoscaler into a
 * manager: the shared informers (primaries, the operator's children filtered
 * by the managed-by label) and one controller per kind plus the autoscaler's
 * (keyed by AgentApp), with children mapped to their owners and pools mapped
 * to the AgentApps that reference them; and the waker that runs the
 * autoscaler between ticks for pools at zero with work waiting, and the
 * pressure check that runs it between ticks for a scale-up of pools with
 * replicas.
 */
import type { KubernetesObject, V1Pod } from "@kubernetes/client-node";
import { AgentAppKind, EnginePoolKind, ToolPoolKind, type AgentApp, type EnginePool, type ToolPool } from "../api/index.js";
import { MANAGED_SELECTOR } from "../resources/index.js";
import { Controller, CoreTypes, type Manager, type RateLimiter } from "../runtime/index.js";
import { AgentAppReconciler, appsUsingEnginePool, appsUsingToolPool } from "./agent-app.js";
import { AutoscalerReconciler } from "./autoscaler.js";
import type { ReconcilerContext } from "./context.js";
import { EnginePoolReconciler } from "./engine-pool.js";
import { ENGINE_POOL_LABEL } from "./engine-pods.js";
import type { PoolCleanup } from "./pool-cleanup.js";
import { unobservedLiveState } from "./live-state.js";
import { ToolPoolReconciler } from "./tool-pool.js";
import { PressureCheck } from "./pressure-check.js";
import { ZeroPoolWaker } from "./zero-pool-waker.js";

export interface SetupOptions {
  workers?: number;
  rateLimiter?: () => RateLimiter;
  /** The joint autoscaler's tick. Default 10 s. */
  autoscaleIntervalMs?: number;
  /** Between ticks, how often builtin pools at zero are checked for waiting work (ms). Default 1 s; 0: never. */
  wakeCheckMs?: number;
  /** Between ticks, how often apps with builtin pools with replicas are checked for a scale-up (ms). Default 2 s; 0: never. */
  pressureCheckMs?: number;
}

export interface SetUpControllers {
  controllers: Controller[];
  /** Started and stopped by the caller, beside the manager. */
  waker: ZeroPoolWaker;
  /** Started and stopped by the caller, beside the manager. */
  pressure: PressureCheck;
}

/** The EnginePool an engine pod belongs to, from its label. */
function enginePoolOfPod(pod: KubernetesObject): string[] {
  const name = pod.metadata?.labels?.[ENGINE_POOL_LABEL];
  return name !== undefined && pod.metadata?.namespace !== undefined ? [`${pod.metadata.namespace}/${name}`] : [];
}

/** Registers the EnginePool, ToolPool and AgentApp controllers on `manager`. */
export function setupControllers(manager: Manager, ctx: ReconcilerContext, cleanup: PoolCleanup, opts: SetupOptions = {}): SetUpControllers {
  const { log, metrics } = manager.opts;
  const enginePools = manager.informer<EnginePool>(EnginePoolKind);
  const toolPools = manager.informer<ToolPool>(ToolPoolKind);
  const apps = manager.informer<AgentApp>(AgentAppKind);
  const deployments = manager.informer<KubernetesObject>(CoreTypes.Deployment, MANAGED_SELECTOR);
  const services = manager.informer<KubernetesObject>(CoreTypes.Service, MANAGED_SELECTOR);
  const pdbs = manager.informer<KubernetesObject>(CoreTypes.PodDisruptionBudget, MANAGED_SELECTOR);
  const configMaps = manager.informer<KubernetesObject>(CoreTypes.ConfigMap, MANAGED_SELECTOR);
  // Only when the operator renders them (it has no NetworkPolicy access otherwise): a hand edit is put back.
  const policies = ctx.build.networkPolicy !== undefined ? [manager.informer<KubernetesObject>(CoreTypes.NetworkPolicy, MANAGED_SELECTOR)] : [];
  // Engine pods, for the model check's verdict (pods belong to ReplicaSets, not to the pool: mapped by label).
  const enginePods = manager.informer<V1Pod>(CoreTypes.Pod, ENGINE_POOL_LABEL);
  const common = {
    log,
    metrics,
    ...(opts.workers !== undefined ? { workers: opts.workers } : {}),
    ...(opts.rateLimiter ? { rateLimiter: opts.rateLimiter } : {}),
  };
  const scaler = new AutoscalerReconciler({ ...ctx, log: log.child({ controller: "autoscaler" }) }, apps, enginePools, toolPools, metrics.autoscaler, opts.autoscaleIntervalMs ?? 10_000);
  const autoscaler = new Controller({
    ...common,
    name: "autoscaler",
    primary: apps,
    primaryKind: AgentAppKind.kind,
    watches: [
      { informer: enginePools, map: (o) => appsUsingEnginePool(apps, o) },
      { informer: toolPools, map: (o) => appsUsingToolPool(apps, o) },
    ],
    reconciler: scaler,
  });
  const controllers = [
    new Controller({
      ...common,
      name: "enginepool",
      primary: enginePools,
      primaryKind: EnginePoolKind.kind,
      owns: [deployments, services, pdbs, ...policies],
      watches: [{ informer: enginePods, map: (pod) => enginePoolOfPod(pod) }],
      reconciler: new EnginePoolReconciler({ ...ctx, log: log.child({ controller: "enginepool" }) }, enginePools, enginePods),
    }),
    new Controller({
      ...common,
      name: "toolpool",
      primary: toolPools,
      primaryKind: ToolPoolKind.kind,
      owns: [deployments, configMaps, ...policies],
      reconciler: new ToolPoolReconciler({ ...ctx, log: log.child({ controller: "toolpool" }) }, toolPools, cleanup),
    }),
    new Controller({
      ...common,
      name: "agentapp",
      primary: apps,
      primaryKind: AgentAppKind.kind,
      owns: [configMaps],
      watches: [
        { informer: enginePools, map: (o) => appsUsingEnginePool(apps, o) },
        { informer: toolPools, map: (o) => appsUsingToolPool(apps, o) },
      ],
      reconciler: new AgentAppReconciler({ ...ctx, log: log.child({ controller: "agentapp" }) }, apps, enginePools, toolPools),
    }),
    // Keyed by AgentApp like the app controller: the app's SLO and its pools decide together.
    autoscaler,
  ];
  for (const c of controllers) manager.add(c);
  const waker = new ZeroPoolWaker({
    live: ctx.live ?? unobservedLiveState,
    apps,
    enginePools,
    toolPools,
    autoscaler,
    checkMs: opts.wakeCheckMs ?? 1_000,
    metrics: metrics.autoscaler,
    log: log.child({ subsystem: "zero-pool-waker" }),
  });
  const pressure = new PressureCheck({
    apps,
    enginePools,
    toolPools,
    autoscaler,
    pressure: (ns, name) => scaler.pressure(ns, name),
    checkMs: opts.pressureCheckMs ?? 2_000,
    metrics: metrics.autoscaler,
    log: log.child({ subsystem: "pressure-check" }),
  });
  return { controllers, waker, pressure };
}

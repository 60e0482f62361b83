/**
 * @module The EnginePool reconciler: applies the engine Deployment, headless
 * Service and PodDisruptionBudget, then reports replicas, endpoint and
 * Ready / Progressing / Degraded from the Deployment's own status. Children
 * carry a controller owner reference, so deleting the pool garbage-collects
 * them; no finalizer is needed (nothing outside the cluster to clean).
 */
import type { V1Deployment, V1Pod } from "@kubernetes/client-node";
import { EnginePoolKind, Reason, type EnginePool, type EnginePoolStatus } from "../api/index.js";
import {
  buildEngineDeployment,
  buildEnginePdb,
  buildEngineService,
  engineEndpoint,
  selectorLabels,
  ENGINE_COMPONENT,
} from "../resources/index.js";
import { CoreTypes, type Informer, type ReconcileRequest, type ReconcileResult, type Reconciler } from "../runtime/index.js";
import { applyChild, type ReconcilerContext } from "./context.js";
import { ENGINE_POOL_LABEL, modelCheckFailure } from "./engine-pods.js";
import { degradedConditions, deploymentAvailability, mergeConditions, rolloutConditions, writeStatusIfChanged, type ConditionInput } from "./status.js";
import { recordTransitions } from "./transitions.js";

const STATUS_KEYS = ["observedGeneration", "replicas", "readyReplicas", "endpoint", "selector", "conditions"] as const;

/** Reconciles EnginePools into engine Deployments. */
export class EnginePoolReconciler implements Reconciler {
  constructor(
    private readonly ctx: ReconcilerContext,
    private readonly pools: Informer<EnginePool>,
    /** Engine pods (labelled with their pool): read for failed model checks. */
    private readonly pods?: Informer<V1Pod>,
  ) {}

  async reconcile(req: ReconcileRequest): Promise<ReconcileResult> {
    const pool = this.pools.get(req.namespace, req.name);
    // Gone or going: owner references let the garbage collector remove the children.
    if (!pool || pool.metadata.deletionTimestamp) return {};
    const { client, build } = this.ctx;
    let conditions: ConditionInput[];
    let deployment: V1Deployment | null = null;
    let failure: unknown = null;
    try {
      // The Secret first: the pods mount it.
      const creds = await this.ctx.credentials?.forEnginePool(pool);
      deployment = await applyChild(client, CoreTypes.Deployment, buildEngineDeployment(pool, build, creds));
      await applyChild(client, CoreTypes.Service, buildEngineService(pool));
      await applyChild(client, CoreTypes.PodDisruptionBudget, buildEnginePdb(pool));
      const availability = deploymentAvailability(deployment);
      conditions = rolloutConditions(availability, "engine pods");
      // Pods that cannot start because their model or an adapter is wrong: say so, with the check's reason.
      const failed = availability.complete ? undefined : modelCheckFailure(this.poolPods(pool));
      if (failed !== undefined) conditions = degradedConditions(failed.reason, `pod ${failed.pod}: ${failed.message}`);
    } catch (err) {
      failure = err;
      conditions = degradedConditions(Reason.ApplyFailed, `applying children failed: ${(err as Error).message}`);
    }
    const av = deployment ? deploymentAvailability(deployment) : null;
    const selector = Object.entries(selectorLabels(ENGINE_COMPONENT, pool.metadata.name ?? ""))
      .map(([k, v]) => `${k}=${v}`)
      .join(",");
    const status: EnginePoolStatus = {
      ...(pool.metadata.generation !== undefined ? { observedGeneration: pool.metadata.generation } : {}),
      replicas: av?.replicas ?? pool.status?.replicas ?? 0,
      readyReplicas: av?.available ?? pool.status?.readyReplicas ?? 0,
      endpoint: engineEndpoint(pool),
      selector,
      conditions: mergeConditions(pool.status?.conditions, conditions, pool.metadata.generation, this.ctx.now?.() ?? new Date()),
    };
    const before = pool.status?.conditions;
    if (await writeStatusIfChanged(client, EnginePoolKind, pool, status as Record<string, unknown>, STATUS_KEYS)) {
      await recordTransitions(this.ctx.recorder, pool, before, status.conditions ?? []);
    }
    // A failed apply retries with backoff; Ready follows the Deployment, whose
    // status changes re-trigger this pass through the owned-children informer.
    if (failure) throw failure;
    return {};
  }

  private poolPods(pool: EnginePool): V1Pod[] {
    return (this.pods?.list(pool.metadata.namespace) ?? []).filter((p) => p.metadata?.labels?.[ENGINE_POOL_LABEL] === pool.metadata.name);
  }
}

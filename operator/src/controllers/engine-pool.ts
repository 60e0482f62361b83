/**
 * @module The EnginePool reconciler: applies the engine Deployment, headless
 * Service and PodDisruptionBudget and, for a pool exposed to a gateway
 * (`spec.inferencePool`), the endpoint picker's Deployment and Service and
 * the InferencePool naming them; then reports replicas, endpoint, the
 * InferencePool and Ready / Progressing / Degraded from the Deployments' own
 * status. Children carry a controller owner reference, so deleting the pool
 * garbage-collects them; no finalizer is needed (nothing outside the cluster
 * to clean). Dropping `spec.inferencePool` deletes the exposure (the status
 * names it until then). A cluster without the InferencePool CRD is a
 * Degraded condition, looked at again every minute.
 */
import type { V1Deployment, V1Pod } from "@kubernetes/client-node";
import { EnginePoolKind, InferencePoolType, Reason, type EnginePool, type EnginePoolStatus } from "../api/index.js";
import {
  buildEngineDeployment,
  buildEnginePdb,
  buildEngineNetworkPolicy,
  buildEngineService,
  buildInferencePool,
  buildPickerDeployment,
  buildPickerService,
  engineEndpoint,
  inferencePoolName,
  pickerChildName,
  selectorLabels,
  ENGINE_COMPONENT,
} from "../resources/index.js";
import { CoreTypes, KubeApiError, type Informer, type ReconcileRequest, type ReconcileResult, type Reconciler } from "../runtime/index.js";
import { applyChild, type ReconcilerContext } from "./context.js";
import { ENGINE_POOL_LABEL, modelCheckFailure } from "./engine-pods.js";
import { degradedConditions, deploymentAvailability, mergeConditions, rolloutConditions, writeStatusIfChanged, type Availability, type ConditionInput } from "./status.js";
import { recordTransitions } from "./transitions.js";

const STATUS_KEYS = ["observedGeneration", "replicas", "readyReplicas", "endpoint", "selector", "inferencePool", "conditions"] as const;

/** A cluster without the InferencePool CRD may get one (a GAIE install): look again this often. */
const CRD_RECHECK_MS = 60_000;

/** Two Deployments as one rollout: complete when both are. */
function together(a: Availability, b: Availability): Availability {
  return { desired: a.desired + b.desired, replicas: a.replicas + b.replicas, available: a.available + b.available, complete: a.complete && b.complete };
}

/** Reconciles EnginePools into engine Deployments (and, when exposed, an InferencePool with its picker). */
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
    let result: ReconcileResult = {};
    const exposed = pool.spec.inferencePool !== undefined;
    try {
      // The Secret first: the pods mount it.
      const creds = await this.ctx.credentials?.forEnginePool(pool);
      deployment = await applyChild(client, CoreTypes.Deployment, buildEngineDeployment(pool, build, creds));
      await applyChild(client, CoreTypes.Service, buildEngineService(pool));
      await applyChild(client, CoreTypes.PodDisruptionBudget, buildEnginePdb(pool));
      if (build.networkPolicy !== undefined) await applyChild(client, CoreTypes.NetworkPolicy, buildEngineNetworkPolicy(pool, build.networkPolicy));
      const availability = deploymentAvailability(deployment);
      conditions = rolloutConditions(availability, "engine pods");
      if (exposed) {
        const pickerCreds = await this.ctx.credentials?.forEndpointPicker(pool);
        const picker = await applyChild(client, CoreTypes.Deployment, buildPickerDeployment(pool, build, pickerCreds));
        await applyChild(client, CoreTypes.Service, buildPickerService(pool));
        conditions = rolloutConditions(together(availability, deploymentAvailability(picker)), "engine and endpoint picker pods");
        if (!(await this.applyInferencePool(pool))) {
          const crd = `${InferencePoolType.plural}.${InferencePoolType.group}/${InferencePoolType.version}`;
          conditions = degradedConditions(Reason.InferencePoolCrdMissing, `spec.inferencePool is set but the cluster has no InferencePool CRD (${crd}): install it with the chart or the Gateway API Inference Extension`);
          result = { requeueAfterMs: CRD_RECHECK_MS };
        }
      } else if (pool.status?.inferencePool !== undefined) {
        await this.removeExposure(pool);
      }
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
      ...(exposed ? { inferencePool: inferencePoolName(pool) } : failure !== null && pool.status?.inferencePool !== undefined ? { inferencePool: pool.status.inferencePool } : {}),
      conditions: mergeConditions(pool.status?.conditions, conditions, pool.metadata.generation, this.ctx.now?.() ?? new Date()),
    };
    const before = pool.status?.conditions;
    if (await writeStatusIfChanged(client, EnginePoolKind, pool, status as Record<string, unknown>, STATUS_KEYS)) {
      await recordTransitions(this.ctx.recorder, pool, before, status.conditions ?? []);
    }
    // A failed apply retries with backoff; Ready follows the Deployments, whose
    // status changes re-trigger this pass through the owned-children informer.
    if (failure) throw failure;
    return result;
  }

  /** Applies the InferencePool; false when the cluster has no such kind (its CRD is not installed). */
  private async applyInferencePool(pool: EnginePool): Promise<boolean> {
    try {
      await applyChild(this.ctx.client, InferencePoolType, buildInferencePool(pool));
      return true;
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 404) return false;
      throw err;
    }
  }

  /** The pool is no longer exposed: its picker and InferencePool go (each may be gone already). */
  private async removeExposure(pool: EnginePool): Promise<void> {
    const ns = pool.metadata.namespace ?? "default";
    await this.ctx.client.delete(CoreTypes.Deployment, ns, pickerChildName(pool));
    await this.ctx.client.delete(CoreTypes.Service, ns, pickerChildName(pool));
    await this.ctx.client.delete(InferencePoolType, ns, inferencePoolName(pool));
    this.ctx.log.info({ pool: `${ns}/${pool.metadata.name ?? ""}` }, "InferencePool exposure removed");
  }

  private poolPods(pool: EnginePool): V1Pod[] {
    return (this.pods?.list(pool.metadata.namespace) ?? []).filter((p) => p.metadata?.labels?.[ENGINE_POOL_LABEL] === pool.metadata.name);
  }
}

/**
 * @module The ToolPool reconciler: keeps a finalizer on the pool (its
 * JetStream consumer lives outside the cluster), renders the runner spec file
 * into a ConfigMap, applies the tool-runner Deployment and reports status.
 * A pool that may scale to zero gets its call stream and consumer from here
 * (else its runners create them), so calls to it wait there while it wakes. On
 * deletion it runs the cleanup hook, then removes the finalizer; the
 * children go with the pool through their owner references.
 */
import type { V1Deployment } from "@kubernetes/client-node";
import { poolSubjects, RUNNER_DEFAULTS } from "../../../common/src/protocol/index.js";
import { Reason, ToolPoolKind, type ToolPool, type ToolPoolStatus } from "../api/index.js";
import { buildToolRunnerDeployment, buildToolRunnerNetworkPolicy, buildToolRunnerService, buildToolSpecConfigMap, renderRunnerConfig } from "../resources/index.js";
import { CoreTypes, type Informer, type ReconcileRequest, type ReconcileResult, type Reconciler } from "../runtime/index.js";
import { applyChild, type ReconcilerContext } from "./context.js";
import type { PoolCleanup } from "./pool-cleanup.js";
import { degradedConditions, deploymentAvailability, mergeConditions, rolloutConditions, writeStatusIfChanged, type ConditionInput } from "./status.js";
import { recordTransitions } from "./transitions.js";

/** The finalizer that guards the pool's JetStream consumer. */
export const TOOLPOOL_FINALIZER = "interlace.dev/jetstream-cleanup";

const STATUS_KEYS = ["observedGeneration", "replicas", "readyReplicas", "toolCount", "subject", "callsInFlight", "conditions"] as const;

/** Reconciles ToolPools into tool-runner Deployments. */
export class ToolPoolReconciler implements Reconciler {
  constructor(
    private readonly ctx: ReconcilerContext,
    private readonly pools: Informer<ToolPool>,
    private readonly cleanup: PoolCleanup,
  ) {}

  async reconcile(req: ReconcileRequest): Promise<ReconcileResult> {
    const pool = this.pools.get(req.namespace, req.name);
    if (!pool) return {};
    const finalizers = pool.metadata.finalizers ?? [];
    if (pool.metadata.deletionTimestamp) {
      if (!finalizers.includes(TOOLPOOL_FINALIZER)) return {};
      return this.finalize(pool, finalizers);
    }
    if (!finalizers.includes(TOOLPOOL_FINALIZER)) {
      // Optimistic concurrency: a stale cache gets a 409 and the pass retries.
      await this.ctx.client.mergePatch(ToolPoolKind, req.namespace, req.name, {
        metadata: { resourceVersion: pool.metadata.resourceVersion, finalizers: [...finalizers, TOOLPOOL_FINALIZER] },
      });
      // The update event brings us back with the finalizer in the cache.
      return {};
    }
    return this.apply(pool);
  }

  private async apply(pool: ToolPool): Promise<ReconcileResult> {
    const { client, build } = this.ctx;
    const rendered = renderRunnerConfig(pool);
    let conditions: ConditionInput[];
    let deployment: V1Deployment | null = null;
    let failure: unknown = null;
    if (!rendered.ok) {
      // Permanent until the spec changes: report, do not retry.
      conditions = degradedConditions(Reason.InvalidSpec, rendered.message);
    } else {
      try {
        await applyChild(client, CoreTypes.ConfigMap, buildToolSpecConfigMap(pool, rendered.config));
        // A pool that may sit at zero needs its stream before any runner: the first call's backlog wakes it.
        if (pool.spec.autoscaling?.minReplicas === 0 && this.ctx.live?.observed === true) {
          const c = rendered.config;
          await this.ctx.live.preparePoolStream(
            { namespace: c.namespace, name: c.pool },
            { ackWaitMs: c.ackWaitMs ?? RUNNER_DEFAULTS.ackWaitMs, maxDeliver: c.maxDeliver ?? RUNNER_DEFAULTS.maxDeliver },
          );
        }
        const creds = await this.ctx.credentials?.forToolPool(pool);
        deployment = await applyChild(client, CoreTypes.Deployment, buildToolRunnerDeployment(pool, rendered.config, build, creds));
        await applyChild(client, CoreTypes.Service, buildToolRunnerService(pool));
        if (build.networkPolicy !== undefined) await applyChild(client, CoreTypes.NetworkPolicy, buildToolRunnerNetworkPolicy(pool, build.networkPolicy));
        conditions = rolloutConditions(deploymentAvailability(deployment), "tool runners");
      } catch (err) {
        failure = err;
        conditions = degradedConditions(Reason.ApplyFailed, `applying children failed: ${(err as Error).message}`);
      }
    }
    const av = deployment ? deploymentAvailability(deployment) : null;
    const status: ToolPoolStatus = {
      ...(pool.metadata.generation !== undefined ? { observedGeneration: pool.metadata.generation } : {}),
      replicas: av?.replicas ?? pool.status?.replicas ?? 0,
      readyReplicas: av?.available ?? pool.status?.readyReplicas ?? 0,
      toolCount: pool.spec.tools.length,
      subject: poolSubjects({ namespace: pool.metadata.namespace ?? "default", name: pool.metadata.name ?? "" }),
      // From the runners' heartbeats (interlace-runners), when NATS is observed.
      ...(this.ctx.live?.observed === true ? { callsInFlight: await this.ctx.live.callsInFlight(pool.metadata.namespace ?? "default", pool.metadata.name ?? "").catch(() => pool.status?.callsInFlight ?? 0) } : {}),
      conditions: mergeConditions(pool.status?.conditions, conditions, pool.metadata.generation, this.ctx.now?.() ?? new Date()),
    };
    const before = pool.status?.conditions;
    if (await writeStatusIfChanged(client, ToolPoolKind, pool, status as Record<string, unknown>, STATUS_KEYS)) {
      await recordTransitions(this.ctx.recorder, pool, before, status.conditions ?? []);
    }
    if (failure) throw failure;
    return this.ctx.live?.observed === true ? { requeueAfterMs: 5_000 } : {};
  }

  private async finalize(pool: ToolPool, finalizers: string[]): Promise<ReconcileResult> {
    const ref = { namespace: pool.metadata.namespace ?? "default", name: pool.metadata.name ?? "" };
    try {
      await this.cleanup.cleanup(ref);
    } catch (err) {
      const message = `JetStream cleanup failed: ${(err as Error).message}`;
      const conditions = mergeConditions(pool.status?.conditions, degradedConditions(Reason.CleanupFailed, message), pool.metadata.generation, this.ctx.now?.() ?? new Date());
      const before = pool.status?.conditions;
      const status = { ...pool.status, conditions };
      if (await writeStatusIfChanged(this.ctx.client, ToolPoolKind, pool, status, ["conditions"])) {
        await recordTransitions(this.ctx.recorder, pool, before, conditions);
      }
      throw err;
    }
    await this.ctx.client.mergePatch(ToolPoolKind, ref.namespace, ref.name, {
      metadata: { resourceVersion: pool.metadata.resourceVersion, finalizers: finalizers.filter((f) => f !== TOOLPOOL_FINALIZER) },
    });
    this.ctx.log.info({ toolpool: `${ref.namespace}/${ref.name}` }, "cleanup done; finalizer removed");
    return {};
  }
}

/**
 * @module The joint autoscaler's controller: every interval, for each
 * AgentApp whose EnginePool or ToolPools have `spec.autoscaling`, it samples
 * the live signals (engine heartbeats from the engines bucket, the requests
 * the routers hold for the EnginePool while it has no ready engine, each tool
 * pool's JetStream consumer backlog and its runners' p90 wait), keeps the
 * window of samples the pools' stabilization and idle periods need, runs the
 * pure decision function, and, for builtin-mode pools whose count changes,
 * writes spec.replicas, then status.autoscaling once, then an Event with the
 * reason. The signals are exported as metrics for every autoscaled pool, so
 * an external-mode pool's HPA or KEDA reads the same figures. Keyed by app
 * on the controller's work queue; the requeue interval is the tick.
 */
import type { AgentApp, AutoscalingStatus, EnginePool, KindDefinition, ToolPool } from "../api/index.js";
import { EnginePoolKind, Reason, ToolPoolKind } from "../api/index.js";
import { boundsOf, callArrivalRate, decideAutoscaling, engineLoad, meanCallMs, PoolWants, windowMsOf, type AutoscaleDecision, type PoolDecision, type SignalSample } from "../autoscaling/index.js";
import type { AutoscalerMetrics } from "../metrics.js";
import type { Informer, ReconcileRequest, ReconcileResult, Reconciler } from "../runtime/index.js";
import type { ReconcilerContext } from "./context.js";

/** The field manager of the autoscaler's writes (spec.replicas, status.autoscaling), apart from the reconcilers' own. */
export const AUTOSCALER_FIELD_MANAGER = "interlace-autoscaler";

type Pool = EnginePool | ToolPool;

/** Drops samples older than the window, keeping the one at or before its start (so the window reads as covered). */
function trim(samples: SignalSample[], now: number, windowMs: number): SignalSample[] {
  let first = 0;
  while (first + 1 < samples.length && (samples[first + 1]?.at ?? now) <= now - windowMs) first++;
  return samples.slice(first);
}

function rfc3339(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}

export class AutoscalerReconciler implements Reconciler {
  /** Signal samples per app, oldest first. */
  private readonly history = new Map<string, SignalSample[]>();
  /** A pool shared by apps gets the most any of them wants. */
  private readonly wants: PoolWants;

  constructor(
    private readonly ctx: ReconcilerContext,
    private readonly apps: Informer<AgentApp>,
    private readonly enginePools: Informer<EnginePool>,
    private readonly toolPools: Informer<ToolPool>,
    private readonly metrics: AutoscalerMetrics,
    private readonly intervalMs: number,
  ) {
    this.wants = new PoolWants(3 * intervalMs);
  }

  async reconcile(req: ReconcileRequest): Promise<ReconcileResult> {
    const appKey = `${req.namespace}/${req.name}`;
    const looked = await this.look(req.namespace, req.name);
    if (looked === null) {
      this.history.delete(appKey);
      this.wants.forget(appKey);
      return {};
    }
    const { engine, tools, window, now } = looked;
    this.history.set(appKey, window);
    this.exportSignals(req.namespace, engine, tools, window);
    for (const d of looked.decision.pools) {
      const pool = d.kind === "EnginePool" ? engine : tools.find((p) => p.metadata.name === d.name);
      if (pool !== undefined) await this.apply(appKey, pool, d, now);
    }
    return { requeueAfterMs: this.intervalMs };
  }

  /**
   * The scale-ups the app's pass would make now, from a fresh sample added to
   * the window the passes keep, by the same decision function; nothing is kept
   * or written (the pass that follows samples and decides again). Empty for an
   * app no pass has looked at yet (its first pass comes at once anyway).
   */
  async pressure(namespace: string, name: string): Promise<PoolDecision[]> {
    if (!this.history.has(`${namespace}/${name}`)) return [];
    const looked = await this.look(namespace, name);
    return looked === null ? [] : looked.decision.pools.filter((d) => d.direction === "up");
  }

  /** Samples the app's signals now and decides over its window with them; null: nothing to scale for it. */
  private async look(ns: string, name: string): Promise<{ engine: EnginePool | undefined; tools: ToolPool[]; window: SignalSample[]; now: number; decision: AutoscaleDecision } | null> {
    const app = this.apps.get(ns, name);
    const live = this.ctx.live;
    if (!app || app.metadata.deletionTimestamp || live?.observed !== true) return null;
    const engine = this.enginePools.get(ns, app.spec.enginePool.name);
    const tools = (app.spec.toolPools ?? []).flatMap((r) => this.toolPools.get(ns, r.name) ?? []);
    const scaled: Pool[] = [...(engine ? [engine] : []), ...tools].filter((p) => p.spec.autoscaling !== undefined);
    if (scaled.length === 0) return null;

    const now = this.ctx.now?.().getTime() ?? Date.now();
    const sample: SignalSample = { at: now, engines: [], tools: {} };
    if (engine?.spec.autoscaling) {
      sample.engines = await live.engineSignals(ns, engine.metadata.name ?? "");
      // A pool at zero has no heartbeat: the requests routers hold for it are what wake it.
      sample.heldRequests = await live.heldRequests(ns, engine.metadata.name ?? "");
    }
    for (const pool of tools) sample.tools[pool.metadata.name ?? ""] = (await live.toolPoolSignal(ns, pool.metadata.name ?? "")) ?? { pending: 0, ackPending: 0 };
    const windowMs = Math.max(...scaled.map((p) => windowMsOf(boundsOf(p.spec.autoscaling ?? { maxReplicas: 1 }))));
    const window = trim([...(this.history.get(`${ns}/${name}`) ?? []), sample], now, windowMs);

    const decision = decideAutoscaling({
      now,
      ...(app.spec.slo ? { slo: app.spec.slo } : {}),
      ...(engine ? { enginePool: { name: engine.metadata.name ?? "", replicas: engine.spec.replicas ?? 1, ...(engine.spec.autoscaling ? { autoscaling: engine.spec.autoscaling } : {}) } } : {}),
      toolPools: tools.map((p) => ({
        name: p.metadata.name ?? "",
        replicas: p.spec.replicas ?? 1,
        concurrency: p.spec.concurrency ?? 8,
        ...(p.spec.autoscaling ? { autoscaling: p.spec.autoscaling } : {}),
      })),
      window,
    });
    return { engine, tools, window, now, decision };
  }

  /** Writes one pool's decision: spec.replicas, then status.autoscaling, then the Event. */
  private async apply(appKey: string, pool: Pool, d: PoolDecision, now: number): Promise<void> {
    const ns = pool.metadata.namespace ?? "default";
    const labels = { kind: d.kind, pool_namespace: ns, pool: d.name };
    const wanted = this.wants.record(`${d.kind}/${ns}/${d.name}`, appKey, d.desired, now);
    this.metrics.desiredReplicas.set(labels, wanted);
    // Another app on the pool wants more: its decision stands, not this one.
    if (d.direction === undefined || wanted !== d.desired) return;

    const kind: KindDefinition = d.kind === "EnginePool" ? EnginePoolKind : ToolPoolKind;
    const { client, recorder, log } = this.ctx;
    // No resourceVersion precondition: every status write bumps it, so it would refuse most passes; in builtin
    // mode the autoscaler owns the count (as an HPA owns its target's), and the write is idempotent.
    await client.mergePatch(kind, ns, d.name, { spec: { replicas: d.desired } }, { fieldManager: AUTOSCALER_FIELD_MANAGER });
    this.metrics.decisions.inc({ ...labels, direction: d.direction });
    const status: AutoscalingStatus = { desiredReplicas: d.desired, lastScaleTime: rfc3339(now), lastDirection: d.direction, lastReason: d.reason };
    // Its own field manager: the pool reconciler's status applies neither own nor remove this field.
    await client.apply(
      kind,
      { apiVersion: pool.apiVersion, kind: pool.kind, metadata: { name: d.name, namespace: ns }, status: { autoscaling: status } },
      { fieldManager: AUTOSCALER_FIELD_MANAGER, force: true, subresource: "status" },
    );
    await recorder.record(pool, "Normal", d.direction === "up" ? Reason.ScaledUp : Reason.ScaledDown, d.reason);
    log.info({ pool: `${ns}/${d.name}`, kind: d.kind, from: d.current, to: d.desired, app: appKey }, d.reason);
  }

  private exportSignals(ns: string, engine: EnginePool | undefined, tools: readonly ToolPool[], window: readonly SignalSample[]): void {
    const m = this.metrics;
    const sample = window.at(-1)!;
    if (engine?.spec.autoscaling) {
      const load = engineLoad(sample.engines);
      const labels = { pool_namespace: ns, pool: engine.metadata.name ?? "" };
      m.engineQueuedSessions.set(labels, load.queuedSessions);
      m.engineActiveSessions.set(labels, load.activeSessions);
      m.engineKvUse.set(labels, load.kvCellsTotal > 0 ? load.kvCellsUsed / load.kvCellsTotal : 0);
      m.engineHeldRequests.set(labels, sample.heldRequests ?? 0);
      if (load.ttftP90Ms !== undefined) m.engineTtftP90.set(labels, load.ttftP90Ms / 1000);
      else m.engineTtftP90.remove(labels);
    }
    for (const pool of tools) {
      if (!pool.spec.autoscaling) continue;
      const s = sample.tools[pool.metadata.name ?? ""];
      const labels = { pool_namespace: ns, pool: pool.metadata.name ?? "" };
      m.toolCallsPending.set(labels, s?.pending ?? 0);
      m.toolCallsRunning.set(labels, s?.ackPending ?? 0);
      // No call started lately: no wait to report (not a wait of zero).
      if (s?.waitP90Ms !== undefined) m.toolWaitP90.set(labels, s.waitP90Ms / 1000);
      else m.toolWaitP90.remove(labels);
      // The offered-load rule's inputs, for Grafana and an external scaler; absent while not measured (not 0).
      const rate = callArrivalRate(window, pool.metadata.name ?? "", sample.at);
      if (rate !== undefined) m.toolCallArrivalRate.set(labels, rate);
      else m.toolCallArrivalRate.remove(labels);
      const callMs = meanCallMs(window, pool.metadata.name ?? "", sample.at);
      if (callMs !== undefined) m.toolCallTime.set(labels, callMs / 1000);
      else m.toolCallTime.remove(labels);
    }
  }
}

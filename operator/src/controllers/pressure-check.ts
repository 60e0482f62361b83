/**
 * @module Runs an app's autoscaler pass between ticks when its pools with
 * replicas are under pressure. Every `checkMs` (2 s by default), while this
 * operator leads, it samples each AgentApp that has a builtin-mode pool with
 * replicas and asks the autoscaler what its pass would decide now, over the
 * window the passes keep plus the fresh sample, by the same decision function
 * (every sequence held while the sessions grow, sessions queued, calls
 * pending past the tool-wait budget, a TTFT over the SLO, with no replica
 * already starting to meet it). A scale-up queues the app's pass at once, so
 * an engine or runner starts within a check, not up to
 * `--autoscale-interval-ms` later. Scale-downs wait for the tick. It costs a
 * pass's reads per app per check (the engines' heartbeats, the routers'
 * presences, one consumer info per tool pool) and no write. Pools at zero are
 * the zero-pool waker's, even where the app's other pools bring the check to
 * it: a scale-up of one is not queued or counted here.
 */
import type { Logger } from "pino";
import type { AgentApp, EnginePool, ToolPool } from "../api/index.js";
import type { PoolDecision } from "../autoscaling/index.js";
import type { AutoscalerMetrics } from "../metrics.js";
import { PeriodicCheck, type Informer } from "../runtime/index.js";

export interface PressureCheckOptions {
  apps: Informer<AgentApp>;
  enginePools: Informer<EnginePool>;
  toolPools: Informer<ToolPool>;
  /** The autoscaler's controller (its queue, and whether it runs here) and its reconciler's look at an app. */
  autoscaler: { enqueue(appKey: string): void; isRunning(): boolean };
  pressure(namespace: string, name: string): Promise<PoolDecision[]>;
  /** How often, ms; 0: never (scale-ups wait for the tick). */
  checkMs: number;
  metrics: AutoscalerMetrics;
  log: Logger;
}

/** A builtin-mode pool with replicas: the pressure check's (one at zero is the waker's). */
function awake(pool: EnginePool | ToolPool | undefined): boolean {
  const a = pool?.spec.autoscaling;
  return a !== undefined && (a.mode ?? "builtin") === "builtin" && (pool?.spec.replicas ?? 1) > 0;
}

export class PressureCheck {
  private readonly loop: PeriodicCheck;

  constructor(private readonly opts: PressureCheckOptions) {
    this.loop = new PeriodicCheck(opts.checkMs, () => this.check(), opts.log, "pressure check failed; the tick still scales");
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** One look at the apps with awake pools; returns the app keys queued. */
  async check(): Promise<string[]> {
    const { apps, enginePools, toolPools, autoscaler, metrics, log } = this.opts;
    if (!autoscaler.isRunning()) return [];
    const queued: string[] = [];
    for (const app of apps.list()) {
      const ns = app.metadata.namespace ?? "default";
      const name = app.metadata.name ?? "";
      const pools = [enginePools.get(ns, app.spec.enginePool.name), ...(app.spec.toolPools ?? []).map((r) => toolPools.get(ns, r.name))];
      if (!pools.some(awake)) continue;
      // The decision also wakes the app's pools at zero; that is the waker's to count and queue.
      const ups = (await this.opts.pressure(ns, name)).filter((d) => awake(d.kind === "EnginePool" ? enginePools.get(ns, d.name) : toolPools.get(ns, d.name)));
      if (ups.length === 0) continue;
      for (const d of ups) metrics.pressurePasses.inc({ kind: d.kind, pool_namespace: ns, pool: d.name });
      log.info({ app: `${ns}/${name}`, reasons: ups.map((d) => d.reason) }, "pools under pressure between ticks; autoscaler pass now");
      queued.push(`${ns}/${name}`);
      autoscaler.enqueue(`${ns}/${name}`);
    }
    return queued;
  }
}

/**
 * @module Wakes pools at zero between the autoscaler's ticks. Every
 * `checkMs` (1 s by default), while this operator leads, it reads the work
 * waiting for each builtin-mode pool at zero (the calls pending on a
 * ToolPool's consumer, the requests the routers hold for an EnginePool) and
 * queues the autoscaler pass of every AgentApp that uses a pool with work
 * waiting. So the first call or request waits for the pool's cold start, not
 * also for the next tick (up to `--autoscale-interval-ms`). It costs one read
 * per sleeping pool per check (a consumer info, or the routers' presences),
 * and nothing for pools with replicas. The pass decides the count as at a
 * tick; this only says when to run it.
 */
import type { Logger } from "pino";
import type { AgentApp, EnginePool, ToolPool } from "../api/index.js";
import { asleep, wakesFromZero, type ScaledPool } from "../autoscaling/index.js";
import type { AutoscalerMetrics } from "../metrics.js";
import { PeriodicCheck, type Informer } from "../runtime/index.js";
import { appsUsingEnginePool, appsUsingToolPool } from "./agent-app.js";
import type { LiveState } from "./live-state.js";

export interface ZeroPoolWakerOptions {
  live: LiveState;
  apps: Informer<AgentApp>;
  enginePools: Informer<EnginePool>;
  toolPools: Informer<ToolPool>;
  /** The autoscaler's controller: its queue, and whether it runs here (this operator leads). */
  autoscaler: { enqueue(appKey: string): void; isRunning(): boolean };
  /** How often sleeping pools are looked at, ms; 0: never (wakes wait for the tick). */
  checkMs: number;
  metrics: AutoscalerMetrics;
  log: Logger;
}

function scaled(p: EnginePool | ToolPool): ScaledPool {
  return { name: p.metadata.name ?? "", replicas: p.spec.replicas ?? 1, ...(p.spec.autoscaling ? { autoscaling: p.spec.autoscaling } : {}) };
}

export class ZeroPoolWaker {
  private readonly loop: PeriodicCheck;

  constructor(private readonly opts: ZeroPoolWakerOptions) {
    this.loop = new PeriodicCheck(opts.checkMs, () => this.check(), opts.log, "wake check failed; the tick still wakes pools");
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** One look at the sleeping pools; returns the app keys queued. */
  async check(): Promise<string[]> {
    const { live, apps, autoscaler, metrics, log } = this.opts;
    if (!live.observed || !autoscaler.isRunning()) return [];
    const queued = new Set<string>();
    const wake = (kind: "EnginePool" | "ToolPool", pool: EnginePool | ToolPool, waiting: number, keys: string[]): void => {
      const ns = pool.metadata.namespace ?? "default";
      metrics.earlyWakes.inc({ kind, pool_namespace: ns, pool: pool.metadata.name ?? "" });
      log.info({ kind, pool: `${ns}/${pool.metadata.name ?? ""}`, waiting, apps: keys }, "work waits for a pool at zero; autoscaler pass now");
      for (const k of keys) {
        queued.add(k);
        autoscaler.enqueue(k);
      }
    };
    for (const pool of this.opts.toolPools.list()) {
      if (!asleep(scaled(pool))) continue;
      const keys = appsUsingToolPool(apps, pool);
      if (keys.length === 0) continue;
      const pending = (await live.toolPoolSignal(pool.metadata.namespace ?? "default", pool.metadata.name ?? ""))?.pending ?? 0;
      if (wakesFromZero(scaled(pool), pending)) wake("ToolPool", pool, pending, keys);
    }
    for (const pool of this.opts.enginePools.list()) {
      if (!asleep(scaled(pool))) continue;
      const keys = appsUsingEnginePool(apps, pool);
      if (keys.length === 0) continue;
      const held = await live.heldRequests(pool.metadata.namespace ?? "default", pool.metadata.name ?? "");
      if (wakesFromZero(scaled(pool), held)) wake("EnginePool", pool, held, keys);
    }
    return [...queued];
  }
}

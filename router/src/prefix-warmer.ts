/**
 * @module The side of hot-prefix warming that acts (prefix-warming.ts
 * decides): it records each app's session arrivals and the last body placed
 * for it, and after each arrival runs the decision on the pool as the
 * registry sees it; a warm is an engine's `POST /v1/prefixes` with that body
 * (same auth as every router→engine call), so the engine renders the same
 * prompt and stores exactly the tokens a session of the app shares. At most
 * one warm per (app, engine) is in flight, and after one ends the pair is
 * left alone for the hot window (the engine's heartbeat shows the prefix by
 * then, or the engine was busy). Two router replicas may ask the same warm:
 * the engine answers the second `held`. With several replicas, an app's
 * arrivals are counted over all of them (`share`, warm-arrivals.ts): each
 * replica places only its share of them. An engine that becomes ready is
 * considered at once for every hot app of its pool this replica placed a
 * session of (with the last body placed), not at the app's next arrival: the
 * warm starts before the sessions that spill to the new engine, and they
 * fork the prefix (or wait for its fill) instead of each prefilling it.
 * The endpoint picker, the other front door, warms the same way from the
 * sessions it places (router/src/picker/picker-server.ts).
 */
import type { CreateSessionRequest, Logger } from "../../common/src/index.js";
import type { EngineRegistry } from "./engine-registry.js";
import type { Counter } from "prom-client";
import { decideWarm, type WarmSettings } from "./prefix-warming.js";

/** Arrivals shared with the other router replicas (warm-arrivals.ts). */
export interface WarmArrivalShare {
  publish(pool: { namespace: string; name: string }, key: string): void;
}

/** An app session as placed: its pool, chain, affinity key (the app's shared prefix), and the body sent. */
export interface WarmArrival {
  app: string;
  pool: { namespace: string; name: string };
  chain: readonly string[];
  affinityKey: string;
  /** Blocks of `chain` that are the app's shared prefix (system prompt, tools). */
  appSegments: number;
  body: CreateSessionRequest;
}

export interface PrefixWarmerOptions {
  engines: EngineRegistry;
  /** The front door's counter of warms (the router's or the endpoint picker's). */
  metrics: { prefixWarms: Counter<"outcome"> };
  log: Logger;
  engineHeaders: Record<string, string>;
  settings: WarmSettings;
  timeoutMs: number;
  now?: () => number;
}

interface AppHeat {
  pool: { namespace: string; name: string };
  arrivals: number[];
  /** The last session of the app this replica placed (absent: only other replicas' arrivals counted). */
  last?: WarmArrival;
}

export class PrefixWarmer {
  private readonly apps = new Map<string, AppHeat>();
  /** `affinityKey pod` → until when it is left alone (in flight: Infinity). */
  private readonly resting = new Map<string, number>();
  private readonly now: () => number;
  private readonly running = new Set<Promise<void>>();
  /** Announces this replica's arrivals to the others (unset: its own arrivals only). */
  private share: WarmArrivalShare | undefined;

  constructor(private readonly options: PrefixWarmerOptions) {
    this.now = options.now ?? Date.now;
  }

  /** From now on, this replica's arrivals are announced through `share` (the others' come in through {@link observeRemote}). */
  shareArrivals(share: WarmArrivalShare): void {
    this.share = share;
  }

  get enabled(): boolean {
    return this.options.settings.sessions > 0;
  }

  /** A session of an app was placed: count it, and warm a second engine if the app is hot and one engine holds its prefix alone. */
  observe(arrival: WarmArrival): void {
    if (!this.enabled || arrival.appSegments <= 0) return;
    this.share?.publish(arrival.pool, arrival.affinityKey);
    const now = this.now();
    const key = this.count(arrival.pool, arrival.affinityKey, now);
    this.apps.get(key)!.last = arrival;
    this.consider(key, arrival, now);
  }

  /** An engine of `pool` became ready: warm it with each hot app of the pool that some engine holds. */
  engineReady(pool: { namespace: string; name: string }, pod: string): void {
    if (!this.enabled) return;
    const now = this.now();
    this.forgetCold(now);
    for (const [key, heat] of this.apps) {
      if (heat.last !== undefined && heat.pool.namespace === pool.namespace && heat.pool.name === pool.name) this.consider(key, heat.last, now, pod);
    }
  }

  /** Another router replica placed a session of the app with this affinity key: it counts toward the app's heat (the decision is that replica's). */
  observeRemote(pool: { namespace: string; name: string }, affinityKey: string): void {
    if (this.enabled) this.count(pool, affinityKey, this.now());
  }

  private count(pool: { namespace: string; name: string }, affinityKey: string, now: number): string {
    const window = this.options.settings.windowMs;
    const key = `${pool.namespace}/${pool.name} ${affinityKey}`;
    const heat = this.apps.get(key) ?? { pool, arrivals: [] };
    heat.arrivals = [...heat.arrivals.filter((at) => at > now - window), now];
    this.apps.set(key, heat);
    this.forgetCold(now);
    return key;
  }

  /** Resolves when the warms in flight have ended (tests, shutdown). */
  async settled(): Promise<void> {
    while (this.running.size > 0) await Promise.all([...this.running]);
  }

  private consider(key: string, arrival: WarmArrival, now: number, joining?: string): void {
    const heat = this.apps.get(key)!;
    const { pool, chain, appSegments } = arrival;
    const shared = chain.slice(0, appSegments);
    const skip = new Set<string>();
    for (const [pair, until] of this.resting) if (pair.startsWith(`${key} `) && until > now) skip.add(pair.slice(key.length + 1));
    const engines = this.options.engines.loads(pool.namespace, pool.name).map((e) => ({
      pod: e.pod,
      free: e.free,
      capacity: e.capacity,
      load: e.load,
      prefilling: (this.options.engines.find(pool.namespace, e.pod)?.fillingPrefixes?.length ?? 0) > 0,
      matched: e.blocks.leading(shared).matched,
    }));
    const decision = decideWarm({ arrivals: heat.arrivals, now, segments: shared.length, engines, skip, ...(joining !== undefined ? { joining } : {}) }, this.options.settings);
    if (!decision.warm) return;
    const pair = `${key} ${decision.pod}`;
    this.resting.set(pair, Infinity);
    const run = this.warm(arrival, decision.pod, decision.reason).finally(() => {
      this.resting.set(pair, this.now() + this.options.settings.windowMs);
      this.running.delete(run);
    });
    this.running.add(run);
  }

  private async warm(arrival: WarmArrival, pod: string, reason: string): Promise<void> {
    const engine = this.options.engines.find(arrival.pool.namespace, pod);
    if (engine === undefined) return;
    const started = this.now();
    let outcome: string;
    let detail: string | undefined;
    try {
      const res = await fetch(`${engine.endpoint}/v1/prefixes`, {
        method: "POST",
        headers: { ...this.options.engineHeaders, "content-type": "application/json" },
        body: JSON.stringify(arrival.body),
        signal: AbortSignal.timeout(this.options.timeoutMs),
      });
      const body = (await res.json().catch(() => ({}))) as { outcome?: string; error?: { message?: string } };
      outcome = res.status === 201 ? "warmed" : res.status === 200 ? "held" : res.status === 429 ? "busy" : res.status === 409 ? "refused" : "failed";
      detail = body.error?.message ?? body.outcome;
    } catch (err) {
      outcome = "failed";
      detail = err instanceof Error ? err.message : String(err);
    }
    this.options.metrics.prefixWarms.inc({ outcome });
    this.options.log.info({ app: arrival.app, engine: pod, outcome, reason, detail, ms: this.now() - started }, "hot prefix warm");
  }

  /** Drops apps with no arrival in the window, and rests that have ended. */
  private forgetCold(now: number): void {
    const window = this.options.settings.windowMs;
    for (const [key, heat] of this.apps) if (heat.arrivals.every((at) => at <= now - window)) this.apps.delete(key);
    for (const [pair, until] of this.resting) if (until <= now) this.resting.delete(pair);
  }
}

/**
 * @module Each active app's home engine in its pool: where a prefix miss of
 * the app is seeded, and the engine whose prefix store keeps the app's
 * shared prefix before any replica (the session's `x-interlace-prefix-role`
 * header, common/src/protocol/prefix-role.ts).
 *
 * Why: with more apps than one engine's prefix store holds but few enough
 * for the pool's stores together, the apps fit only if each engine keeps
 * its share. Seeding a miss on the least loaded engine (as each placement
 * found the pool) homed four of six apps on one engine of two in a measured
 * run, and under plain LRU every spilled session's prefix replaced another
 * app's in its engine's store: both stores churned through all six apps,
 * and an app whose prefix went from both engines was prefilled cold again
 * (9 to 12 times in 131 sessions at 0.45/s).
 *
 * The assignment is consistent hashing with bounded loads over apps rather
 * than sessions: apps in order of their key's hash each take the first
 * engine on their ring walk (consistent-hash.ts) that has fewer than
 * ceil(apps / engines) apps. It is a pure function of the active apps and
 * the engines, so every router replica computes the same homes from the
 * same arrivals. An app is active while a session of it arrived at some
 * replica within the window (each replica announces its arrivals,
 * warm-arrivals.ts). A replica that has just started knows only the
 * arrivals since, so until the window has passed its homes may differ from
 * the others' for apps it has not seen; a prefix the pool already holds
 * is placed by prefix affinity either way, so only misses are affected.
 */
import { ringFor } from "./consistent-hash.js";
import type { WarmArrivalShare } from "./prefix-warmer.js";

/** `keys` (apps' affinity keys) → home pod: each takes the first pod on its ring walk with room, at most ceil(keys / pods) apps a pod. */
export function assignHomes(keys: readonly string[], pods: readonly string[]): Map<string, string> {
  const homes = new Map<string, string>();
  if (pods.length === 0) return homes;
  const ring = ringFor(pods);
  const cap = Math.ceil(keys.length / pods.length);
  const count = new Map<string, number>();
  // Sorted so every replica assigns in one order whatever order it saw the apps in.
  for (const key of [...new Set(keys)].sort()) {
    const pod = ring.walk(key).find((p) => (count.get(p) ?? 0) < cap)!;
    count.set(pod, (count.get(pod) ?? 0) + 1);
    homes.set(key, pod);
  }
  return homes;
}

/** Default window: an app with no session arriving for this long no longer holds a home. */
export const APP_ACTIVE_WINDOW_MS = 300_000;

/** One pool's active apps, and their homes as last assigned (kept until the apps or the engines change). */
interface PoolApps {
  /** Affinity key → when a session of it last arrived (epoch ms). */
  seen: Map<string, number>;
  assigned?: { pods: string; homes: Map<string, string> };
}

export class AppHomes {
  /** Pool key → its active apps. */
  private readonly pools = new Map<string, PoolApps>();
  private share: WarmArrivalShare | undefined;

  constructor(
    private readonly windowMs = APP_ACTIVE_WINDOW_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /** From now on, this replica's arrivals are announced through `share` (the others' come in through {@link observeRemote}). */
  shareArrivals(share: WarmArrivalShare): void {
    this.share = share;
  }

  /** A session of the app with this affinity key arrived at this replica. */
  observe(pool: { namespace: string; name: string }, key: string): void {
    this.share?.publish(pool, key);
    this.observeRemote(pool, key);
  }

  /** A session of the app arrived (at any replica). */
  observeRemote(pool: { namespace: string; name: string }, key: string): void {
    const poolKey = `${pool.namespace}/${pool.name}`;
    const apps = this.pools.get(poolKey) ?? { seen: new Map<string, number>() };
    if (!apps.seen.has(key)) delete apps.assigned;
    apps.seen.set(key, this.now());
    this.pools.set(poolKey, apps);
  }

  /** The app's home among `pods`, or undefined when the app is not active (no session arrived within the window). */
  homeOf(pool: { namespace: string; name: string }, key: string, pods: readonly string[]): string | undefined {
    const apps = this.pools.get(`${pool.namespace}/${pool.name}`);
    if (apps === undefined) return undefined;
    const since = this.now() - this.windowMs;
    for (const [k, at] of apps.seen) if (at <= since) (apps.seen.delete(k), delete apps.assigned);
    if (!apps.seen.has(key)) return undefined;
    // Assigned again only when the active apps or the engines changed: placement asks on every pass.
    const podsKey = [...pods].sort().join("\u0000");
    if (apps.assigned?.pods !== podsKey) apps.assigned = { pods: podsKey, homes: assignHomes([...apps.seen.keys()], pods) };
    return apps.assigned.homes.get(key);
  }
}

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
 * than sessions, made in the order the apps became active: the k-th takes
 * the first engine on its ring walk (consistent-hash.ts) that has fewer
 * than ceil(k / engines) apps. An app keeps its home as later apps arrive.
 * Assigning the whole active set again by one cap moved earlier apps when a
 * new one took their engine's last place: in a measured run (two routers,
 * six apps, seed 4) three homes moved in the first 22 s, and a moved app's
 * prefix stayed behind as a `home` entry of its old engine's store, which
 * no replica may replace, while its new home, and the apps homed there,
 * ran it as a replica (reuse 0.903, against 0.923 with homes kept; five
 * seeds whose homes never moved: 0.937 to 0.999). On a change of
 * engines, or when an app leaves the window, the apps keep their homes
 * while their engine is there and within ceil(apps / engines), in order,
 * and the rest are placed again the same way.
 *
 * The homes depend only on the order the apps arrived in and the engines,
 * so every router replica computes the same homes from the same arrivals:
 * an app is active while a session of it arrived at some replica within
 * the window (each replica announces its arrivals, warm-arrivals.ts, which
 * reach the others in milliseconds, so only apps first arriving within
 * that of each other at two replicas may be ordered differently). A replica
 * that has just started knows only the arrivals since, so its homes may
 * differ from the others' for apps active before it started, until they
 * leave the window; a prefix the pool already holds is placed by prefix
 * affinity either way, so only misses are affected.
 */
import { ringFor } from "./consistent-hash.js";
import type { WarmArrivalShare } from "./prefix-warmer.js";

/**
 * `keys` (apps' affinity keys, in the order they became active) → home pod.
 * Each key of `previous` keeps its pod while that pod is in `pods` and has
 * fewer than ceil(keys / pods) apps kept before it; the others, in order,
 * take the first pod on their ring walk with fewer than ceil(k / pods) apps,
 * k counting this one and every app placed before it.
 */
export function assignHomes(keys: readonly string[], pods: readonly string[], previous?: ReadonlyMap<string, string>): Map<string, string> {
  const homes = new Map<string, string>();
  if (pods.length === 0) return homes;
  const ring = ringFor(pods);
  const unique = [...new Set(keys)];
  const cap = Math.ceil(unique.length / pods.length);
  const count = new Map<string, number>();
  const take = (key: string, pod: string): void => {
    count.set(pod, (count.get(pod) ?? 0) + 1);
    homes.set(key, pod);
  };
  for (const key of unique) {
    const pod = previous?.get(key);
    if (pod !== undefined && pods.includes(pod) && (count.get(pod) ?? 0) < cap) take(key, pod);
  }
  for (const key of unique) {
    if (homes.has(key)) continue;
    const room = Math.ceil((homes.size + 1) / pods.length);
    take(key, ring.walk(key).find((p) => (count.get(p) ?? 0) < room)!);
  }
  return homes;
}

/** Default window: an app with no session arriving for this long no longer holds a home. */
export const APP_ACTIVE_WINDOW_MS = 300_000;

/** One pool's active apps, and their homes as last assigned (assigned again, keeping what stays, when the apps or the engines change). */
interface PoolApps {
  /** Affinity key → when a session of it last arrived (epoch ms), in the order the apps became active. */
  seen: Map<string, number>;
  homes: Map<string, string>;
  /** The engines `homes` was assigned over; undefined: the active apps changed since. */
  pods?: string;
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
    const apps = this.pools.get(poolKey) ?? { seen: new Map<string, number>(), homes: new Map<string, string>() };
    if (!apps.seen.has(key)) delete apps.pods;
    apps.seen.set(key, this.now());
    this.pools.set(poolKey, apps);
  }

  /** The app's home among `pods`, or undefined when the app is not active (no session arrived within the window). */
  homeOf(pool: { namespace: string; name: string }, key: string, pods: readonly string[]): string | undefined {
    const apps = this.pools.get(`${pool.namespace}/${pool.name}`);
    if (apps === undefined) return undefined;
    const since = this.now() - this.windowMs;
    for (const [k, at] of apps.seen) if (at <= since) (apps.seen.delete(k), delete apps.pods);
    if (!apps.seen.has(key)) return undefined;
    // Assigned again only when the active apps or the engines changed: placement asks on every pass.
    const podsKey = [...pods].sort().join("\u0000");
    if (apps.pods !== podsKey) {
      apps.homes = assignHomes([...apps.seen.keys()], pods, apps.homes);
      apps.pods = podsKey;
    }
    return apps.homes.get(key);
  }
}

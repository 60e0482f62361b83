/**
 * @module Hot-prefix warming's arrival counts, shared by the router replicas.
 * An app is hot at `--prefix-warm-sessions` arrivals within the window, but
 * with N replicas each places about 1/N of an app's sessions: counting only
 * its own, a replica found an app hot about N times less often (two routers,
 * six apps at 0.6/s: 25 of 76 arrivals found their app hot, against 48 when
 * counted over the pool), so warming, which exists to spare a spilled
 * session a cold prefill, fired less with two routers than with one.
 *
 * Each replica publishes every app session it places (with apps' home
 * engines on, app-homes.ts: every app session that arrives, placed or not)
 * on its pool's subject `interlace.warmarrivals.<namespace>.<pool>`
 * (`{router, key}`, the key being the app's affinity key, a prefix hash)
 * and counts the others' as arrivals at receipt. The same arrivals tell
 * every replica which apps are active, and so hold a home. Core NATS, no stream: a lost message undercounts one
 * arrival, which is what every replica did before. Only the replica that
 * placed a session decides on it (it has the body a warm sends), so a
 * replica's warm needs no other's.
 */
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import type { Logger } from "../../common/src/index.js";
import { ALL_WARM_ARRIVALS, WARM_ARRIVALS_PREFIX, warmArrivalsSubject, type PoolRef } from "../../common/src/protocol/index.js";
import { poolOfSubject, ReplicaChannel } from "./replica-channel.js";

/** One placed app session as another replica announces it. */
interface WarmArrival {
  pool: PoolRef;
  key: string;
}

function parse(subject: string, body: unknown): (WarmArrival & { router: string }) | null {
  const pool = poolOfSubject(subject, WARM_ARRIVALS_PREFIX);
  if (pool === null || typeof body !== "object" || body === null) return null;
  const { router, key } = body as { router?: unknown; key?: unknown };
  if (typeof router !== "string" || router.length === 0 || router.length > 64 || typeof key !== "string" || key.length === 0 || key.length > 256) return null;
  return { pool, key, router };
}

export class WarmArrivals {
  private readonly channel: ReplicaChannel<WarmArrival>;

  constructor(nc: NatsConnection, log: Logger) {
    this.channel = new ReplicaChannel(nc, log, "warm arrival");
  }

  /** Tells `record` of every other replica's placed app session (pool, affinity key); `onMalformed` of each message dropped. Unsubscribe (or drain the connection) to stop. */
  listen(record: (pool: PoolRef, key: string) => void, onMalformed: () => void = () => {}): Subscription {
    return this.channel.listen(ALL_WARM_ARRIVALS, parse, (a) => record(a.pool, a.key), onMalformed);
  }

  /** Announces one of this replica's placed app sessions (lost when closing: the arrival counts here only). */
  publish(pool: PoolRef, key: string): void {
    this.channel.publish(warmArrivalsSubject(pool), { key });
  }
}

/**
 * @module Hot-prefix warming's arrival counts, shared by the router replicas.
 * An app is hot at `--prefix-warm-sessions` arrivals within the window, but
 * with N replicas each places about 1/N of an app's sessions: counting only
 * its own, a replica found an app hot about N times less often (two routers,
 * six apps at 0.6/s: 25 of 76 arrivals found their app hot, against 48 when
 * counted over the pool), so warming, which exists to spare a spilled
 * session a cold prefill, fired less with two routers than with one.
 *
 * Each replica publishes every app session it places on its pool's subject
 * `interlace.warmarrivals.<namespace>.<pool>` (`{router, key}`, the key
 * being the app's affinity key, a prefix hash) and counts the others' as
 * arrivals at receipt. Core NATS, no stream: a lost message undercounts one
 * arrival, which is what every replica did before. Only the replica that
 * placed a session decides on it (it has the body a warm sends), so a
 * replica's warm needs no other's.
 */
import { randomUUID } from "node:crypto";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import type { Logger } from "../../common/src/index.js";
import { ALL_WARM_ARRIVALS, decodeToken, WARM_ARRIVALS_PREFIX, warmArrivalsSubject, type PoolRef } from "../../common/src/protocol/index.js";

/** One placed app session as another replica announces it. */
interface WarmArrivalMessage {
  router: string;
  key: string;
}

function parse(subject: string, body: unknown): { pool: PoolRef; key: string; router: string } | null {
  const parts = subject.split(".");
  if (parts.length !== 4 || `${parts[0]}.${parts[1]}` !== WARM_ARRIVALS_PREFIX) return null;
  if (typeof body !== "object" || body === null) return null;
  const { router, key } = body as Partial<WarmArrivalMessage>;
  if (typeof router !== "string" || router.length === 0 || router.length > 64 || typeof key !== "string" || key.length === 0 || key.length > 256) return null;
  try {
    return { pool: { namespace: decodeToken(parts[2]!), name: decodeToken(parts[3]!) }, key, router };
  } catch {
    return null;
  }
}

export class WarmArrivals {
  /** This process's name on the subject: its own messages come back to it and are not counted twice. */
  private readonly router = randomUUID();

  constructor(
    private readonly nc: NatsConnection,
    private readonly log: Logger,
  ) {}

  /** Tells `record` of every other replica's placed app session (pool, affinity key); `onMalformed` of each message dropped. Unsubscribe (or drain the connection) to stop. */
  listen(record: (pool: PoolRef, key: string) => void, onMalformed: () => void = () => {}): Subscription {
    return this.nc.subscribe(ALL_WARM_ARRIVALS, {
      callback: (err, msg) => {
        if (err !== null) return void this.log.warn({ err }, "warm-arrivals subscription failed");
        let body: unknown;
        try {
          body = msg.json();
        } catch {
          body = undefined;
        }
        const arrival = parse(msg.subject, body);
        if (arrival === null) {
          onMalformed();
          return void this.log.warn({ subject: msg.subject }, "malformed warm arrival dropped");
        }
        if (arrival.router !== this.router) record(arrival.pool, arrival.key);
      },
    });
  }

  /** Announces one of this replica's placed app sessions. */
  publish(pool: PoolRef, key: string): void {
    try {
      this.nc.publish(warmArrivalsSubject(pool), JSON.stringify({ router: this.router, key } satisfies WarmArrivalMessage));
    } catch (err) {
      // Closing or closed: the arrival counts here only.
      this.log.debug({ err }, "warm arrival not published");
    }
  }
}

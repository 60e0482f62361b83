/**
 * @module The capacity queues' heads, shared by the router replicas. Each
 * replica keeps its own queue per pool, and when a sequence frees, the
 * replicas' oldest requests race for it through the shared reservations.
 * One replica won that race far more often than the other (two routers, 1.2
 * sessions/s: 34 of one replica's 69 sessions queued, a mean 7.3 s, against
 * 17 and 1.9 s through the other), so a request's wait depended on the
 * replica the Service gave it. Each replica now publishes its heads of a
 * pool's queue (`{router, oldest, holding}`: when its oldest request
 * waiting for any sequence joined, epoch ms, or null; and per engine, its
 * oldest request holding for that engine's prefix) on
 * `interlace.queueheads.<namespace>.<pool>` when they change, and again
 * every {@link HEAD_REFRESH_MS} while there are any; the capacity queue
 * holds its own requests behind another replica's older ones as behind its
 * own (capacity-queue.ts). Core NATS, no stream: a lost message is
 * repaired by the next refresh, and a head not refreshed within
 * {@link HEAD_TTL_MS} (its replica gone) holds nobody back.
 */
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import type { Logger } from "../../common/src/index.js";
import { ALL_QUEUE_HEADS, QUEUE_HEADS_PREFIX, queueHeadsSubject, type PoolRef } from "../../common/src/protocol/index.js";
import type { QueueHead } from "./capacity-queue.js";
import { poolOfSubject, ReplicaChannel } from "./replica-channel.js";

/** How often a replica repeats a head that has not changed. */
export const HEAD_REFRESH_MS = 1_000;
/** How long another replica's head holds requests back without being repeated. */
export const HEAD_TTL_MS = 3_000;

/** Engines named in one message's `holding`, at most: a pool's engines, with room (a forged or broken message is dropped). */
const MAX_HOLDING = 1024;

const isTime = (x: unknown): x is number => typeof x === "number" && Number.isFinite(x) && x >= 0;

interface RemoteHead {
  pool: PoolRef;
  router: string;
  head: QueueHead;
}

function parse(subject: string, body: unknown): RemoteHead | null {
  const pool = poolOfSubject(subject, QUEUE_HEADS_PREFIX);
  if (pool === null || typeof body !== "object" || body === null) return null;
  const { router, oldest, holding } = body as { router?: unknown; oldest?: unknown; holding?: unknown };
  if (typeof router !== "string" || router.length === 0 || router.length > 64) return null;
  if (oldest !== null && !isTime(oldest)) return null;
  if (holding !== undefined) {
    if (typeof holding !== "object" || holding === null || Array.isArray(holding)) return null;
    const entries = Object.entries(holding);
    if (entries.length > MAX_HOLDING || !entries.every(([pod, at]) => pod.length > 0 && pod.length <= 253 && isTime(at))) return null;
  }
  return { pool, router, head: { oldest, ...(holding !== undefined ? { holding: holding as Record<string, number> } : {}) } };
}

export class QueueHeads {
  private readonly channel: ReplicaChannel<RemoteHead>;

  constructor(nc: NatsConnection, log: Logger) {
    this.channel = new ReplicaChannel(nc, log, "queue head");
  }

  /** Tells `observe` of every other replica's queue heads; `onMalformed` of each message dropped. */
  listen(observe: (pool: PoolRef, router: string, head: QueueHead) => void, onMalformed: () => void = () => {}): Subscription {
    return this.channel.listen(ALL_QUEUE_HEADS, parse, (m) => observe(m.pool, m.router, m.head), onMalformed);
  }

  /** Announces this replica's heads of `pool`'s queue (lost when closing: the other replicas' copy expires). */
  announce(pool: PoolRef, head: QueueHead): void {
    this.channel.publish(queueHeadsSubject(pool), head);
  }
}

/**
 * @module The router replicas' capacity-queue heads: each replica publishes
 * when its oldest request waiting for a sequence of a pool changes, on the
 * pool's subject `interlace.queueheads.<namespace>.<pool>` (core NATS, no
 * stream), so every replica places a pool's queued requests in one arrival
 * order. Here, not in the router, because the NATS permissions grant it to
 * the router identity (common/src/security/nats-permissions.ts).
 */
import { encodeToken, type PoolRef } from "./subjects.js";

export const QUEUE_HEADS_PREFIX = "interlace.queueheads";

/** `interlace.queueheads.<ns>.<pool>` */
export function queueHeadsSubject(pool: PoolRef): string {
  return `${QUEUE_HEADS_PREFIX}.${encodeToken(pool.namespace)}.${encodeToken(pool.name)}`;
}

/** Every pool's queue heads (a router replica places on all pools). */
export const ALL_QUEUE_HEADS = `${QUEUE_HEADS_PREFIX}.>`;

/**
 * @module The router replicas' shared arrival counts for hot-prefix warming:
 * each replica publishes every app session it places on its pool's subject
 * `interlace.warmarrivals.<namespace>.<pool>` (core NATS, no stream), so
 * every replica counts an app's arrivals over the whole front door. Here,
 * not in the router, because the NATS permissions grant it to the router
 * identity (common/src/security/nats-permissions.ts).
 */
import { encodeToken, type PoolRef } from "./subjects.js";

export const WARM_ARRIVALS_PREFIX = "interlace.warmarrivals";

/** `interlace.warmarrivals.<ns>.<pool>` */
export function warmArrivalsSubject(pool: PoolRef): string {
  return `${WARM_ARRIVALS_PREFIX}.${encodeToken(pool.namespace)}.${encodeToken(pool.name)}`;
}

/** Every pool's arrivals (a router replica places on all pools). */
export const ALL_WARM_ARRIVALS = `${WARM_ARRIVALS_PREFIX}.>`;

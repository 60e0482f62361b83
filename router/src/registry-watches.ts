/**
 * @module The two views every front door (the router, the endpoint picker)
 * places from: the AgentApp configs (`interlace-apps`) and the engine
 * heartbeats (`interlace-engines`), each watched into its registry for as
 * long as the process runs, and every front door's placements in flight
 * (`interlace-reservations`, shared-reservations.ts). Resolves once the
 * buckets' current values are applied, so a front door never places from an
 * empty view.
 */
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "../../common/src/index.js";
import { openAppsBucket, openEnginesBucket, openReservationsBucket } from "../../common/src/protocol/index.js";
import type { AppRegistry } from "./app-registry.js";
import type { EngineRegistry } from "./engine-registry.js";
import { KvWatch } from "./kv-watch.js";
import { SharedReservations, type ReservationWrite, type ReservationWriteOutcome } from "./shared-reservations.js";

/** How long a reservation counts at most when its holder never ends it (it died): the heartbeats count its session by then. */
export const RESERVATION_TTL_MS = 15_000;

/** Starts both watches (pushed onto `watches` at once, so a failed start can still stop them) and the engines' staleness sweep. */
export async function watchAppsAndEngines(
  nc: NatsConnection,
  registries: { apps: AppRegistry; engines: EngineRegistry },
  watches: KvWatch[],
  log: Logger,
  onReservationWrite?: (write: ReservationWrite, outcome: ReservationWriteOutcome) => void,
): Promise<void> {
  const [appsKv, enginesKv, reservationsKv] = await Promise.all([openAppsBucket(nc), openEnginesBucket(nc), openReservationsBucket(nc)]);
  const { engines } = registries;
  const reservations = new SharedReservations({
    kv: reservationsKv,
    ttlMs: RESERVATION_TTL_MS,
    log,
    heartbeatSeenAt: (ns, pool, pod) => engines.heartbeatSeenAt(ns, pool, pod),
    ...(onReservationWrite !== undefined ? { onWrite: onReservationWrite } : {}),
  });
  const appWatch = new KvWatch(appsKv, (e) => registries.apps.apply(e), log);
  const engineWatch = new KvWatch(enginesKv, (e) => engines.apply(e), log);
  const reservationWatch = new KvWatch(reservationsKv, (e) => reservations.apply(e), log);
  watches.push(appWatch, engineWatch, reservationWatch);
  await Promise.all([appWatch.start(), engineWatch.start(), reservationWatch.start()]);
  await Promise.all([appWatch.loaded, engineWatch.loaded, reservationWatch.loaded]);
  engines.shareReservations(reservations);
  registries.engines.startSweeping();
}

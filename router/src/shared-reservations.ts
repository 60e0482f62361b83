/**
 * @module Placement reservations every front door sees. A placement counts
 * against its engine from the moment it is chosen until that engine's
 * heartbeat shows it; between two heartbeats, a burst split across router
 * replicas (and the endpoint picker) must see each other's placements, or
 * each fills the engine it likes up to the CHWBL bound on its own.
 *
 * One key per EnginePool in `interlace-reservations` holds every front
 * door's live reservations on that pool's engines, written by
 * compare-and-set on the key's revision: a placement is decided on the pool
 * as this process knows it at revision r, and its reservation is written
 * only if the key is still at r. A front door that lost the race refreshes
 * the key and places again, so two replicas can never both take an engine's
 * last slot under the bound. (A per-router key on a core NATS subject would
 * cost no round trip but still lets two placements in the same millisecond
 * overfill; the CAS costs one JetStream round trip per placement, and
 * placements of one pool are serialised within each process so they do not
 * race each other.) Watching the bucket keeps every process's copy current.
 *
 * A placement costs two writes at most: its reservation, and its release.
 * The holder releases it when the request is refused, when its work is over
 * (a completion answered), or when a heartbeat of its engine counts the
 * session ({@link heartbeatShows}: its admission counter reached the count
 * the engine answered the request with; from an engine that sends none, a
 * heartbeat arriving more than {@link REFLECTED_AFTER_MS} after the engine
 * took it): one write then releases every reservation of the
 * holder that the heartbeat shows. No front door stops counting a
 * reservation on its own reading of a heartbeat, so a replica whose
 * heartbeat watch lags never drops a placement its view does not show yet;
 * until the release arrives, the session counts twice for the others (an
 * engine looks fuller, never emptier), while the holder stops counting it
 * at once and the pool's next write, a placement's or the release's,
 * drops it from the bucket. Otherwise a reservation ends `ttlMs` after this
 * process first saw it (its holder died: the heartbeats count its session by
 * then), judged by each process's own clock (pods' clocks may differ); an
 * engine that left is not placed on, so its reservations no longer count.
 * Each write drops what has ended.
 */
import { randomUUID } from "node:crypto";
import type { KV, KvWatchEntry } from "@nats-io/kv";
import type { Logger } from "../../common/src/index.js";
import { parseReservations, reservationsKey, type PlacementReservation } from "../../common/src/protocol/index.js";
import { entryJson } from "./kv-watch.js";
import { isRevisionConflict } from "./programs/program-replica.js";

/** From an engine without an admission counter, a heartbeat arriving this long after it took a request is taken to count it (here and in the local accounting, engine-registry.ts). */
export const REFLECTED_AFTER_MS = 50;

/** A request the engine took: when this process learnt it, and the engine's admission count in its answer (absent: the engine sends none). */
export interface Taken {
  at: number;
  admission?: number;
}

/**
 * Whether a heartbeat of the engine (received at `seenAt`, with its
 * `admissions` counter) counts a request it took: by the counter when both
 * sides carry one (a heartbeat published before the admission does not,
 * however late it arrives; one at or after it does, however soon), else by
 * timing, a heartbeat arriving {@link REFLECTED_AFTER_MS} after.
 */
export function heartbeatShows(taken: Taken, heartbeat: { seenAt: number; admissions?: number }): boolean {
  if (taken.admission !== undefined && heartbeat.admissions !== undefined) return heartbeat.admissions >= taken.admission;
  return heartbeat.seenAt > taken.at + REFLECTED_AFTER_MS;
}

/** Which write a KV put was, and whether it was written or lost a compare-and-set (the metric's labels). */
export type ReservationWrite = "reserve" | "release";
export type ReservationWriteOutcome = "written" | "conflict";

interface PoolState {
  /** The key's last revision (0: no value). */
  revision: number;
  held: PlacementReservation[];
}

/** When this process first saw a reservation, and first saw it confirmed by a holder of an earlier release (its own clock). */
interface Seen {
  at: number;
  confirmedAt?: number;
}

/** One of this process's own reservations. */
interface Mine {
  namespace: string;
  pool: string;
  pod: string;
  at: number;
  /** When the engine took the request, and its admission count (the heartbeat that shows it releases it). */
  taken?: Taken;
}

export interface SharedReservationsOptions {
  kv: KV;
  /** How long a reservation counts at most (its holder may have died). */
  ttlMs: number;
  log: Logger;
  /** When this process last received a heartbeat of the engine (undefined: the engine is gone). */
  heartbeatSeenAt(namespace: string, pool: string, pod: string): number | undefined;
  /** Told of every KV write (a metric: writes per placement). */
  onWrite?: (write: ReservationWrite, outcome: ReservationWriteOutcome) => void;
  now?: () => number;
}

export class SharedReservations {
  /** This process's name in the bucket. */
  readonly holder = randomUUID();
  private readonly pools = new Map<string, PoolState>();
  private readonly seen = new Map<string, Seen>();
  /** This process's reservations not yet released, by id. */
  private readonly mine = new Map<string, Mine>();
  /** Its released ones still in the bucket: no longer counted here, and dropped by the next write of their pool (whoever's it is). */
  private readonly releasing = new Set<string>();
  /** Per pool key: the tail of this process's chain of writes. */
  private readonly queues = new Map<string, Promise<unknown>>();
  private readonly now: () => number;

  constructor(private readonly options: SharedReservationsOptions) {
    this.now = options.now ?? Date.now;
  }

  /** Applies one entry of the bucket's watch. */
  apply(entry: KvWatchEntry): void {
    const held = entry.operation === "PUT" ? parseReservations(entryJson(entry)) : [];
    if (held === null) {
      this.options.log.warn({ key: entry.key }, "malformed reservations ignored");
      return;
    }
    this.set(entry.key, entry.revision, held);
  }

  private set(key: string, revision: number, held: PlacementReservation[]): void {
    const state = this.pools.get(key);
    if (state !== undefined && state.revision >= revision && revision !== 0) return;
    this.pools.set(key, { revision, held });
    const now = this.now();
    for (const r of held) {
      let s = this.seen.get(r.id);
      if (s === undefined) this.seen.set(r.id, (s = { at: now }));
      if (r.confirmed === true) s.confirmedAt ??= now;
    }
    this.forgetUnheld();
  }

  private forgetUnheld(): void {
    if (this.seen.size < 256) return;
    const live = new Set([...this.pools.values()].flatMap((p) => p.held.map((r) => r.id)));
    for (const id of this.seen.keys()) if (!live.has(id)) this.seen.delete(id);
  }

  /**
   * Over: past its TTL (or, written confirmed by a front door of an earlier
   * release that never releases it, shown by a later heartbeat). An engine
   * this process has no heartbeat of is not counted, but its reservations
   * are kept: another front door may have seen it first.
   */
  private ended(namespace: string, pool: string, r: PlacementReservation, now: number): boolean {
    const seen = this.seen.get(r.id);
    if (seen === undefined || now - seen.at > this.options.ttlMs || this.releasing.has(r.id)) return true;
    const heartbeat = this.options.heartbeatSeenAt(namespace, pool, r.pod);
    return seen.confirmedAt !== undefined && heartbeat !== undefined && heartbeat > seen.confirmedAt + REFLECTED_AFTER_MS;
  }

  /** Live reservations on `pod` by every front door (this one included). */
  count(namespace: string, pool: string, pod: string): number {
    const now = this.now();
    const held = this.pools.get(reservationsKey(namespace, pool))?.held ?? [];
    let n = 0;
    for (const r of held) if (r.pod === pod && !this.ended(namespace, pool, r, now)) n++;
    return n;
  }

  /** Runs `fn` after this process's earlier placements and writes on the pool (their reservations are in the view `fn` places from). */
  exclusive<T>(namespace: string, pool: string, fn: () => Promise<T>): Promise<T> {
    const key = reservationsKey(namespace, pool);
    const run = (this.queues.get(key) ?? Promise.resolve()).then(fn);
    const tail = run.catch(() => undefined);
    this.queues.set(key, tail);
    void tail.then(() => {
      if (this.queues.get(key) === tail) this.queues.delete(key);
    });
    return run;
  }

  /**
   * Writes `change` of the pool's reservations if the key is still at the
   * revision this process knows (what its placement saw). False when another
   * front door wrote first: the copy is refreshed, and the caller places again.
   */
  private async write(namespace: string, pool: string, kind: ReservationWrite, change: (held: PlacementReservation[]) => PlacementReservation[]): Promise<boolean> {
    const key = reservationsKey(namespace, pool);
    const state = this.pools.get(key) ?? { revision: 0, held: [] };
    const now = this.now();
    const held = change(state.held.filter((r) => !this.ended(namespace, pool, r, now)));
    try {
      const revision = await this.options.kv.put(key, JSON.stringify({ held }), { previousSeq: state.revision });
      this.options.onWrite?.(kind, "written");
      this.set(key, revision, held);
      return true;
    } catch (err) {
      if (!isRevisionConflict(err)) throw err;
      this.options.onWrite?.(kind, "conflict");
      const latest = await this.options.kv.get(key);
      if (latest === null) this.pools.set(key, { revision: 0, held: [] });
      else this.set(key, latest.revision, latest.operation === "PUT" ? (parseReservations(entryJson(latest as unknown as KvWatchEntry)) ?? []) : []);
      return false;
    }
  }

  /**
   * Reserves a slot on `pod` if no other front door changed the pool since
   * this process's copy (call inside {@link exclusive}, after placing from
   * that copy). Null: the copy was stale and is refreshed now; place again.
   */
  async reserve(namespace: string, pool: string, pod: string): Promise<string | null> {
    const id = randomUUID();
    const written = await this.write(namespace, pool, "reserve", (held) => [...held, { id, holder: this.holder, pod }]);
    if (written) this.mine.set(id, { namespace, pool, pod, at: this.now() });
    return written ? id : null;
  }

  /** The engine took the request (`admission`: the count it answered with): the first heartbeat that shows it releases the reservation (no write now). */
  confirm(id: string, admission?: number): void {
    const mine = this.mine.get(id);
    if (mine !== undefined) mine.taken ??= { at: this.now(), ...(admission !== undefined ? { admission } : {}) };
  }

  /** Drops a reservation (refused, or its work is over); resolves once written (never rejects). */
  release(id: string): Promise<void> {
    const mine = this.mine.get(id);
    if (mine === undefined) return Promise.resolve();
    this.mine.delete(id);
    return this.drop(mine.namespace, mine.pool, [id]);
  }

  /**
   * A heartbeat of `pod` arrived at `seenAt` (with the engine's admission
   * counter, when it sends one): this process's reservations on it that the
   * heartbeat shows are in its figures now, and are released together, in
   * one write.
   */
  heartbeat(namespace: string, pool: string, pod: string, seenAt: number, admissions?: number): void {
    const beat = { seenAt, ...(admissions !== undefined ? { admissions } : {}) };
    const shown: string[] = [];
    const now = this.now();
    for (const [id, m] of this.mine) {
      // Past its TTL every front door has stopped counting it, and the next write drops it.
      if (now - m.at > this.options.ttlMs) this.mine.delete(id);
      else if (m.namespace === namespace && m.pool === pool && m.pod === pod && m.taken !== undefined && heartbeatShows(m.taken, beat)) shown.push(id);
    }
    if (shown.length === 0) return;
    for (const id of shown) this.mine.delete(id);
    void this.drop(namespace, pool, shown);
  }

  /**
   * Removes reservations: at once from this process's count, and from the
   * bucket by the next write of the pool (a placement queued before this one
   * carries it), retried on conflicts (it needs no fresh placement); never rejects.
   */
  private drop(namespace: string, pool: string, ids: string[]): Promise<void> {
    const gone = new Set(ids);
    for (const id of ids) this.releasing.add(id);
    return this.exclusive(namespace, pool, async () => {
      for (let attempt = 0; attempt < 20; attempt++) {
        if (!(this.pools.get(reservationsKey(namespace, pool))?.held ?? []).some((r) => gone.has(r.id))) return;
        if (await this.write(namespace, pool, "release", (held) => held.filter((r) => !gone.has(r.id)))) return;
      }
      this.options.log.warn({ namespace, pool, reservations: ids }, "reservations not released after 20 conflicting writes; they expire by TTL");
    })
      .catch((err: unknown) => this.options.log.warn({ err, namespace, pool }, "cannot release placement reservations; they expire by TTL"))
      .finally(() => {
        for (const id of ids) this.releasing.delete(id);
      });
  }
}

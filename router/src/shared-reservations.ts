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
 * Each process judges liveness by its own clock (pods' clocks may differ):
 * a reservation ends when it is released, when a heartbeat of its engine
 * arrives more than {@link REFLECTED_AFTER_MS} after the reservation was
 * seen confirmed (the heartbeat counts the session now), or `ttlMs` after
 * it was first seen (its holder died); an engine that left is not placed
 * on, so its reservations no longer count. Each write drops what has ended.
 */
import { randomUUID } from "node:crypto";
import type { KV, KvWatchEntry } from "@nats-io/kv";
import type { Logger } from "../../common/src/index.js";
import { parseReservations, reservationsKey, type PlacementReservation } from "../../common/src/protocol/index.js";
import { entryJson } from "./kv-watch.js";
import { isRevisionConflict } from "./programs/program-replica.js";

/** A heartbeat arriving this long after a confirmation is taken to count the session (as the local accounting did). */
export const REFLECTED_AFTER_MS = 50;

interface PoolState {
  /** The key's last revision (0: no value). */
  revision: number;
  held: PlacementReservation[];
}

/** When this process first saw a reservation, and first saw it confirmed (its own clock). */
interface Seen {
  at: number;
  confirmedAt?: number;
}

export interface SharedReservationsOptions {
  kv: KV;
  /** How long a reservation counts at most (its holder may have died). */
  ttlMs: number;
  log: Logger;
  /** When this process last received a heartbeat of the engine (undefined: the engine is gone). */
  heartbeatSeenAt(namespace: string, pool: string, pod: string): number | undefined;
  now?: () => number;
}

export class SharedReservations {
  /** This process's name in the bucket. */
  readonly holder = randomUUID();
  private readonly pools = new Map<string, PoolState>();
  private readonly seen = new Map<string, Seen>();
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
   * Over: past its TTL, or confirmed and shown by a later heartbeat. (An
   * engine this process has no heartbeat of is not counted, but its
   * reservations are kept: another front door may have seen it first.)
   */
  private ended(namespace: string, pool: string, r: PlacementReservation, now: number): boolean {
    const seen = this.seen.get(r.id);
    if (seen === undefined || now - seen.at > this.options.ttlMs) return true;
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
  private async write(namespace: string, pool: string, change: (held: PlacementReservation[]) => PlacementReservation[]): Promise<boolean> {
    const key = reservationsKey(namespace, pool);
    const state = this.pools.get(key) ?? { revision: 0, held: [] };
    const now = this.now();
    const held = change(state.held.filter((r) => !this.ended(namespace, pool, r, now)));
    try {
      const revision = await this.options.kv.put(key, JSON.stringify({ held }), { previousSeq: state.revision });
      this.set(key, revision, held);
      return true;
    } catch (err) {
      if (!isRevisionConflict(err)) throw err;
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
    const written = await this.write(namespace, pool, (held) => [...held, { id, holder: this.holder, pod }]);
    return written ? id : null;
  }

  /** Marks a reservation confirmed (the engine took the request), in the background. */
  confirm(namespace: string, pool: string, id: string): void {
    void this.background(namespace, pool, (held) => held.map((r) => (r.id === id ? { ...r, confirmed: true } : r)), id);
  }

  /** Drops a reservation (refused, or its work is over); resolves once written (never rejects). */
  release(namespace: string, pool: string, id: string): Promise<void> {
    return this.background(namespace, pool, (held) => held.filter((r) => r.id !== id), id);
  }

  /** A write retried on conflicts (it needs no fresh placement), queued behind this process's placements; never rejects. */
  private background(namespace: string, pool: string, change: (held: PlacementReservation[]) => PlacementReservation[], id: string): Promise<void> {
    return this.exclusive(namespace, pool, async () => {
      for (let attempt = 0; attempt < 20; attempt++) {
        if (!(this.pools.get(reservationsKey(namespace, pool))?.held ?? []).some((r) => r.id === id)) return;
        if (await this.write(namespace, pool, change)) return;
      }
      this.options.log.warn({ namespace, pool, reservation: id }, "reservation not updated after 20 conflicting writes; it expires by TTL");
    }).catch((err: unknown) => this.options.log.warn({ err, namespace, pool }, "cannot update a placement reservation; it expires by TTL"));
  }
}

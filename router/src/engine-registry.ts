/**
 * @module The engines this router can place on, from the `interlace-engines`
 * heartbeats: each engine's last heartbeat and when this router received it
 * (staleness is timed by arrival, so clock skew between pods does not
 * matter), plus this router's own placements that the engine's heartbeat
 * does not show yet (so a burst of arrivals between two heartbeats does not
 * all land on one engine; with shared reservations, every front door's
 * placements: shared-reservations.ts). An engine not refreshed within the TTL, or whose
 * key is deleted, is gone: listeners hear it, so open streams to it end.
 * Which blocks each engine holds is the prefix index's to say: the registry
 * tells it of heartbeats and departures and hands its answer to placement.
 */
import type { KvWatchEntry } from "@nats-io/kv";
import { entryJson } from "./kv-watch.js";
import type { Logger } from "../../common/src/index.js";
import { parseEngineHeartbeat, parseEngineKey, type EngineHeartbeat } from "../../common/src/protocol/index.js";
import type { EngineLoad } from "./placement.js";
import { HeartbeatPrefixIndex } from "./heartbeat-prefix-index.js";
import type { PrefixIndex } from "./prefix-index.js";
import { heartbeatShows, type SharedReservations, type Taken } from "./shared-reservations.js";

/**
 * A placement counted against its engine while it is sent; `confirm` (the
 * engine took it) keeps it counted until a heartbeat shows it, `release`
 * (refused, or never answered) drops it and does nothing once confirmed,
 * and `finish` (its work is over already: a completion answered) stops
 * counting it without waiting for a heartbeat.
 */
export interface Reservation {
  /** `admission`: the engine's admission count in its answer (ADMISSION_HEADER), when it sent one. */
  confirm(admission?: number): void;
  release(): void;
  /** Resolves once every front door can see it (never rejects). */
  finish(): Promise<void>;
}

export const NO_RESERVATION: Reservation = { confirm: () => undefined, release: () => undefined, finish: () => Promise.resolve() };

interface EngineRecord {
  heartbeat: EngineHeartbeat;
  /** Local arrival time of the last heartbeat (ms, monotonic enough: Date.now()). */
  seenAt: number;
  /** Placements made here that the engine took and no heartbeat counts yet: when, and the admission count it answered with. */
  pending: Taken[];
  /** Placements of this router being sent to the engine now. */
  sending: number;
}

export interface EngineRegistryOptions {
  ttlMs: number;
  log: Logger;
  now?: () => number;
  /** Where placement learns engines' blocks (default: their heartbeats). */
  prefixIndex?: PrefixIndex;
  /** Told of each heartbeat dropped as malformed (a metric). */
  onMalformed?: () => void;
}

function poolKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

export class EngineRegistry {
  /** pool key → pod → record. */
  private readonly pools = new Map<string, Map<string, EngineRecord>>();
  private readonly goneListeners = new Set<(pod: string, reason: string) => void>();
  private readonly readyListeners = new Set<(pool: { namespace: string; name: string }, pod: string) => void>();
  /** pool key → callers waiting for its next heartbeat (placements holding for a full engine). */
  private readonly waiters = new Map<string, Set<() => void>>();
  private sweeper: NodeJS.Timeout | undefined;
  private readonly now: () => number;
  readonly prefixIndex: PrefixIndex;
  /** Every front door's placements in flight (absent: this process's only). */
  private shared: SharedReservations | undefined;

  constructor(private readonly options: EngineRegistryOptions) {
    this.now = options.now ?? Date.now;
    this.prefixIndex = options.prefixIndex ?? new HeartbeatPrefixIndex();
  }

  /** Counts every front door's reservations from now on, instead of this process's alone. */
  shareReservations(shared: SharedReservations): void {
    this.shared = shared;
  }

  /** When this process last received a heartbeat of `pod` (undefined: not a known engine). */
  heartbeatSeenAt(namespace: string, pool: string, pod: string): number | undefined {
    return this.pools.get(poolKey(namespace, pool))?.get(pod)?.seenAt;
  }

  /** Starts the periodic sweep that drops stale engines (and tells listeners). */
  startSweeping(): void {
    this.sweeper = setInterval(() => this.sweep(), Math.max(100, Math.floor(this.options.ttlMs / 4)));
    this.sweeper.unref();
  }

  stop(): void {
    clearInterval(this.sweeper);
  }

  /**
   * Applies one KV entry of the heartbeat bucket. A value from the initial
   * load counts from when it was written (a dead engine's last value must not
   * look fresh to a router that just started); an update, from its arrival.
   */
  apply(entry: KvWatchEntry): void {
    const key = parseEngineKey(entry.key);
    if (key === null) return;
    const pk = poolKey(key.pool.namespace, key.pool.name);
    if (entry.operation !== "PUT") {
      this.remove(pk, key.pod, "its heartbeat was withdrawn (engine stopped)");
      return;
    }
    const parsed = parseEngineHeartbeat(entryJson(entry));
    if (!parsed.ok) {
      this.options.log.warn({ key: entry.key, reason: parsed.reason }, "malformed engine heartbeat ignored");
      this.options.onMalformed?.();
      return;
    }
    this.update(parsed.value, entry.isUpdate ? undefined : Math.min(this.now(), entry.created.getTime()));
  }

  /** Records a heartbeat (as received now, or at `seenAt`). */
  update(heartbeat: EngineHeartbeat, seenAt?: number): void {
    const pk = poolKey(heartbeat.pool.namespace, heartbeat.pool.name);
    let pool = this.pools.get(pk);
    if (pool === undefined) this.pools.set(pk, (pool = new Map()));
    const now = this.now();
    const previous = pool.get(heartbeat.pod);
    // Placements this heartbeat counts are in its figures now: by the engine's admission counter, or (an engine without one) by timing.
    const beat = { seenAt: now, ...(heartbeat.admissions !== undefined ? { admissions: heartbeat.admissions } : {}) };
    const pending = (previous?.pending ?? []).filter((taken) => !heartbeatShows(taken, beat));
    pool.set(heartbeat.pod, { heartbeat, seenAt: seenAt ?? now, pending, sending: previous?.sending ?? 0 });
    this.shared?.heartbeat(heartbeat.pool.namespace, heartbeat.pool.name, heartbeat.pod, seenAt ?? now, heartbeat.admissions);
    this.prefixIndex.heartbeat(pk, heartbeat);
    // A new engine, or one that was starting or draining: it takes sessions from now on.
    if (heartbeat.ready && previous?.heartbeat.ready !== true) for (const l of this.readyListeners) l(heartbeat.pool, heartbeat.pod);
    this.wake(pk);
  }

  /** Wakes a pool's waiters, oldest first (each re-places before the next runs). */
  private wake(pk: string): void {
    const waiting = this.waiters.get(pk);
    if (waiting === undefined) return;
    this.waiters.delete(pk);
    for (const w of waiting) w();
  }

  /**
   * Resolves at the pool's next heartbeat (or engine leaving), after
   * `timeoutMs`, or when `signal` aborts — whichever is first. Never rejects.
   */
  changed(namespace: string, pool: string, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    const pk = poolKey(namespace, pool);
    return new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", done);
        this.waiters.get(pk)?.delete(done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, timeoutMs));
      signal?.addEventListener("abort", done, { once: true });
      let set = this.waiters.get(pk);
      if (set === undefined) this.waiters.set(pk, (set = new Set()));
      set.add(done);
    });
  }

  private remove(pk: string, pod: string, reason: string): void {
    const pool = this.pools.get(pk);
    if (pool?.delete(pod)) {
      this.prefixIndex.forget(pk, pod);
      this.options.log.info({ pod, pool: pk, reason }, "engine left placement");
      for (const l of this.goneListeners) l(pod, reason);
      this.wake(pk);
    }
  }

  /** Drops engines whose heartbeat is older than the TTL. */
  sweep(): void {
    const now = this.now();
    for (const [pk, pool] of this.pools) {
      for (const [pod, r] of pool) {
        if (now - r.seenAt > this.options.ttlMs) this.remove(pk, pod, `no heartbeat for ${now - r.seenAt} ms (TTL ${this.options.ttlMs} ms)`);
      }
    }
  }

  onGone(listener: (pod: string, reason: string) => void): () => void {
    this.goneListeners.add(listener);
    return () => this.goneListeners.delete(listener);
  }

  /** Hears an engine become ready for placement: its first ready heartbeat this router receives (a new pod, or one that was not ready). */
  onReady(listener: (pool: { namespace: string; name: string }, pod: string) => void): () => void {
    this.readyListeners.add(listener);
    return () => this.readyListeners.delete(listener);
  }

  private fresh(pk: string): EngineRecord[] {
    const now = this.now();
    return [...(this.pools.get(pk)?.values() ?? [])].filter((r) => now - r.seenAt <= this.options.ttlMs);
  }

  /** Ready engines of a pool, as placement sees them. */
  loads(namespace: string, pool: string): EngineLoad[] {
    const pk = poolKey(namespace, pool);
    return this.fresh(pk)
      .filter((r) => r.heartbeat.ready)
      .map((r) => {
        const h = r.heartbeat;
        const busy = h.totalSequences - h.freeSequences;
        const reserved = this.shared?.count(namespace, pool, h.pod) ?? r.pending.length + r.sending;
        return {
          pod: h.pod,
          load: busy + h.queuedSessions + reserved,
          capacity: h.totalSequences,
          // A sequence a paused session would give up is one a session may be sent to (the engine admits it by eviction).
          free: h.freeSequences + (h.reclaimableSequences ?? 0) - reserved,
          blocks: this.prefixIndex.blocks(pk, h.pod),
        };
      });
  }

  /** Fresh engines of a pool (ready, draining, or neither: loading) for 503 reasons and status. */
  describe(namespace: string, pool: string): { ready: number; draining: number; total: number } {
    const all = this.fresh(poolKey(namespace, pool));
    return { ready: all.filter((r) => r.heartbeat.ready).length, draining: all.filter((r) => r.heartbeat.draining === true).length, total: all.length };
  }

  /** The heartbeat of a pod in a namespace (any pool), when fresh. */
  find(namespace: string, pod: string): EngineHeartbeat | undefined {
    for (const [pk, pool] of this.pools) {
      if (!pk.startsWith(`${namespace}/`)) continue;
      const r = pool.get(pod);
      if (r !== undefined && this.now() - r.seenAt <= this.options.ttlMs) return r.heartbeat;
    }
    return undefined;
  }

  /**
   * Runs a placement of the pool and its reservation: with shared
   * reservations, after this process's earlier ones on the pool, so each
   * places from a view that counts the others.
   */
  exclusive<T>(namespace: string, pool: string, fn: () => Promise<T>): Promise<T> {
    return this.shared?.exclusive(namespace, pool, fn) ?? fn();
  }

  /**
   * Counts a placement on `pod` while it is sent, so requests placed
   * meanwhile see the sequence taken. `confirm` (the engine took it, with
   * the admission count it answered with) keeps counting it until a
   * heartbeat shows it (heartbeatShows, the shared reservations' rule: the
   * engine's admission counter, or timing for an engine without one);
   * `release` (refused) drops it.
   * With shared reservations, the placement must have been made from the
   * current shared view (call inside {@link exclusive}): null when another
   * front door reserved meanwhile, so the caller places again. `current:
   * false` (a retry down the order after a refusal) writes it regardless.
   */
  async reserve(namespace: string, pool: string, pod: string, current = true): Promise<Reservation | null> {
    const shared = this.shared;
    if (shared !== undefined) {
      for (let attempt = 0; ; attempt++) {
        let id: string | null;
        try {
          id = await shared.reserve(namespace, pool, pod);
        } catch (err) {
          // NATS unreachable: place on this process's view rather than fail the request (the heartbeats are going stale too).
          this.options.log.warn({ err, pod }, "cannot write a shared placement reservation; placing without it");
          return NO_RESERVATION;
        }
        if (id !== null) {
          let taken = false;
          return {
            confirm: (admission?: number) => {
              taken = true;
              shared.confirm(id, admission);
            },
            // Once taken, the engine's heartbeat releases it (a stream closing after the answer is no refusal).
            release: () => void (taken ? undefined : shared.release(id)),
            finish: () => shared.release(id),
          };
        }
        if (current || attempt >= 10) return current ? null : NO_RESERVATION;
      }
    }
    // Looked up each time: a heartbeat replaces the record meanwhile.
    const record = (): EngineRecord | undefined => this.pools.get(poolKey(namespace, pool))?.get(pod);
    const r = record();
    if (r === undefined) return NO_RESERVATION;
    r.sending++;
    let open = true;
    const end = (): EngineRecord | undefined => {
      if (!open) return undefined;
      open = false;
      const now = record();
      if (now !== undefined) now.sending = Math.max(0, now.sending - 1);
      return now;
    };
    let taken: Taken | undefined;
    let finished = false;
    return {
      confirm: (admission?: number) => {
        const sent = end();
        if (sent === undefined) return;
        taken = { at: this.now(), ...(admission !== undefined ? { admission } : {}) };
        sent.pending.push(taken);
      },
      release: () => void end(),
      finish: () => {
        end();
        if (finished) return Promise.resolve();
        finished = true;
        const pending = record()?.pending;
        const i = taken === undefined ? -1 : (pending?.indexOf(taken) ?? -1);
        if (i >= 0) pending!.splice(i, 1);
        return Promise.resolve();
      },
    };
  }

  /** Engines with a fresh heartbeat, by pool key (for the gauge). */
  counts(): Map<string, number> {
    const out = new Map<string, number>();
    for (const pk of this.pools.keys()) out.set(pk, this.fresh(pk).length);
    return out;
  }
}

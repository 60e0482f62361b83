/**
 * @module The capacity queue: when every ready engine of an app's EnginePool
 * has all its sequences held, the app's requests wait here, in arrival order
 * per pool, instead of going back to the client as a 429 at once. Clients
 * that retry on 429 (the OpenAI SDKs do, after backoff) retry in no order,
 * so under load some wait far longer than their turn, and each retry lands
 * up to a `Retry-After` after the sequence freed. Here each heartbeat of the
 * pool (a session ended, a sequence freed) wakes the queue, the oldest
 * request places first, and a request that arrives while others wait
 * queues behind them rather than taking a sequence that frees before their
 * turn. Bounded: past `timeoutMs` in the queue, or with `maxQueued` already
 * waiting, the request gets 429 `capacity` with `Retry-After`. Each router
 * replica keeps its own queue, and with the replicas' heads shared
 * (queue-heads.ts) a request also waits behind another replica's older one,
 * so the replicas place queued requests in one arrival order. The counts go
 * into the replica's presence, where the operator's autoscaler reads them
 * as sessions waiting for a sequence.
 */
import { ErrorCode } from "../../common/src/index.js";
import type { EngineRegistry } from "./engine-registry.js";
import { HttpError } from "./errors.js";
import type { RouterMetrics } from "./metrics.js";
import { HEAD_REFRESH_MS, HEAD_TTL_MS } from "./queue-heads.js";

export interface CapacityQueueOptions {
  engines: EngineRegistry;
  metrics: RouterMetrics;
  /** Most requests queued at once per EnginePool; one more is refused at once (0: none is queued). */
  maxQueued: number;
  /** How long a request may wait for a free sequence, from when it joined (0: none is queued). */
  timeoutMs: number;
  retryAfterSeconds: number;
}

type Pool = { readonly namespace: string; readonly name: string };

/**
 * `waiting` for a free sequence, `placing` (a reservation and the POST in
 * flight), or `holding` for the one engine holding its prefix (the router's
 * prefix wait). Waiting and placing hold back the requests behind it, so
 * the oldest takes a freed sequence first; holding holds back only the
 * requests that would take that engine: holding back all would stall the
 * whole queue behind one engine.
 */
export type TicketState = "waiting" | "placing" | "holding";

/** A replica's heads of one pool's queue: its oldest request waiting for any sequence, and per engine its oldest holding for that one (epoch ms). */
export interface QueueHead {
  oldest: number | null;
  holding?: Record<string, number>;
}

/** Where a replica's queue heads go to the other replicas (queue-heads.ts). */
export interface QueueHeadsLink {
  announce(pool: Pool, head: QueueHead): void;
}

/** A request's place in its pool's queue. */
export class QueueTicket {
  private current: TicketState = "waiting";
  private engine: string | undefined;
  readonly joinedAt = performance.now();
  /** When it joined, in epoch ms: compared with other replicas' heads. */
  readonly joinedAtEpoch = Date.now();

  constructor(
    readonly key: string,
    readonly deadline: number,
    private readonly changed: () => void = () => {},
  ) {}

  get state(): TicketState {
    return this.current;
  }

  /** The engine it holds for (holding only). */
  get holdFor(): string | undefined {
    return this.engine;
  }

  /** Moves to `state` (`holdFor`: the engine, when holding). */
  set(state: TicketState, holdFor?: string): void {
    const engine = state === "holding" ? holdFor : undefined;
    if (state === this.current && engine === this.engine) return;
    this.current = state;
    this.engine = engine;
    this.changed();
  }

  /** Whether it holds back a request behind it that would take `target` (any engine: undefined). */
  blocks(target?: string): boolean {
    return this.current !== "holding" || (target !== undefined && this.engine === target);
  }
}

export type QueueOutcome = "placed" | "timeout" | "aborted" | "failed";

export class CapacityQueue {
  /** Pool key (`ns/name`) → tickets, oldest first. */
  private readonly queues = new Map<string, QueueTicket[]>();
  /** Pool key → the waits to end early when a ticket leaves (the ones behind it may place now). */
  private readonly nudges = new Map<string, Set<() => void>>();
  /** Pool key → other replica → its heads and until when they hold. */
  private readonly remote = new Map<string, Map<string, QueueHead & { until: number }>>();
  /** Pool key → this replica's heads as last announced (absent: none), and the pool. */
  private readonly announced = new Map<string, { pool: Pool; head: QueueHead; text: string }>();
  private heads: QueueHeadsLink | undefined;
  private refresh: NodeJS.Timeout | undefined;

  constructor(private readonly options: CapacityQueueOptions) {}

  /** Shares this replica's heads with the other replicas (and repeats them while they stand). */
  shareHeads(link: QueueHeadsLink): void {
    this.heads = link;
    this.refresh = setInterval(() => {
      for (const { pool, head } of this.announced.values()) link.announce(pool, head);
    }, HEAD_REFRESH_MS);
    this.refresh.unref();
  }

  /** Another replica's heads of `pool`'s queue: this replica's requests behind them wait. */
  observeRemote(pool: Pool, router: string, head: QueueHead): void {
    const k = key(pool);
    const heads = this.remote.get(k) ?? new Map<string, QueueHead & { until: number }>();
    const now = performance.now();
    // Replicas killed without withdrawing their heads: forgotten once expired.
    for (const [r, h] of heads) if (h.until <= now) heads.delete(r);
    if (head.oldest === null && Object.keys(head.holding ?? {}).length === 0) heads.delete(router);
    else heads.set(router, { ...head, until: now + HEAD_TTL_MS });
    if (heads.size === 0) this.remote.delete(k);
    else this.remote.set(k, heads);
    // Requests that waited behind it may place now.
    this.nudge(k);
  }

  /** Stops repeating the heads and withdraws them (the replica is shutting down; its requests are ending). */
  close(): void {
    clearInterval(this.refresh);
    for (const { pool } of this.announced.values()) this.heads?.announce(pool, { oldest: null });
    this.announced.clear();
  }

  /** Whether requests are queued at all (a zero bound or timeout turns the queue off: 429 at once). */
  get enabled(): boolean {
    return this.options.maxQueued > 0 && this.options.timeoutMs > 0;
  }

  /** Requests queued now, by pool key; pools with none are absent. */
  queuedByPool(): ReadonlyMap<string, number> {
    return new Map([...this.queues].map(([k, q]) => [k, q.length]));
  }

  /**
   * Whether a request of `pool` that would take engine `target` must wait
   * behind others: some request that joined before `ticket` (any, for a
   * request not queued), at this replica or another, still waits for a
   * sequence, or holds for `target`.
   */
  behind(pool: Pool, ticket?: QueueTicket, target?: string): boolean {
    const k = key(pool);
    for (const t of this.queues.get(k) ?? []) {
      if (t === ticket) break;
      if (t.blocks(target)) return true;
    }
    const mine = ticket?.joinedAtEpoch ?? Infinity;
    const now = performance.now();
    for (const head of this.remote.get(k)?.values() ?? []) {
      if (head.until <= now) continue;
      if (head.oldest !== null && head.oldest < mine) return true;
      const holding = target === undefined ? undefined : head.holding?.[target];
      if (holding !== undefined && holding < mine) return true;
    }
    return false;
  }

  /** Enters `pool`'s queue; 429 when it already holds `maxQueued`. */
  join(pool: Pool): QueueTicket {
    const k = key(pool);
    const queue = this.queues.get(k) ?? [];
    if (queue.length >= this.options.maxQueued) {
      this.options.metrics.capacityQueueRefusals.inc({ reason: "queue_full" });
      throw new HttpError(429, ErrorCode.Capacity, `every engine of EnginePool ${k} is full and ${queue.length} request(s) already wait for a sequence (this router queues at most ${this.options.maxQueued}); retry later`, this.retryAfter());
    }
    const ticket = new QueueTicket(k, performance.now() + this.options.timeoutMs, () => this.announce(pool));
    queue.push(ticket);
    this.queues.set(k, queue);
    this.options.metrics.capacityQueued.set({ pool: k }, queue.length);
    this.announce(pool);
    return ticket;
  }

  /** Tells the other replicas when this replica's heads of `pool`'s queue changed. */
  private announce(pool: Pool): void {
    if (this.heads === undefined) return;
    const k = key(pool);
    const queue = this.queues.get(k) ?? [];
    const holding: Record<string, number> = {};
    // Oldest first: the first ticket holding for an engine is that engine's head.
    for (const t of queue) if (t.holdFor !== undefined && holding[t.holdFor] === undefined) holding[t.holdFor] = t.joinedAtEpoch;
    const head: QueueHead = { oldest: queue.find((t) => t.blocks())?.joinedAtEpoch ?? null, ...(Object.keys(holding).length > 0 ? { holding } : {}) };
    const text = JSON.stringify(head);
    if (text === (this.announced.get(k)?.text ?? JSON.stringify({ oldest: null }))) return;
    if (head.oldest === null && head.holding === undefined) this.announced.delete(k);
    else this.announced.set(k, { pool, head, text });
    this.heads.announce(pool, head);
  }

  /**
   * Waits for the pool's next heartbeat (a sequence may have freed), a
   * ticket leaving the pool's queue (one ahead placed), the ticket's
   * deadline, or `signal`. Throws 429 once the deadline has passed, and the
   * abort reason on abort; the caller places again after it returns.
   */
  async wait(pool: Pool, ticket: QueueTicket, signal?: AbortSignal): Promise<void> {
    ticket.set("waiting");
    signal?.throwIfAborted();
    const left = ticket.deadline - performance.now();
    if (left <= 0) {
      this.options.metrics.capacityQueueRefusals.inc({ reason: "timeout" });
      throw new HttpError(429, ErrorCode.Capacity, `every engine of EnginePool ${ticket.key} stayed full for the ${Math.round(performance.now() - ticket.joinedAt)} ms this request waited for a sequence; retry later`, this.retryAfter());
    }
    await new Promise<void>((resolve) => {
      const waits = this.nudges.get(ticket.key) ?? new Set<() => void>();
      this.nudges.set(ticket.key, waits);
      const done = (): void => {
        waits.delete(done);
        if (waits.size === 0 && this.nudges.get(ticket.key) === waits) this.nudges.delete(ticket.key);
        resolve();
      };
      waits.add(done);
      void this.options.engines.changed(pool.namespace, pool.name, left, signal).then(done);
    });
    signal?.throwIfAborted();
  }

  /** Takes the ticket out of its queue (placed, refused or given up), recording how long it waited. */
  leave(ticket: QueueTicket, outcome: QueueOutcome): void {
    const queue = this.queues.get(ticket.key);
    const i = queue?.indexOf(ticket) ?? -1;
    if (queue === undefined || i < 0) return;
    queue.splice(i, 1);
    if (queue.length === 0) this.queues.delete(ticket.key);
    this.options.metrics.capacityQueued.set({ pool: ticket.key }, queue.length);
    this.options.metrics.capacityQueueSeconds.observe({ outcome }, (performance.now() - ticket.joinedAt) / 1000);
    const pool = this.announced.get(ticket.key)?.pool;
    if (pool !== undefined) this.announce(pool);
    this.nudge(ticket.key);
  }

  /** Ends the pool's waits early: the requests behind one that left (or behind another replica's head that moved) may place now. */
  private nudge(k: string): void {
    for (const nudge of [...(this.nudges.get(k) ?? [])]) nudge();
  }

  private retryAfter(): Record<string, string> {
    return { "Retry-After": String(this.options.retryAfterSeconds) };
  }
}

const key = (pool: Pool): string => `${pool.namespace}/${pool.name}`;

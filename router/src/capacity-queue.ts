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
 * waiting, the request gets 429 `capacity` with `Retry-After`. The order is
 * per router replica (each replica keeps its own queue); the counts go into
 * the replica's presence, where the operator's autoscaler reads them as
 * sessions waiting for a sequence.
 */
import { ErrorCode } from "../../common/src/index.js";
import type { EngineRegistry } from "./engine-registry.js";
import { HttpError } from "./errors.js";
import type { RouterMetrics } from "./metrics.js";

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

/** A request's place in its pool's queue. */
export class QueueTicket {
  /**
   * `waiting` for a free sequence, `placing` (a reservation and the POST in
   * flight), or `holding` for the one engine holding its prefix (the
   * router's prefix wait). Waiting and placing hold back the requests behind
   * it, so the oldest takes a freed sequence first; holding does not, which
   * would stall the whole queue behind one engine.
   */
  state: "waiting" | "placing" | "holding" = "waiting";
  readonly joinedAt = performance.now();

  constructor(
    readonly key: string,
    readonly deadline: number,
  ) {}
}

export type QueueOutcome = "placed" | "timeout" | "aborted" | "failed";

export class CapacityQueue {
  /** Pool key (`ns/name`) → tickets, oldest first. */
  private readonly queues = new Map<string, QueueTicket[]>();
  /** Pool key → the waits to end early when a ticket leaves (the ones behind it may place now). */
  private readonly nudges = new Map<string, Set<() => void>>();

  constructor(private readonly options: CapacityQueueOptions) {}

  /** Whether requests are queued at all (a zero bound or timeout turns the queue off: 429 at once). */
  get enabled(): boolean {
    return this.options.maxQueued > 0 && this.options.timeoutMs > 0;
  }

  /** Requests queued now, by pool key; pools with none are absent. */
  queuedByPool(): ReadonlyMap<string, number> {
    return new Map([...this.queues].map(([k, q]) => [k, q.length]));
  }

  /**
   * Whether a request of `pool` must wait behind others: some request that
   * joined before `ticket` (any, for a request not queued) still waits for
   * a sequence.
   */
  behind(pool: Pool, ticket?: QueueTicket): boolean {
    for (const t of this.queues.get(key(pool)) ?? []) {
      if (t === ticket) return false;
      if (t.state !== "holding") return true;
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
    const ticket = new QueueTicket(k, performance.now() + this.options.timeoutMs);
    queue.push(ticket);
    this.queues.set(k, queue);
    this.options.metrics.capacityQueued.set({ pool: k }, queue.length);
    return ticket;
  }

  /**
   * Waits for the pool's next heartbeat (a sequence may have freed), a
   * ticket leaving the pool's queue (one ahead placed), the ticket's
   * deadline, or `signal`. Throws 429 once the deadline has passed, and the
   * abort reason on abort; the caller places again after it returns.
   */
  async wait(pool: Pool, ticket: QueueTicket, signal?: AbortSignal): Promise<void> {
    ticket.state = "waiting";
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
    for (const nudge of [...(this.nudges.get(ticket.key) ?? [])]) nudge();
  }

  private retryAfter(): Record<string, string> {
    return { "Retry-After": String(this.options.retryAfterSeconds) };
  }
}

const key = (pool: Pool): string => `${pool.namespace}/${pool.name}`;

/**
 * @module A rate-limited work queue keyed by `namespace/name` (client-go's
 * workqueue semantics). A key is queued at most once however often it is
 * added; a key being processed is never handed to a second worker — adds
 * during processing mark it dirty and it is re-queued when the worker calls
 * {@link WorkQueue.done}. Delayed adds keep only the earliest deadline per key.
 */
import type { RateLimiter } from "./rate-limiter.js";

/** Timer functions, injectable so tests control time. */
export interface QueueClock {
  setTimeout: (fn: () => void, ms: number) => unknown;
  clearTimeout: (handle: unknown) => void;
  now: () => number;
}

const realClock: QueueClock = {
  setTimeout: (fn, ms) => {
    const t = setTimeout(fn, ms);
    t.unref();
    return t;
  },
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
  now: () => Date.now(),
};

export interface WorkQueueOptions {
  rateLimiter: RateLimiter;
  clock?: QueueClock;
  /** Called whenever the queue length changes (a metrics gauge). */
  onDepth?: (depth: number) => void;
}

/** A deduplicating, rate-limited queue of keys. */
export class WorkQueue {
  private readonly queue: string[] = [];
  private readonly dirty = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly waiting = new Map<string, { at: number; handle: unknown }>();
  private waiters: ((key: string | undefined) => void)[] = [];
  private shuttingDown = false;
  private readonly clock: QueueClock;

  constructor(private readonly opts: WorkQueueOptions) {
    this.clock = opts.clock ?? realClock;
  }

  /** Queues `key` unless it is already queued (merged) or being processed (marked dirty). */
  add(key: string): void {
    if (this.shuttingDown || this.dirty.has(key)) return;
    this.dirty.add(key);
    if (this.processing.has(key)) return;
    const waiter = this.waiters.shift();
    if (waiter) {
      this.dirty.delete(key);
      this.processing.add(key);
      waiter(key);
      return;
    }
    this.queue.push(key);
    this.opts.onDepth?.(this.queue.length);
  }

  /** Queues `key` after `ms`; an earlier pending deadline for the same key wins. */
  addAfter(key: string, ms: number): void {
    if (this.shuttingDown) return;
    if (ms <= 0) return this.add(key);
    const at = this.clock.now() + ms;
    const pending = this.waiting.get(key);
    if (pending && pending.at <= at) return;
    if (pending) this.clock.clearTimeout(pending.handle);
    const handle = this.clock.setTimeout(() => {
      this.waiting.delete(key);
      this.add(key);
    }, ms);
    this.waiting.set(key, { at, handle });
  }

  /** Queues `key` after its rate limiter's backoff (one more failure counted). */
  addRateLimited(key: string): void {
    this.addAfter(key, this.opts.rateLimiter.when(key));
  }

  /** Resets `key`'s backoff after a successful pass. */
  forget(key: string): void {
    this.opts.rateLimiter.forget(key);
  }

  /** Failures counted for `key`. */
  numRequeues(key: string): number {
    return this.opts.rateLimiter.retries(key);
  }

  /** Waits for the next key; undefined once the queue shuts down. Pair with {@link done}. */
  get(): Promise<string | undefined> {
    const key = this.queue.shift();
    if (key !== undefined) {
      this.dirty.delete(key);
      this.processing.add(key);
      this.opts.onDepth?.(this.queue.length);
      return Promise.resolve(key);
    }
    if (this.shuttingDown) return Promise.resolve(undefined);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Marks `key` processed; re-queues it if it was added meanwhile. */
  done(key: string): void {
    this.processing.delete(key);
    if (this.dirty.has(key)) {
      this.dirty.delete(key);
      this.add(key);
    }
  }

  /** Queued keys (not counting those being processed or delayed). */
  len(): number {
    return this.queue.length;
  }

  /** Keys being processed now. */
  inFlight(): number {
    return this.processing.size;
  }

  /** Stops accepting keys, drops delayed ones and releases waiting workers. */
  shutDown(): void {
    this.shuttingDown = true;
    for (const { handle } of this.waiting.values()) this.clock.clearTimeout(handle);
    this.waiting.clear();
    for (const w of this.waiters) w(undefined);
    this.waiters = [];
  }

  isShuttingDown(): boolean {
    return this.shuttingDown;
  }
}

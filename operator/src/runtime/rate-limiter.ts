/**
 * @module Retry pacing for the work queue (client-go's default controller
 * rate limiter): per-key exponential backoff, combined with an overall token
 * bucket so that a storm of failing keys cannot hammer the API server.
 */

/** Decides how long a key waits before its next retry. */
export interface RateLimiter {
  /** The delay before `key` may be processed again; counts one more failure. */
  when(key: string): number;
  /** Clears a key's failure history (after a successful pass). */
  forget(key: string): void;
  /** Failures counted for `key` since the last {@link forget}. */
  retries(key: string): number;
}

export interface ExponentialBackoffOptions {
  baseMs: number;
  maxMs: number;
}

/** `baseMs * 2^failures`, capped at `maxMs`, per key. */
export class ExponentialBackoffLimiter implements RateLimiter {
  private readonly failures = new Map<string, number>();
  constructor(private readonly opts: ExponentialBackoffOptions) {}

  when(key: string): number {
    const n = this.failures.get(key) ?? 0;
    this.failures.set(key, n + 1);
    // 2 ** n overflows to Infinity for large n; the cap keeps the result finite.
    return Math.min(this.opts.maxMs, this.opts.baseMs * 2 ** n);
  }

  forget(key: string): void {
    this.failures.delete(key);
  }

  retries(key: string): number {
    return this.failures.get(key) ?? 0;
  }
}

export interface TokenBucketOptions {
  /** Sustained rate in tokens per second. */
  qps: number;
  /** Tokens available at once. */
  burst: number;
  now?: () => number;
}

/** An overall limit shared by all keys: the delay until the next token is free. */
export class TokenBucketLimiter implements RateLimiter {
  private tokens: number;
  private last: number;
  private readonly now: () => number;
  constructor(private readonly opts: TokenBucketOptions) {
    this.now = opts.now ?? Date.now;
    this.tokens = opts.burst;
    this.last = this.now();
  }

  when(): number {
    const now = this.now();
    this.tokens = Math.min(this.opts.burst, this.tokens + ((now - this.last) / 1000) * this.opts.qps);
    this.last = now;
    // Reserve a token even when in debt: waiting callers queue up behind each other.
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : Math.ceil((-this.tokens / this.opts.qps) * 1000);
  }

  forget(): void {}

  retries(): number {
    return 0;
  }
}

/** The longest delay of several limiters. */
export class MaxOfLimiter implements RateLimiter {
  private readonly limiters: RateLimiter[];
  constructor(...limiters: RateLimiter[]) {
    this.limiters = limiters;
  }

  when(key: string): number {
    return Math.max(0, ...this.limiters.map((l) => l.when(key)));
  }

  forget(key: string): void {
    for (const l of this.limiters) l.forget(key);
  }

  retries(key: string): number {
    return Math.max(0, ...this.limiters.map((l) => l.retries(key)));
  }
}

/** The controller default: 5 ms doubling to 1000 s per key, 10 qps / burst 100 overall. */
export function defaultControllerRateLimiter(opts: Partial<ExponentialBackoffOptions> = {}): RateLimiter {
  return new MaxOfLimiter(
    new ExponentialBackoffLimiter({ baseMs: opts.baseMs ?? 5, maxMs: opts.maxMs ?? 1_000_000 }),
    new TokenBucketLimiter({ qps: 10, burst: 100 }),
  );
}

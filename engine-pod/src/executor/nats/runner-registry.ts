/**
 * @module Which tool pools have a live runner, from the `interlace-runners`
 * heartbeat bucket: a KV watch keeps an in-memory view (no round trip per
 * call); when that view says a pool has none, the bucket itself is asked
 * before the executor fails the call fast with `no_runners` (so a watch that
 * is still loading, or lagging after a reconnect, cannot fail a good call).
 * A pool at zero replicas has no runner until the autoscaler wakes it: the
 * executor then waits for one ({@link RunnerRegistry.waitForRunner}), woken
 * by the watch the moment a runner's first heartbeat lands.
 */
import type { KV, KvEntry } from "@nats-io/kv";
import type { Logger } from "../../../../common/src/index.js";
import { encodeToken, kvKeys, parseRunnerKey, type PoolRef } from "../../../../common/src/protocol/index.js";

function poolKey(pool: PoolRef): string {
  return `${pool.namespace}/${pool.name}`;
}

export class RunnerRegistry {
  /** pool → runner → when its last heartbeat was seen (epoch ms). */
  private readonly seen = new Map<string, Map<string, number>>();
  private stopped = false;
  private watch: { stop(): void } | null = null;
  /** pool → callbacks waiting for its first live runner. */
  private readonly waiters = new Map<string, Set<(found: boolean) => void>>();

  constructor(
    private readonly kv: KV,
    /** A runner whose last heartbeat is older than this is gone. */
    private readonly staleAfterMs: number,
    private readonly log: Logger,
  ) {}

  async start(): Promise<void> {
    await this.watchOnce();
  }

  /** Watches the bucket; if the watch ends (it should not, but connections do odd things), starts it again. */
  private async watchOnce(): Promise<void> {
    const iter = await this.kv.watch({ key: ">" });
    this.watch = iter;
    void (async () => {
      try {
        for await (const entry of iter) this.apply(entry, entry.isUpdate ? Date.now() : entry.created.getTime());
      } catch (err) {
        if (!this.stopped) this.log.warn({ err }, "runner heartbeat watch failed");
      }
      while (!this.stopped) {
        await new Promise((r) => setTimeout(r, 1_000));
        if (this.stopped) return;
        try {
          await this.watchOnce();
          return;
        } catch (err) {
          this.log.warn({ err }, "cannot restart the runner heartbeat watch; bucket lookups cover it");
        }
      }
    })();
  }

  private apply(entry: KvEntry, at: number): void {
    const parsed = parseRunnerKey(entry.key);
    if (parsed === null) return;
    const key = poolKey(parsed.pool);
    let runners = this.seen.get(key);
    if (entry.operation !== "PUT") {
      runners?.delete(parsed.runnerId);
      return;
    }
    if (runners === undefined) this.seen.set(key, (runners = new Map()));
    runners.set(parsed.runnerId, at);
    if (Date.now() - at <= this.staleAfterMs) for (const wake of [...(this.waiters.get(key) ?? [])]) wake(true);
  }

  private liveInMemory(pool: PoolRef, now: number): number {
    let n = 0;
    for (const at of this.seen.get(poolKey(pool))?.values() ?? []) if (now - at <= this.staleAfterMs) n++;
    return n;
  }

  /** Live runners of `pool` (0 means: fail fast). Asks the bucket when the in-memory view has none. */
  async liveRunners(pool: PoolRef): Promise<number> {
    const now = Date.now();
    const n = this.liveInMemory(pool, now);
    if (n > 0) return n;
    let live = 0;
    try {
      for (const k of await kvKeys(this.kv, `${encodeToken(pool.namespace)}.${encodeToken(pool.name)}.>`)) {
        const entry = await this.kv.get(k);
        if (entry !== null && entry.operation === "PUT") {
          this.apply(entry, entry.created.getTime());
          if (now - entry.created.getTime() <= this.staleAfterMs) live++;
        }
      }
    } catch (err) {
      // Cannot tell (NATS unreachable): do not fail the call on that; its deadline still bounds it.
      this.log.warn({ err, pool }, "runner lookup failed; assuming the pool is served");
      return 1;
    }
    return live;
  }

  /**
   * Resolves true as soon as `pool` has a live runner, false after
   * `timeoutMs` or when `signal` aborts. The watch wakes it; a bucket lookup
   * every `recheckMs` covers a watch that lags.
   */
  async waitForRunner(pool: PoolRef, timeoutMs: number, signal?: AbortSignal, recheckMs = 1_000): Promise<boolean> {
    if ((await this.liveRunners(pool)) > 0) return true;
    const key = poolKey(pool);
    return new Promise<boolean>((resolve) => {
      let done = false;
      const finish = (found: boolean): void => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        clearInterval(recheck);
        signal?.removeEventListener("abort", onAbort);
        const set = this.waiters.get(key);
        set?.delete(finish);
        if (set?.size === 0) this.waiters.delete(key);
        resolve(found);
      };
      const onAbort = (): void => finish(false);
      const timer = setTimeout(() => finish(false), timeoutMs);
      const recheck = setInterval(() => {
        void this.liveRunners(pool).then((n) => n > 0 && finish(true));
      }, recheckMs);
      const set = this.waiters.get(key) ?? new Set<(found: boolean) => void>();
      set.add(finish);
      this.waiters.set(key, set);
      if (signal?.aborted) finish(false);
      else signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  stop(): void {
    this.stopped = true;
    for (const set of [...this.waiters.values()]) for (const wake of [...set]) wake(false);
    this.watch?.stop();
  }
}

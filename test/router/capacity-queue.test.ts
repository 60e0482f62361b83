/**
 * The capacity queue's order and bounds (router/src/capacity-queue.ts): a
 * request waits behind every request queued before it that is not being
 * placed, a request not queued waits behind any that is, the bound refuses
 * one more with 429, and the wait ends with a 429 past its deadline (woken
 * by the pool's heartbeats in between). The real-process order test is in
 * router-engines.test.ts.
 */
import t from "tap";
import { CapacityQueue } from "../../router/src/capacity-queue.js";
import { HttpError } from "../../router/src/errors.js";
import type { EngineRegistry } from "../../router/src/engine-registry.js";
import { RouterMetrics } from "../../router/src/metrics.js";

const pool = { namespace: "default", name: "pool" };
const other = { namespace: "default", name: "other" };

/** Only what the queue reads of the registry: a wait for the pool's next change, here a timer. */
const engines = { changed: (_ns: string, _pool: string, timeoutMs: number) => new Promise<void>((r) => setTimeout(r, Math.min(timeoutMs, 20))) } as unknown as EngineRegistry;

t.test("arrival order: a request waits behind the older ones still waiting, not behind one being placed", async (t) => {
  const metrics = new RouterMetrics();
  const q = new CapacityQueue({ engines, metrics, maxQueued: 3, timeoutMs: 10_000, retryAfterSeconds: 2 });
  t.equal(q.behind(pool), false, "an empty queue holds nobody back");
  const a = q.join(pool);
  const b = q.join(pool);
  t.equal(q.behind(pool, a), false, "the oldest waits behind nobody");
  t.equal(q.behind(pool, b), true, "the next waits behind it");
  t.equal(q.behind(pool), true, "a new arrival waits behind both");
  t.equal(q.behind(other), false, "another pool's queue is its own");
  a.placing = true;
  t.equal(q.behind(pool, b), false, "once the oldest is being placed, the next may place too");
  q.leave(a, "placed");
  t.same([...q.queuedByPool()], [["default/pool", 1]]);
  q.leave(b, "placed");
  t.same([...q.queuedByPool()], [], "an empty pool is left out");
  t.match(await metrics.registry.metrics(), /interlace_router_capacity_queue_seconds_count\{outcome="placed"\} 2/);
});

t.test("bounded: one more than maxQueued is refused with 429 at once; a wait past its deadline is a 429", async (t) => {
  const metrics = new RouterMetrics();
  const q = new CapacityQueue({ engines, metrics, maxQueued: 1, timeoutMs: 50, retryAfterSeconds: 2 });
  const a = q.join(pool);
  let full: unknown;
  try {
    q.join(pool);
  } catch (err) {
    full = err;
  }
  t.match(full, { status: 429, headers: { "Retry-After": "2" } }, "the queue is full");
  const started = performance.now();
  let refused: unknown;
  for (;;) {
    try {
      await q.wait(pool, a);
    } catch (err) {
      refused = err;
      break;
    }
  }
  t.ok(refused instanceof HttpError && refused.status === 429, "past the deadline: 429");
  t.match((refused as Error).message, /stayed full for the \d+ ms/);
  t.ok(performance.now() - started >= 40, "after waiting out the queue's time");
  q.leave(a, "timeout");
  const text = await metrics.registry.metrics();
  t.match(text, /interlace_router_capacity_queue_refusals_total\{reason="queue_full"\} 1/);
  t.match(text, /interlace_router_capacity_queue_refusals_total\{reason="timeout"\} 1/);
  t.equal(new CapacityQueue({ engines, metrics, maxQueued: 0, timeoutMs: 50, retryAfterSeconds: 1 }).enabled, false, "a zero bound turns it off");
});

/**
 * The capacity queue's order and bounds (router/src/capacity-queue.ts): a
 * request waits behind every request queued before it that still waits for
 * a sequence or is being placed (not one waiting for its prefix's engine),
 * a request not queued waits behind any such, the bound refuses
 * one more with 429, and the wait ends with a 429 past its deadline (woken
 * by the pool's heartbeats in between). The real-process order test is in
 * router-engines.test.ts.
 */
import t from "tap";
import { CapacityQueue, type QueueHead } from "../../router/src/capacity-queue.js";
import { HttpError } from "../../router/src/errors.js";
import type { EngineRegistry } from "../../router/src/engine-registry.js";
import { RouterMetrics } from "../../router/src/metrics.js";

const pool = { namespace: "default", name: "pool" };
const other = { namespace: "default", name: "other" };

/** Only what the queue reads of the registry: a wait for the pool's next change, here a timer. */
const engines = { changed: (_ns: string, _pool: string, timeoutMs: number) => new Promise<void>((r) => setTimeout(r, Math.min(timeoutMs, 20))) } as unknown as EngineRegistry;

t.test("arrival order: a request waits behind the older ones waiting for a sequence or being placed, not behind one holding for its prefix's engine", async (t) => {
  const metrics = new RouterMetrics();
  const q = new CapacityQueue({ engines, metrics, maxQueued: 3, timeoutMs: 10_000, retryAfterSeconds: 2 });
  t.equal(q.behind(pool), false, "an empty queue holds nobody back");
  const a = q.join(pool);
  const b = q.join(pool);
  t.equal(q.behind(pool, a), false, "the oldest waits behind nobody");
  t.equal(q.behind(pool, b), true, "the next waits behind it");
  t.equal(q.behind(pool), true, "a new arrival waits behind both");
  t.equal(q.behind(other), false, "another pool's queue is its own");
  a.set("placing");
  t.equal(q.behind(pool, b), true, "while the oldest is being placed, the next still waits (it places first)");
  a.set("holding", "engine-x");
  t.equal(q.behind(pool, b, "engine-y"), false, "while the oldest waits for its prefix's engine, the next may take another engine's sequence");
  t.equal(q.behind(pool, b, "engine-x"), true, "but not that engine's: the oldest takes it first");
  q.leave(a, "placed");
  t.same([...q.queuedByPool()], [["default/pool", 1]]);
  q.leave(b, "placed");
  t.same([...q.queuedByPool()], [], "an empty pool is left out");
  t.match(await metrics.registry.metrics(), /interlace_router_capacity_queue_seconds_count\{outcome="placed"\} 2/);
});

t.test("a request waiting behind one that places is woken when it leaves, not at the next heartbeat", async (t) => {
  // No heartbeat within the test: a wait ends only by a nudge (or its 10 s deadline).
  const silent = { changed: (_ns: string, _pool: string, timeoutMs: number) => new Promise<void>((r) => setTimeout(r, timeoutMs).unref()) } as unknown as EngineRegistry;
  const q = new CapacityQueue({ engines: silent, metrics: new RouterMetrics(), maxQueued: 3, timeoutMs: 10_000, retryAfterSeconds: 1 });
  const a = q.join(pool);
  const b = q.join(pool);
  const started = performance.now();
  const woken = q.wait(pool, b);
  a.set("placing");
  q.leave(a, "placed");
  await woken;
  t.ok(performance.now() - started < 5_000, "woken by a's leaving");
  t.equal(q.behind(pool, b), false, "and first in line now");
  q.leave(b, "placed");
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

t.test("other replicas' heads: a request waits behind another replica's older one (waiting for any sequence, or holding for the engine it would take), until that one leaves or stops being repeated; this replica's heads are announced as they change", async (t) => {
  const silent = { changed: (_ns: string, _pool: string, timeoutMs: number) => new Promise<void>((r) => setTimeout(r, timeoutMs).unref()) } as unknown as EngineRegistry;
  const q = new CapacityQueue({ engines: silent, metrics: new RouterMetrics(), maxQueued: 5, timeoutMs: 10_000, retryAfterSeconds: 1 });
  const announced: [string, QueueHead][] = [];
  q.shareHeads({ announce: (p, head) => announced.push([p.name, head]) });
  t.teardown(() => q.close());

  const a = q.join(pool);
  t.same(announced, [["pool", { oldest: a.joinedAtEpoch }]], "joining an empty queue announces this replica's head");
  q.observeRemote(pool, "replica-2", { oldest: a.joinedAtEpoch - 1_000 });
  t.equal(q.behind(pool, a, "engine-x"), true, "the other replica's request joined earlier: this replica's oldest waits behind it");
  t.equal(q.behind(pool), true, "and so does a request not queued here");
  t.equal(q.behind(other), false, "another pool's head holds nobody back");
  const woken = q.wait(pool, a);
  const started = performance.now();
  q.observeRemote(pool, "replica-2", { oldest: null });
  await woken;
  t.ok(performance.now() - started < 5_000, "woken when the other replica's head leaves");
  t.equal(q.behind(pool, a, "engine-x"), false, "and first in line over both replicas now");
  q.observeRemote(pool, "replica-2", { oldest: a.joinedAtEpoch + 1_000 });
  t.equal(q.behind(pool, a, "engine-x"), false, "a younger head elsewhere does not hold it back");
  t.equal(q.behind(pool), true, "but a request not queued here still waits behind it");
  q.observeRemote(pool, "replica-2", { oldest: null, holding: { "engine-x": a.joinedAtEpoch - 1_000 } });
  t.equal(q.behind(pool, a, "engine-x"), true, "an older request elsewhere holding for the engine this one would take holds it back");
  t.equal(q.behind(pool, a, "engine-y"), false, "but not from another engine");
  q.observeRemote(pool, "replica-2", { oldest: null });

  a.set("holding", "engine-x");
  t.same(announced.at(-1), ["pool", { oldest: null, holding: { "engine-x": a.joinedAtEpoch } }], "holding for its prefix's engine: announced as that engine's head only");
  a.set("waiting");
  t.same(announced.at(-1), ["pool", { oldest: a.joinedAtEpoch }], "waiting for any sequence again: announced again");
  const count = announced.length;
  const b = q.join(pool);
  t.equal(announced.length, count, "a younger request joining changes no head");
  q.leave(a, "placed");
  t.same(announced.at(-1), ["pool", { oldest: b.joinedAtEpoch }], "the oldest placed: the next is the head");
  q.leave(b, "placed");
  t.same(announced.at(-1), ["pool", { oldest: null }], "the queue empty: withdrawn");

  q.observeRemote(pool, "replica-3", { oldest: 1 });
  t.equal(q.behind(pool), true, "a head from another replica holds back");
  await new Promise((r) => setTimeout(r, 3_100));
  t.equal(q.behind(pool), false, "not repeated within its TTL (the replica is gone): it holds nobody back");
});

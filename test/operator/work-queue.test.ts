import t from "tap";
import {
  ExponentialBackoffLimiter,
  MaxOfLimiter,
  TokenBucketLimiter,
  WorkQueue,
  type QueueClock,
} from "../../operator/src/runtime/index.js";

/** A manual clock: timers fire only when the test advances time. */
class FakeClock implements QueueClock {
  time = 0;
  private timers: { at: number; fn: () => void; id: number }[] = [];
  private next = 1;
  setTimeout = (fn: () => void, ms: number): unknown => {
    const id = this.next++;
    this.timers.push({ at: this.time + ms, fn, id });
    return id;
  };
  clearTimeout = (h: unknown): void => {
    this.timers = this.timers.filter((x) => x.id !== h);
  };
  now = (): number => this.time;
  advance(ms: number): void {
    this.time += ms;
    const due = this.timers.filter((x) => x.at <= this.time).sort((a, b) => a.at - b.at);
    this.timers = this.timers.filter((x) => x.at > this.time);
    for (const x of due) x.fn();
  }
  pending(): number {
    return this.timers.length;
  }
}

const limiter = (): ExponentialBackoffLimiter => new ExponentialBackoffLimiter({ baseMs: 10, maxMs: 1000 });

t.test("duplicate adds are merged into one queued key", async (t) => {
  const q = new WorkQueue({ rateLimiter: limiter() });
  q.add("ns/a");
  q.add("ns/b");
  q.add("ns/a");
  q.add("ns/a");
  t.equal(q.len(), 2);
  t.equal(await q.get(), "ns/a");
  t.equal(await q.get(), "ns/b");
  t.equal(q.len(), 0);
});

t.test("a key being processed is not handed out twice; an add meanwhile re-queues it on done", async (t) => {
  const q = new WorkQueue({ rateLimiter: limiter() });
  q.add("ns/a");
  const key = await q.get();
  t.equal(key, "ns/a");
  q.add("ns/a");
  q.add("ns/a");
  t.equal(q.len(), 0, "not queued while processing");
  t.equal(q.inFlight(), 1);
  q.done("ns/a");
  t.equal(q.len(), 1, "re-queued once after done");
  t.equal(await q.get(), "ns/a");
  q.done("ns/a");
  t.equal(q.len(), 0);
});

t.test("a waiting worker receives a key added later", async (t) => {
  const q = new WorkQueue({ rateLimiter: limiter() });
  const pending = q.get();
  q.add("ns/x");
  t.equal(await pending, "ns/x");
  q.add("ns/x");
  t.equal(q.len(), 0, "marked dirty while processing");
  q.done("ns/x");
  t.equal(q.len(), 1);
});

t.test("addAfter keeps the earliest deadline per key", async (t) => {
  const clock = new FakeClock();
  const q = new WorkQueue({ rateLimiter: limiter(), clock });
  q.addAfter("ns/a", 100);
  q.addAfter("ns/a", 50);
  q.addAfter("ns/a", 200);
  t.equal(clock.pending(), 1, "one timer per key");
  clock.advance(49);
  t.equal(q.len(), 0);
  clock.advance(1);
  t.equal(q.len(), 1);
  t.equal(await q.get(), "ns/a");
});

t.test("addRateLimited backs off exponentially per key and forget resets it", async (t) => {
  const clock = new FakeClock();
  const q = new WorkQueue({ rateLimiter: limiter(), clock });
  const delays: number[] = [];
  for (let i = 0; i < 8; i++) {
    const start = clock.time;
    q.addRateLimited("ns/a");
    while (q.len() === 0) clock.advance(1);
    delays.push(clock.time - start);
    const k = await q.get();
    q.done(k!);
  }
  t.same(delays, [10, 20, 40, 80, 160, 320, 640, 1000], "doubling, capped at maxMs");
  t.equal(q.numRequeues("ns/a"), 8);
  q.forget("ns/a");
  t.equal(q.numRequeues("ns/a"), 0);
  const start = clock.time;
  q.addRateLimited("ns/a");
  while (q.len() === 0) clock.advance(1);
  t.equal(clock.time - start, 10, "back to the base delay");
});

t.test("backoff is tracked per key", async (t) => {
  const l = limiter();
  t.equal(l.when("a"), 10);
  t.equal(l.when("a"), 20);
  t.equal(l.when("b"), 10, "another key starts at the base");
  t.equal(l.when("a"), 40);
});

t.test("exponential backoff never overflows past the cap", async (t) => {
  const l = new ExponentialBackoffLimiter({ baseMs: 5, maxMs: 1_000_000 });
  let last = 0;
  for (let i = 0; i < 2000; i++) last = l.when("k");
  t.equal(last, 1_000_000);
});

t.test("the token bucket allows a burst then paces at qps; max-of combines limiters", async (t) => {
  let now = 0;
  const bucket = new TokenBucketLimiter({ qps: 10, burst: 3, now: () => now });
  t.same([bucket.when(), bucket.when(), bucket.when()], [0, 0, 0], "burst");
  t.equal(bucket.when(), 100, "then one token per 100 ms");
  t.equal(bucket.when(), 200, "callers queue behind each other");
  now = 1000;
  t.equal(bucket.when(), 0, "refilled");
  const combined = new MaxOfLimiter(new ExponentialBackoffLimiter({ baseMs: 1, maxMs: 10 }), new TokenBucketLimiter({ qps: 1, burst: 1, now: () => 0 }));
  t.equal(combined.when("k"), 1, "per-key backoff dominates while the bucket has tokens");
  t.equal(combined.when("k"), 1000, "the bucket dominates once empty");
});

t.test("shutDown releases waiting workers and drops delayed keys", async (t) => {
  const clock = new FakeClock();
  const q = new WorkQueue({ rateLimiter: limiter(), clock });
  const waiting = q.get();
  q.shutDown();
  t.equal(await waiting, undefined);
  q.addAfter("ns/a", 10);
  q.add("ns/b");
  clock.advance(100);
  t.equal(q.len(), 0, "no adds after shutdown");
  t.equal(await q.get(), undefined);
});

t.test("depth changes are reported", async (t) => {
  const depths: number[] = [];
  const q = new WorkQueue({ rateLimiter: limiter(), onDepth: (d) => depths.push(d) });
  q.add("a");
  q.add("b");
  await q.get();
  t.same(depths, [1, 2, 1]);
});

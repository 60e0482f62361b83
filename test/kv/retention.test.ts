/**
 * @module The retention policies' choice (kv/retention.ts) on fixed sets of
 * paused sessions: which one gives its cells to a waiting request, and how.
 */
import t from "tap";
import { chooseEviction, evictable, trapRule, type RetentionCandidate } from "../../engine-pod/src/kv/index.js";

const now = 100_000;
const paused = (id: string, pausedAgoMs: number, expectedWaitMs: number, extra: Partial<RetentionCandidate> = {}): RetentionCandidate => ({
  id,
  pausedAt: now - pausedAgoMs,
  expectedWaitMs,
  swapMs: 20,
  recomputeMs: 50,
  ...extra,
});
// Paused first but about to resume; paused later with a minute to wait; one in between.
const soon = paused("soon", 5_000, 10);
const minute = paused("minute", 1_000, 60_000);
const middle = paused("middle", 3_000, 2_000);
const all = [soon, minute, middle];
const options = { ttlMs: 4_000 };

t.test("eta: the session expected to wait longest yields, never one about to resume", async (t) => {
  t.match(chooseEviction("eta", all, now, options), { id: "minute", decision: "swap", reason: "longest_wait" });
  t.equal(chooseEviction("eta", [soon], now, options), null, "a restore that cannot hide in the wait is not worth it: the request is refused");
  t.match(chooseEviction("eta", [paused("nothing-pending", 0, Infinity)], now, options), { id: "nothing-pending" }, "no call pending: only a user interrupt wakes it");
});

t.test("ttl: pinned for the TTL after the pause (the request's hint first), then the longest-paused yields", async (t) => {
  t.match(chooseEviction("ttl", all, now, options), { id: "soon", reason: "ttl_expired" }, "only `soon` is past 4 s");
  t.equal(chooseEviction("ttl", [minute, middle], now, options), null, "none past the TTL: refused");
  t.match(chooseEviction("ttl", [minute, middle], now, { ttlMs: 0 }), { id: "middle" }, "TTL 0: the longest-paused");
  t.match(chooseEviction("ttl", [minute, { ...middle, retentionMs: 60_000 }, { ...soon, retentionMs: 60_000 }], now, options), null, "a hint longer than the pause pins it");
  t.match(chooseEviction("ttl", [{ ...minute, retentionMs: 0 }, middle], now, options), { id: "minute" }, "a hint of 0 lets it go at once");
});

t.test("lru: the least recently active yields, whatever it waits for", async (t) => {
  t.match(chooseEviction("lru", all, now, options), { id: "soon", reason: "least_recent" });
});

t.test("pin and discard never take cells from a paused session", async (t) => {
  t.equal(chooseEviction("pin", all, now, options), null);
  t.equal(chooseEviction("discard", all, now, options), null, "discard holds none to take: its traps dropped them");
  t.equal(chooseEviction("lru", [], now, options), null, "nobody paused: refused");
});

t.test("the cells go the cheaper way by the cost model", async (t) => {
  t.match(chooseEviction("lru", [paused("long", 10, 60_000, { swapMs: 80, recomputeMs: 30 })], now, options), { decision: "recompute" });
  t.match(chooseEviction("lru", [paused("long", 10, 60_000, { swapMs: 30, recomputeMs: 30 })], now, options), { decision: "swap" }, "ties go to swap");
});

t.test("ties are broken the same way every time", async (t) => {
  const a = paused("a", 1_000, 5_000);
  const b = paused("b", 1_000, 5_000);
  t.equal(chooseEviction("eta", [b, a], now, options)?.id, "a");
  t.equal(chooseEviction("lru", [b, a], now, options)?.id, "a");
});

t.test("how many sequences each policy would give up now (what heartbeats advertise)", async (t) => {
  const ids = (p: Parameters<typeof evictable>[0]) => evictable(p, all, now, options).map((c) => c.id).sort();
  t.same(ids("eta"), ["middle", "minute"], "every session whose restore hides in its wait");
  t.same(ids("ttl"), ["soon"]);
  t.same(ids("lru"), ["middle", "minute", "soon"]);
  t.same(ids("pin"), []);
  t.same(ids("discard"), []);
});

t.test("what each policy does at the trap itself", async (t) => {
  t.equal(trapRule("discard"), "recompute", "discard drops the cells at once (re-prefilled on resume)");
  t.equal(trapRule("eta"), "auto", "eta's trap-time rule: the cost model under pressure");
  for (const p of ["ttl", "lru", "pin"] as const) t.equal(trapRule(p), "keep", `${p} keeps them until pressure`);
});

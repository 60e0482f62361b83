/**
 * @module The prefix store's decisions as plain data: where an offered
 * prefix is copied (an empty store sequence, else the least recently used),
 * when nothing is copied (already held, too short, store off), what
 * counts as a use, and what each role may replace (a replica: an empty
 * entry or another replica, never a home prefix).
 */
import t from "tap";
import type { Token } from "node-llama-cpp";
import { PrefixStore } from "../../engine-pod/src/scheduler/index.js";

const toks = (start: number, n: number): Token[] => Array.from({ length: n }, (_, i) => (start + i) as Token);
const prefix = (start: number, n = 20) => ({ tokens: toks(start, n), hashes: [`h${start}`] });

t.test("fills empty sequences first, then replaces the least recently used", async (t) => {
  const store = new PrefixStore(4, 2); // session slots 0..3, store sequences 4 and 5
  t.equal(store.offer(prefix(100)), 4);
  store.stored(4, prefix(100));
  t.equal(store.offer(prefix(100)), null, "already held");
  t.equal(store.offer({ tokens: toks(100, 18), hashes: [] }), null, "a shorter prefix of a held one is held too");
  t.equal(store.offer(prefix(200)), 5);
  store.stored(5, prefix(200));
  store.used(4); // a fork from 100 makes 200 the least recently used
  t.equal(store.offer(prefix(300)), 5);
  store.stored(5, prefix(300));
  t.same(store.held().map((h) => [h.sequence, h.hashes[0]]), [[4, "h100"], [5, "h300"]]);
  t.same(store.stats, { entries: 2, homes: 2, inserts: 3, evictions: 1, hits: 1 });
});

t.test("an offer that is already held counts as a use", async (t) => {
  const store = new PrefixStore(1, 2);
  store.stored(1, prefix(100));
  store.stored(2, prefix(200));
  t.equal(store.offer(prefix(100)), null);
  t.equal(store.offer(prefix(300)), 2, "200 is older now");
});

t.test("nothing is stored when the store is off or the prefix too short", async (t) => {
  t.equal(new PrefixStore(4, 0).offer(prefix(1)), null);
  t.equal(new PrefixStore(4, 2, 16).offer(prefix(1, 15)), null);
});

t.test("a failed copy leaves the sequence empty; uses of session slots are ignored", async (t) => {
  const store = new PrefixStore(2, 1);
  store.stored(2, prefix(100));
  store.emptied(2);
  t.same(store.held(), []);
  t.equal(store.offer(prefix(200)), 2);
  store.used(0);
  store.used(2);
  t.equal(store.stats.hits, 0, "neither a session slot nor an empty entry is a hit");
  t.throws(() => store.stored(1, prefix(1)), /not a prefix-store sequence/);
});

const replica = (start: number, n = 20) => ({ ...prefix(start, n), role: "replica" as const });

t.test("a replica never replaces a home prefix; it takes an empty entry or another replica", async (t) => {
  const store = new PrefixStore(4, 2);
  t.equal(store.offer(replica(100)), 4, "an empty entry takes a replica");
  store.stored(4, replica(100));
  t.equal(store.offer(prefix(200)), 5);
  store.stored(5, prefix(200));
  t.equal(store.offer(replica(300)), 4, "the replica is replaced, not the older-used home");
  store.stored(4, replica(300));
  store.used(4);
  t.same(store.held().map((h) => [h.sequence, h.hashes[0], h.role]), [[4, "h300", "replica"], [5, "h200", "home"]]);
  t.equal(store.stats.homes, 1);
  // Both entries home: a replica finds no room.
  t.equal(store.offer(prefix(300)), null, "a home offer of a held replica makes it home");
  t.equal(store.offer(replica(400)), null, "no entry may take a replica");
  t.same(store.held().map((h) => h.role), ["home", "home"]);
  t.equal(store.offer(prefix(400)), 5, "a home offer replaces the least recently used home");
});

t.test("a home offer replaces a replica before any home, however recently the replica was used", async (t) => {
  const store = new PrefixStore(0, 3);
  store.stored(0, prefix(100));
  store.stored(1, replica(200));
  store.stored(2, prefix(300));
  store.used(1);
  t.equal(store.offer(prefix(400)), 1);
  t.equal(store.offer(replica(200)), null, "held: a replica offer of a held prefix stays a use");
  store.stored(1, prefix(400));
  t.equal(store.offer(replica(500)), null);
  t.same(store.stats, { entries: 3, homes: 3, inserts: 4, evictions: 1, hits: 1 });
});

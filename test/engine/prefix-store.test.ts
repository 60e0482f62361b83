/**
 * @module The prefix store's decisions as plain data: where an offered
 * prefix is copied (an empty store sequence, else the least recently used),
 * when nothing is copied (already held, too short, store off), and what
 * counts as a use.
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
  t.same(store.stats, { entries: 2, inserts: 3, evictions: 1, hits: 1 });
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

/**
 * @module The slot allocator (pure): busy slots stay contiguous, idle slots
 * serve as a prefix cache (longest common prefix wins, LRU eviction), and a
 * full engine says so.
 */
import t from "tap";
import type { Token } from "node-llama-cpp";
import { commonPrefix, SlotAllocator } from "../../engine-pod/src/scheduler/index.js";

const tk = (...xs: number[]): Token[] => xs as Token[];

t.test("lowest slots first; null when every slot is busy", async (t) => {
  const a = new SlotAllocator(3);
  t.same([a.acquire()!.slot, a.acquire()!.slot, a.acquire()!.slot], [0, 1, 2]);
  t.equal(a.acquire(), null);
  t.equal(a.busy, 3);
});

t.test("busy slots stay contiguous: gaps between them are filled first, even over an idle cache entry", async (t) => {
  const a = new SlotAllocator(5);
  for (let i = 0; i < 3; i++) a.acquire();
  a.release(1, tk(1, 2, 3)); // idle, cached, between busy 0 and 2
  t.same(a.gap(), { from: 2, to: 1 }, "compaction would move 2 down to 1");
  t.same(a.acquire(tk(9, 9)), { slot: 1, reusePrefix: 0 }, "fills the gap, evicting its cache");
  t.equal(a.gap(), null);
  a.release(0, tk(4)); // below the busy block: not a gap
  t.equal(a.gap(), null, "a free slot below every busy one splits nothing");
  t.same(a.acquire(tk(9)), { slot: 3, reusePrefix: 0 }, "the lowest free slot; the cache at 0 survives");
  a.release(2);
  t.same(a.gap(), { from: 3, to: 2 });
  a.claim(2);
  a.release(3);
  t.equal(a.gap(), null, "after the move");
  t.throws(() => a.claim(1), "a busy slot cannot be claimed");
});

t.test("idle slots are a prefix cache: longest common prefix, then LRU eviction", async (t) => {
  const a = new SlotAllocator(3);
  for (let i = 0; i < 3; i++) a.acquire();
  a.release(2, tk(1, 2, 3, 4));
  a.release(1, tk(1, 2, 7));
  a.release(0, tk(5, 6));
  t.same(a.acquire(tk(1, 2, 3, 9)), { slot: 2, reusePrefix: 3 }, "longest match wins");
  t.same(a.acquire(tk(1, 2, 7, 7)), { slot: 1, reusePrefix: 3 });
  t.same(a.acquire(tk(8)), { slot: 0, reusePrefix: 0 }, "no match: LRU idle taken");
  t.equal(a.acquire(tk(8)), null);
  a.release(0);
  t.same(a.acquire(tk(5, 6)), { slot: 0, reusePrefix: 0 }, "its cached prefix was evicted");
});

t.test("commonPrefix", async (t) => {
  t.equal(commonPrefix(tk(1, 2, 3), tk(1, 2, 4)), 2);
  t.equal(commonPrefix(tk(), tk(1)), 0);
  t.equal(commonPrefix(tk(1, 2), tk(1, 2)), 2);
});

t.test("retained slots (previous_response_id): only their key takes them until the TTL, a cap, compaction passes them over, evicted last", async (t) => {
  let now = 1000;
  const a = new SlotAllocator(4, { ttlMs: 500, maxRetained: 2 }, () => now);
  for (let i = 0; i < 4; i++) a.acquire();
  a.release(3, tk(1, 2, 3), "resp_a");
  a.release(2, tk(1, 2, 5));
  t.same(a.retainedTokens("resp_a"), tk(1, 2, 3));
  t.same(a.acquire(tk(1, 2, 3, 4)), { slot: 2, reusePrefix: 2 }, "another request does not take the retained slot, even with a longer match");
  t.same(a.acquire(tk(1, 2, 3, 9), 1, "resp_a"), { slot: 3, reusePrefix: 3 }, "its key takes it, whole");
  t.equal(a.retainedTokens("resp_a"), undefined, "taken: no longer retained");

  now = 1100;
  a.release(3, tk(1, 2, 3, 9, 7), "resp_b");
  now = 1200;
  a.release(2, tk(4), "resp_c");
  now = 1300;
  a.release(1, tk(6), "resp_d");
  t.equal(a.retainedCount, 2, "the cap");
  t.equal(a.retainedTokens("resp_b"), undefined, "the oldest retention ended");
  t.same(a.retainedTokens("resp_c"), tk(4));
  t.same(a.acquire(), { slot: 3, reusePrefix: 0 }, "the unretained idle slot is evicted first");
  t.equal(a.gap(), null, "busy 0 and 3 around retained 1 and 2: compaction does not claim them");

  now = 1750;
  t.equal(a.retainedTokens("resp_c"), undefined, "past its TTL");
  t.same(a.retainedTokens("resp_d"), tk(6));
  t.same(a.gap(), { from: 3, to: 2 }, "an expired retention is an ordinary idle slot again");
  t.same(a.acquire(), { slot: 2, reusePrefix: 0 });
  t.same(a.acquire(), { slot: 1, reusePrefix: 0 }, "retention never refuses a request: the last slot is evicted");
  t.equal(a.retainedTokens("resp_d"), undefined);
  t.equal(a.acquire(), null);
});

/**
 * Placement as a pure function: prefix affinity, the CHWBL load bound and its
 * spill, consistent-hash seeding on a miss, refusal ordering, the baselines.
 */
import t from "tap";
import { prefixHashChain } from "../../common/src/index.js";
import { DEFAULT_PREFIX_SLACK, loadBound, onPrefixEngine, place, prefixBound, type EngineLoad, type PlacementOptions } from "../../router/src/placement.js";
import { HashRing } from "../../router/src/consistent-hash.js";
import { snapshotBlocks } from "../../router/src/prefix-index.js";

const PA: PlacementOptions = { policy: "prefix-affinity", loadFactor: 1.25, turn: 0 };

function engine(pod: string, load: number, prefixes: string[] = [], capacity = 4, filling: string[] = []): EngineLoad {
  return { pod, load, capacity, free: capacity - load, blocks: snapshotBlocks(new Set(prefixes), new Set(filling)) };
}

const sys = (s: string, user: string): string[] => prefixHashChain({ messages: [{ role: "system", content: s }, { role: "user", content: user }] });

t.test("the engine holding the longest resident prefix wins", async (t) => {
  const chain = sys("You are app A.", "hello");
  const engines = [engine("e0", 0), engine("e1", 0, [chain[0]!]), engine("e2", 0, ["unrelated"])];
  const p = place(engines, { chain, affinityKey: chain[0]! }, PA);
  t.equal(p.order[0], "e1");
  t.equal(p.reason, "prefix");
  t.equal(p.matched, 1);
  t.same([...p.order].sort(), ["e0", "e1", "e2"], "every engine is in the order, for retries");
  // A longer match beats a shorter one.
  const longer = [engine("e0", 0, [chain[0]!]), engine("e1", 0, [chain[0]!, chain[1]!])];
  t.equal(place(longer, { chain, affinityKey: chain[0]! }, PA).order[0], "e1");
});

t.test("among equal matches, an engine whose cells hold the prefix beats one still prefilling it", async (t) => {
  const chain = sys("shared prompt", "u");
  const app = chain[0]!;
  // e0 took the spill and is prefilling the app's prefix; e1 has held it for a while and runs one session more.
  const filling = engine("e0", 1, [app], 4, [app]);
  const engines = [filling, engine("e1", 2, [app])];
  const p = place(engines, { chain, affinityKey: app }, PA);
  t.equal(p.order[0], "e1", "the engine that holds it, although more loaded (within the bound)");
  t.equal(p.reason, "prefix");
  // The only engine advertising it is still filling: follow the fill rather than prefill it cold elsewhere.
  const only = place([filling, engine("e1", 0)], { chain, affinityKey: app }, PA);
  t.equal(only.order[0], "e0");
  t.equal(only.reason, "prefix");
  // A longer match that is still being filled still beats a shorter one in cells.
  const longer = place([engine("e0", 0, [chain[0]!, chain[1]!], 4, [chain[1]!]), engine("e1", 0, [app])], { chain, affinityKey: app }, PA);
  t.equal(longer.order[0], "e0");
});

t.test("the load bound spills a hot prefix onto another engine (sglang 34513)", async (t) => {
  const chain = sys("shared prompt", "u");
  // Bound with loads 2+0 over 2 engines: ceil(1.25 * 3 / 2) = 2; e0 would reach 3.
  const engines = [engine("e0", 2, [chain[0]!]), engine("e1", 0)];
  t.equal(loadBound(engines, 1.25), 2);
  const p = place(engines, { chain, affinityKey: chain[0]! }, PA);
  t.equal(p.order[0], "e1");
  t.equal(p.reason, "prefix-spill");
  // Once both hold it, ties go to the less loaded.
  const both = [engine("e0", 2, [chain[0]!]), engine("e1", 1, [chain[0]!])];
  t.equal(place(both, { chain, affinityKey: chain[0]! }, PA).order[0], "e1");
  // A session's own longer history keeps it where it is while under the bound.
  const own = [engine("e0", 1, [chain[0]!, chain[1]!]), engine("e1", 1, [chain[0]!])];
  const sticky = place(own, { chain, affinityKey: chain[0]! }, PA);
  t.equal(sticky.order[0], "e0");
  t.equal(sticky.matched, 2);
});

t.test("the prefix slack keeps a session on its prefix's engine past a bound that rounding makes tight", async (t) => {
  const chain = sys("shared prompt", "u");
  const slack1 = { ...PA, prefixSlack: 1 };
  // Loads 2+0: the bound is 2 (the test above spills), the even share ceil(3 / 2) = 2, plus the slack 1: 3.
  const low = [engine("e0", 2, [chain[0]!]), engine("e1", 0)];
  t.equal(prefixBound(low, 1.25, 1), 3);
  const kept = place(low, { chain, affinityKey: chain[0]! }, slack1);
  t.equal(kept.order[0], "e0", "forks the prefix instead of prefilling it cold on e1");
  t.equal(kept.reason, "prefix-slack");
  t.equal(kept.matched, 1);
  t.equal(kept.order[1], "e1", "the idle engine is next, for a refusal");
  // Loads 3+0: even share 2 + 1 = 3, and e0 would reach 4: the slack is spent, spill.
  const past = place([engine("e0", 3, [chain[0]!], 8), engine("e1", 0, [], 8)], { chain, affinityKey: chain[0]! }, slack1);
  t.equal(past.order[0], "e1");
  t.equal(past.reason, "prefix-spill");
  // The default slack, 2: at loads 3+0 on engines of four sequences the holder takes its last free one (even share 2 + 2 = 4) rather than a cold prefill on the idle engine.
  const defaults = { ...PA, prefixSlack: DEFAULT_PREFIX_SLACK };
  const last = place([engine("e0", 3, [chain[0]!]), engine("e1", 0)], { chain, affinityKey: chain[0]! }, defaults);
  t.equal(last.order[0], "e0", "the holder's last free sequence");
  t.equal(last.reason, "prefix-slack");
  // Full, it is waited for (briefly) and spilled past, as before.
  const fullHolder = place([engine("e0", 4, [chain[0]!]), engine("e1", 0)], { chain, affinityKey: chain[0]! }, defaults);
  t.equal(fullHolder.order[0], "e1");
  t.equal(fullHolder.holdFor, "e0");
  // With four engines the even share is smaller: loads 3+0+0+0 are past ceil(4 / 4) + 2 = 3, so the session spills.
  const four = place([engine("e0", 3, [chain[0]!]), engine("e1", 0), engine("e2", 0), engine("e3", 0)], { chain, affinityKey: chain[0]! }, defaults);
  t.equal(four.reason, "prefix-spill");
  // At a higher load c's share is the larger allowance: loads 8+0 of 16 each, bound ceil(1.25 * 9 / 2) = 6, even share 5 + 1.
  const busy = [engine("e0", 8, [chain[0]!], 16), engine("e1", 0, [], 16)];
  t.equal(prefixBound(busy, 1.25, 1), 6);
  t.equal(place(busy, { chain, affinityKey: chain[0]! }, slack1).reason, "prefix-spill");
  // Never onto a full engine, whatever the slack.
  const full = place([engine("e0", 2, [chain[0]!], 2), engine("e1", 0)], { chain, affinityKey: chain[0]! }, { ...PA, prefixSlack: 10 });
  t.equal(full.order[0], "e1");
  t.equal(full.reason, "prefix-spill");
  // A holder under the bound is still preferred as before: the slack only applies when every holder is over it.
  const twoHolders = [engine("e0", 2, [chain[0]!]), engine("e1", 1, [chain[0]!])];
  t.equal(place(twoHolders, { chain, affinityKey: chain[0]! }, slack1).order[0], "e1");
  t.equal(place(twoHolders, { chain, affinityKey: chain[0]! }, slack1).reason, "prefix");
  // Not while the holder is still prefilling the prefix: the session would wait for that fill, as long as a cold prefill elsewhere.
  const filling = place([engine("e0", 2, [chain[0]!], 4, [chain[0]!]), engine("e1", 0)], { chain, affinityKey: chain[0]! }, slack1);
  t.equal(filling.order[0], "e1");
  t.equal(filling.reason, "prefix-spill");
  // Without a prefix to keep, the slack plays no part: a miss still goes to the least loaded.
  t.equal(place([engine("e0", 2), engine("e1", 0)], { chain: [], affinityKey: "app" }, slack1).order[0], "e1");
  // The baselines ignore it.
  t.equal(place(low, { chain, affinityKey: chain[0]! }, { ...slack1, policy: "least-loaded" }).order[0], "e1");
});

t.test("a full engine is over the bound whatever the mean", async (t) => {
  const chain = sys("p", "u");
  const engines = [engine("e0", 4, [chain[0]!], 4), engine("e1", 4, [], 8)];
  const p = place(engines, { chain, affinityKey: "k" }, PA);
  t.equal(p.order[0], "e1", "e0 has no free sequence");
  t.equal(p.holdFor, "e0", "full but within the bound ceil(1.25 * 9 / 2) = 6: worth waiting for");
});

t.test("holdFor names a full prefix engine, within the bound or past it", async (t) => {
  const chain = sys("p", "u");
  // Loads 4 (full) + 3: bound ceil(1.25 * 8 / 2) = 5, so e0 + 1 is within it.
  const saturated = place([engine("e0", 4, [chain[0]!]), engine("e1", 3)], { chain, affinityKey: "k" }, PA);
  t.equal(saturated.reason, "prefix-spill");
  t.equal(saturated.order[0], "e1");
  t.equal(saturated.holdFor, "e0");
  // Loads 4 + 0: bound ceil(1.25 * 5 / 2) = 4, e0 is over it. A free sequence there may come long before a cold
  // prefill on e1 ends, so it is still worth a wait bounded by about one cold prefill; e1 is where the spill goes
  // when the wait runs out (sglang 34513: the prefix's engine does not take the burst alone).
  const hot = place([engine("e0", 4, [chain[0]!]), engine("e1", 0)], { chain, affinityKey: "k" }, PA);
  t.equal(hot.reason, "prefix-spill");
  t.equal(hot.order[0], "e1");
  t.equal(hot.holdFor, "e0");
  // Past the bound with a free sequence (loads 3 + 0, bound 3) and no slack: no hold, it spills at once, as the bound says.
  const open = place([engine("e0", 3, [chain[0]!]), engine("e1", 0)], { chain, affinityKey: "k" }, PA);
  t.equal(open.order[0], "e1");
  t.equal(open.holdFor, undefined);
  // Only an engine holding the longest match is waited for: a full engine with a shorter one is not.
  const shorter = place([engine("e0", 4, [chain[0]!]), engine("e1", 0, [chain[0]!, chain[1]!])], { chain, affinityKey: "k" }, PA);
  t.equal(shorter.order[0], "e1");
  t.equal(shorter.holdFor, undefined);
  // Room on the prefix's engine: placed there, nothing held.
  t.equal(place([engine("e0", 1, [chain[0]!]), engine("e1", 0)], { chain, affinityKey: "k" }, PA).holdFor, undefined);
  t.equal(place([engine("e0", 4, [chain[0]!]), engine("e1", 3)], { chain, affinityKey: "k" }, { ...PA, policy: "least-loaded" }).holdFor, undefined, "baselines never hold");
});

t.test("a miss goes to the least loaded, ties broken by the ring", async (t) => {
  const idle = [engine("a", 0), engine("b", 0), engine("c", 0)];
  const first = place(idle, { chain: [], affinityKey: "app-y" }, PA).order[0]!;
  // The ring's first choice busy with one session, the others idle: a cold prefill goes to an idle one.
  const busy = idle.map((e) => (e.pod === first ? engine(e.pod, 1) : e));
  const p = place(busy, { chain: [], affinityKey: "app-y" }, PA);
  t.not(p.order[0], first);
  t.equal(p.reason, "hash");
  const ring = new HashRing(["a", "b", "c"]).walk("app-y").filter((pod) => pod !== first);
  t.equal(p.order[0], ring[0], "the next idle engine on the app's ring");
  t.equal(place(busy, { chain: [], affinityKey: "app-y" }, { ...PA, turn: 7 }).order[0], ring[0], "the same whatever the turn");
});

t.test("a miss seeds affinity by consistent hashing: same key, same engine", async (t) => {
  const engines = [engine("a", 0), engine("b", 0), engine("c", 0)];
  const picks = new Set<string>();
  for (let i = 0; i < 5; i++) {
    const p = place(engines, { chain: sys("app X", `user ${i}`), affinityKey: "app-x-prefix" }, { ...PA, turn: i });
    t.equal(p.reason, "hash");
    picks.add(p.order[0]!);
  }
  t.equal(picks.size, 1, "all sessions of the app converge");
  // Different apps spread over the ring.
  const spread = new Set<string>();
  for (let i = 0; i < 30; i++) spread.add(place(engines, { chain: [], affinityKey: `app-${i}` }, PA).order[0]!);
  t.equal(spread.size, 3);
  // The walk skips an engine over the bound.
  const first = place(engines, { chain: [], affinityKey: "app-x-prefix" }, PA).order[0]!;
  const loaded = engines.map((e) => (e.pod === first ? engine(e.pod, 3) : e));
  const p = place(loaded, { chain: [], affinityKey: "app-x-prefix" }, PA);
  t.not(p.order[0], first);
  t.equal(p.reason, "hash");
});

t.test("a miss of an app with a home goes to its home while the home is under the bound, whatever the load", async (t) => {
  // Loads 0+1: the bound is ceil(1.25 * 2 / 2) = 2, so b may take one more.
  const engines = [engine("a", 0), engine("b", 1)];
  const p = place(engines, { chain: [], affinityKey: "app-h", home: "b" }, PA);
  t.equal(p.order[0], "b", "the home, though busier than the idle engine");
  t.equal(p.reason, "hash");
  // Over the bound (loads 0+4+0: ceil(1.25 * 5 / 3) = 3), the miss goes on as without a home.
  const over = place([engine("a", 0), engine("b", 4, [], 8), engine("c", 0)], { chain: [], affinityKey: "app-h", home: "b" }, PA);
  t.not(over.order[0], "b");
  t.equal(over.reason, "hash");
  // A home no engine of the pool is (gone): as without one.
  t.same(place(engines, { chain: [], affinityKey: "app-h", home: "gone" }, PA).order, place(engines, { chain: [], affinityKey: "app-h" }, PA).order);
  // A prefix held elsewhere still wins: the home seeds misses only.
  const chain = sys("app H", "u");
  t.equal(place([engine("a", 0, [chain[0]!]), engine("b", 0)], { chain, affinityKey: chain[0]!, home: "b" }, PA).order[0], "a");
});

t.test("a session key keeps a conversation on its ring engine within the bound, whatever prefixes others hold", async (t) => {
  const chain = sys("shared prompt", "turn 3");
  // Another engine holds the whole chain: without a session key, prefix affinity goes there.
  const engines = [engine("a", 0), engine("b", 0, [chain[0]!, chain[1]!]), engine("c", 0)];
  t.equal(place(engines, { chain, affinityKey: chain[0]! }, PA).order[0], "b");
  const own = new HashRing(["a", "b", "c"]).walk("session:s1")[0]!;
  for (let turn = 0; turn < 4; turn++) {
    const p = place(engines, { chain, affinityKey: chain[0]!, sessionKey: "session:s1" }, { ...PA, turn });
    t.equal(p.order[0], own, "the first engine on the ring from the session key, every turn");
    t.equal(p.reason, "session");
  }
  // Different conversations spread over the ring.
  const spread = new Set<string>();
  for (let i = 0; i < 30; i++) spread.add(place(engines, { chain, affinityKey: chain[0]!, sessionKey: `session:${i}` }, PA).order[0]!);
  t.equal(spread.size, 3);
  // Over the bound there (loads 3+0+0: ceil(1.25 * 4 / 3) = 2), the walk goes on round the ring: the same spill every time.
  const loaded = engines.map((e) => (e.pod === own ? engine(e.pod, 3, e.pod === "b" ? [chain[0]!, chain[1]!] : []) : e));
  const spilled = place(loaded, { chain, affinityKey: chain[0]!, sessionKey: "session:s1" }, PA);
  t.not(spilled.order[0], own);
  t.equal(spilled.order[0], new HashRing(["a", "b", "c"]).walk("session:s1")[1]);
  t.equal(spilled.reason, "session");
  // Every engine over the bound: placed as without a key.
  const full = [engine("a", 4, [], 4), engine("b", 4, [], 4), engine("c", 4, [], 4)];
  t.equal(place(full, { chain, affinityKey: chain[0]!, sessionKey: "session:s1" }, PA).reason, "least-loaded");
  // The baselines ignore it.
  t.equal(place(engines, { chain, affinityKey: chain[0]!, sessionKey: "session:s1" }, { ...PA, policy: "least-loaded" }).reason, "least-loaded");
});

t.test("everything over the bound: least loaded; no engine: empty order", async (t) => {
  const engines = [engine("e0", 4, [], 4), engine("e1", 3, [], 3)];
  const p = place(engines, { chain: ["x"], affinityKey: "k" }, PA);
  t.equal(p.reason, "least-loaded");
  t.equal(place([], { chain: [], affinityKey: "k" }, PA).reason, "no-engine");
  t.same(place([], { chain: [], affinityKey: "k" }, PA).order, []);
});

t.test("baselines: round-robin takes turns, least-loaded ignores prefixes", async (t) => {
  const chain = sys("p", "u");
  const engines = [engine("e0", 0, [chain[0]!]), engine("e1", 1), engine("e2", 2)];
  const rr = [0, 1, 2, 3].map((turn) => place(engines, { chain, affinityKey: "k" }, { ...PA, policy: "round-robin", turn }).order[0]);
  t.same(rr, ["e0", "e1", "e2", "e0"]);
  const ll = place([engine("e0", 2, [chain[0]!]), engine("e1", 1)], { chain, affinityKey: "k" }, { ...PA, policy: "least-loaded" });
  t.equal(ll.order[0], "e1");
  t.equal(ll.reason, "least-loaded");
});

t.test("the hash ring moves only the removed node's keys", async (t) => {
  const full = new HashRing(["a", "b", "c", "d"]);
  const less = new HashRing(["a", "b", "c"]);
  let moved = 0;
  for (let i = 0; i < 400; i++) {
    const before = full.walk(`k${i}`)[0]!;
    const after = less.walk(`k${i}`)[0]!;
    if (before !== "d") t.equal(after, before);
    else moved++;
  }
  t.ok(moved > 40 && moved < 180, `about a quarter of keys were on d (${moved}/400)`);
});

t.test("a hold counts as placed when it ends on an engine holding the longest prefix, by the bound or by the slack", async (t) => {
  t.ok(onPrefixEngine("prefix"));
  t.ok(onPrefixEngine("prefix-slack"), "the slack places on the prefix's engine too");
  for (const reason of ["prefix-spill", "hash", "least-loaded", "session", "round-robin", "no-engine"] as const) t.notOk(onPrefixEngine(reason), reason);
});

/**
 * The hot-prefix warming decision on plain data: an app is warmed onto an
 * idle second engine only when it is hot, exactly one engine holds its
 * shared prefix, and that second engine has nothing prefilling, enough free
 * sequences and no warm of the app in flight or just ended.
 */
import t from "tap";
import { decideWarm, type WarmEngine, type WarmInput, type WarmSettings } from "../../router/src/prefix-warming.js";

const SETTINGS: WarmSettings = { sessions: 3, windowMs: 20_000, minFreeShare: 0.5 };
const NOW = 100_000;
const engine = (pod: string, over: Partial<WarmEngine> = {}): WarmEngine => ({ pod, free: 4, capacity: 4, load: 0, prefilling: false, matched: 0, ...over });
/** Three arrivals in the last 10 s; engine a holds the app's two shared blocks. */
const input = (over: Partial<WarmInput> = {}): WarmInput => ({
  arrivals: [NOW - 10_000, NOW - 5_000, NOW],
  now: NOW,
  segments: 2,
  engines: [engine("a", { matched: 2, load: 2, free: 2 }), engine("b")],
  skip: new Set(),
  ...over,
});

t.test("a hot app held by one engine alone is warmed onto the idle one", async (t) => {
  const d = decideWarm(input(), SETTINGS);
  t.match(d, { warm: true, pod: "b", holder: "a" });
  if (d.warm) t.match(d.reason, /3 sessions in 20 s, prefix held by a alone; b has 4 of 4 sequences free/);
  // A holder still prefilling the prefix counts as holding it: the second engine is warmed beside that fill.
  t.match(decideWarm(input({ engines: [engine("a", { matched: 2 }), engine("b")] }), SETTINGS), { warm: true, pod: "b" });
});

t.test("the least loaded of several idle engines is chosen, then the one with most free, then by name", async (t) => {
  const engines = [engine("a", { matched: 2 }), engine("d", { load: 1, free: 3 }), engine("c", { load: 1, free: 4 }), engine("e", { load: 1, free: 4 })];
  t.match(decideWarm(input({ engines }), SETTINGS), { warm: true, pod: "c" });
});

t.test("not warmed", async (t) => {
  t.match(decideWarm(input(), { ...SETTINGS, sessions: 0 }), { warm: false, why: "off" }, "warming off");
  t.match(decideWarm(input({ segments: 0 }), SETTINGS), { warm: false, why: "no-prefix" }, "an app with no shared prefix");
  t.match(decideWarm(input({ arrivals: [NOW - 5_000, NOW] }), SETTINGS), { warm: false, why: "cold" }, "two arrivals are not hot");
  t.match(decideWarm(input({ arrivals: [NOW - 30_000, NOW - 25_000, NOW] }), SETTINGS), { warm: false, why: "cold" }, "arrivals before the window do not count");
  t.match(decideWarm(input({ engines: [engine("a", { matched: 2 })] }), SETTINGS), { warm: false, why: "single-engine" });
  t.match(decideWarm(input({ engines: [engine("a"), engine("b")] }), SETTINGS), { warm: false, why: "held-by-none" }, "no engine holds it: the first session seeds it");
  t.match(decideWarm(input({ engines: [engine("a", { matched: 1 }), engine("b")] }), SETTINGS), { warm: false, why: "held-by-none" }, "a partial match (the system prompt without the tools) is not the prefix");
  t.match(decideWarm(input({ engines: [engine("a", { matched: 2 }), engine("b", { matched: 3 })] }), SETTINGS), { warm: false, why: "held-by-several" });
  t.match(decideWarm(input({ engines: [engine("a", { matched: 2 }), engine("b", { prefilling: true })] }), SETTINGS), { warm: false, why: "no-idle-engine" }, "the other engine is prefilling");
  t.match(decideWarm(input({ engines: [engine("a", { matched: 2 }), engine("b", { free: 1 })] }), SETTINGS), { warm: false, why: "no-idle-engine" }, "under half its sequences free");
  t.match(decideWarm(input({ engines: [engine("a", { matched: 2 }), engine("b", { free: 0, capacity: 1 })] }), { ...SETTINGS, minFreeShare: 0 }), { warm: false, why: "no-idle-engine" }, "never with no free sequence");
  t.match(decideWarm(input({ skip: new Set(["b"]) }), SETTINGS), { warm: false, why: "no-idle-engine" }, "a warm of the app in flight there or just ended");
});

t.test("the skip set is per engine: another idle engine is still warmed", async (t) => {
  const engines = [engine("a", { matched: 2 }), engine("b"), engine("c", { load: 1 })];
  t.match(decideWarm(input({ engines, skip: new Set(["b"]) }), SETTINGS), { warm: true, pod: "c" });
});

t.test("a joining engine is warmed, however many engines hold the prefix, and only it", async (t) => {
  const engines = [engine("a", { matched: 2, load: 2, free: 2 }), engine("b", { matched: 2, load: 2, free: 2 }), engine("c", { load: 1 }), engine("new")];
  t.match(decideWarm(input({ engines }), SETTINGS), { warm: false, why: "held-by-several" }, "at an arrival: held by two, not spread further");
  const d = decideWarm(input({ engines, joining: "new" }), SETTINGS);
  t.match(d, { warm: true, pod: "new" }, "the joining engine, not the less loaded c");
  if (d.warm) t.match(d.reason, /prefix held by 2 engines; joining new has 4 of 4 sequences free/);
  t.match(decideWarm(input({ engines: [engine("a"), engine("new")], joining: "new" }), SETTINGS), { warm: false, why: "held-by-none" }, "no engine holds it: nothing to warm from");
  t.match(decideWarm(input({ engines, joining: "new", arrivals: [NOW] }), SETTINGS), { warm: false, why: "cold" }, "a cold app is not warmed onto it");
  t.match(decideWarm(input({ engines: [engine("a", { matched: 2 }), engine("new", { matched: 2 })], joining: "new" }), SETTINGS), { warm: false, why: "no-idle-engine" }, "it holds the prefix already");
  t.match(
    decideWarm(input({ engines: [engine("a", { matched: 2, load: 4, free: 0 }), engine("b", { matched: 2, load: 4, free: 0 }), engine("new")], joining: "new" }), SETTINGS),
    { warm: false, why: "joining-under-load" },
    "every other engine full: sessions go to it at once, and their own fill (which the next ones follow) warms it",
  );
  t.match(decideWarm(input({ engines: [engine("a", { matched: 2, load: 4, free: 0 }), engine("b", { matched: 2, load: 3, free: 1 }), engine("new")], joining: "new" }), SETTINGS), { warm: true, pod: "new" }, "one free sequence elsewhere: warmed");
});

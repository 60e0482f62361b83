/**
 * @module The speculative tool cache: keying by tool name + canonical
 * arguments (argument order, number formats), a hit delivered once, misses
 * counted, TTL expiry, per-session and byte bounds, and wasted-time accounting
 * (a discarded running speculation is aborted).
 */
import t from "tap";
import { toolCallKey } from "../../common/src/index.js";
import type { ToolResult } from "../../engine-pod/src/executor/executor.js";
import { ToolCache } from "../../engine-pod/src/speculation/index.js";

const ok = (output: string, runMs?: number): Promise<ToolResult> => Promise.resolve({ callId: "x", ok: true, output, ...(runMs !== undefined ? { runMs } : {}) });
const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

t.test("keys: argument order and number formats do not matter; values and names do", async (t) => {
  t.equal(toolCallKey("f", { a: 1, b: { y: [1, 2], x: "s" } }), toolCallKey("f", { b: { x: "s", y: [1, 2] }, a: 1 }));
  t.equal(toolCallKey("f", JSON.parse('{"n": 1e3, "m": 2.50}')), toolCallKey("f", JSON.parse('{"m": 2.5, "n": 1000.0}')));
  t.not(toolCallKey("f", { n: 1 }), toolCallKey("f", { n: "1" }), "a string is not a number");
  t.not(toolCallKey("f", { a: [1, 2] }), toolCallKey("f", { a: [2, 1] }), "array order matters");
  t.not(toolCallKey("f", {}), toolCallKey("g", {}));
});

t.test("a hit is delivered once; a miss is counted; an existing key is kept", async (t) => {
  const c = new ToolCache();
  t.ok(c.put("s1", "search", { q: "a", n: 2 }, ok("r1"), { source: "speculative" }));
  t.equal(c.put("s1", "search", { n: 2, q: "a" }, ok("other"), { source: "speculative" }), undefined, "Algorithm 2: if τ ∉ C");
  t.equal(c.take("s2", "search", { q: "a", n: 2 }), undefined, "per session");
  const hit = c.take("s1", "search", { n: 2, q: "a" });
  t.ok(hit);
  t.equal((await hit!.future).output, "r1");
  t.equal(c.take("s1", "search", { q: "a", n: 2 }), undefined, "taken once");
  const s = c.stats();
  t.equal(s.hits, 1);
  t.equal(s.misses, 2);
  t.equal(s.wasted, 0);
  t.equal(s.entries, 0);
});

t.test("TTL drops stale entries and counts them wasted with their tool time", async (t) => {
  let now = 1000;
  const c = new ToolCache({ ttlMs: 100, now: () => now });
  c.put("s", "f", { a: 1 }, ok("v", 40), { source: "speculative" });
  await tick();
  now += 99;
  t.ok(c.peek("s", "f", { a: 1 }), "still fresh");
  now += 2;
  t.equal(c.take("s", "f", { a: 1 }), undefined, "stale");
  t.equal(c.stats().wasted, 1);
  t.equal(c.stats().wastedToolMs, 40);
});

t.test("bounds: per-session entries and total bytes evict the oldest; a running discarded speculation is aborted", async (t) => {
  let now = 0;
  const c = new ToolCache({ maxEntriesPerSession: 2, maxBytes: 10, now: () => now });
  const abort = new AbortController();
  c.put("s", "f", { i: 0 }, new Promise(() => {}), { source: "speculative", abort });
  now = 5;
  c.put("s", "f", { i: 1 }, ok("12345"), { source: "speculative" });
  c.put("s", "f", { i: 2 }, ok("12345"), { source: "speculative" });
  t.ok(abort.signal.aborted, "the evicted running call was stopped");
  t.equal(c.stats().wasted, 1);
  t.equal(c.stats().wastedToolMs, 5, "time it ran so far");
  await tick();
  t.equal(c.stats().bytes, 10);
  c.put("t", "f", { i: 3 }, ok("x"), { source: "client" });
  await tick();
  t.equal(c.stats().entries, 2, "over 10 bytes: the oldest settled entry went");
  t.equal(c.peek("s", "f", { i: 1 }), undefined);
  t.same(c.dropSession("s"), { wasted: 3, wastedToolMs: 5 }, "the session's own waste: two evicted entries and the one left");
  t.equal(c.stats().wasted, 3);
});

t.test("latest() finds the newest entry of a tool (O2's draft source)", async (t) => {
  const c = new ToolCache();
  c.put("s", "f", { i: 1 }, ok("a"), { source: "speculative" });
  c.put("s", "g", { i: 2 }, ok("b"), { source: "client" });
  c.put("s", "f", { i: 3 }, ok("c"), { source: "speculative" });
  t.same(c.latest("s", "f")?.arguments, { i: 3 });
  t.same(c.latest("s")?.arguments, { i: 3 });
  t.equal(c.latest("s", "h"), undefined);
  t.equal(c.latest("x"), undefined);
});

t.test("a speculative run that rejects settles as the model's error line (tool_failed)", async (t) => {
  const c = new ToolCache();
  c.put("s", "search", { q: "a" }, Promise.reject(new Error("backend down")), { source: "speculative" });
  await tick();
  const hit = c.take("s", "search", { q: "a" });
  t.match(hit?.result, { ok: false, output: "error: tool_failed: backend down", error: { code: "tool_failed", message: "backend down" } });
});

import t from "tap";
import {
  asyncLatencyIndependent,
  lptListSchedule,
  syncLatency,
  syncParallelLatency,
  predictedSpeedup,
} from "../../bench/bfcl/bound.js";

// Hand-worked: G = 10 each; E = 100, 50, 30.
// LPT emits 100 (gen 0-10, done 110), 50 (10-20, done 70), 30 (20-30, done 60) → 110.
// Closed form: max(100+10, 50+20, 30+30) = 110.
const independent = [
  { id: "a", genMs: 10, execMs: 50, dependsOn: [] },
  { id: "b", genMs: 10, execMs: 100, dependsOn: [] },
  { id: "c", genMs: 10, execMs: 30, dependsOn: [] },
];

t.test("independent calls: list schedule equals the closed form", async (t) => {
  const s = lptListSchedule(independent);
  t.same(
    s.entries.map((e) => e.id),
    ["b", "a", "c"],
    "longest first",
  );
  t.equal(s.lastResultMs, 110);
  t.equal(asyncLatencyIndependent(independent), 110);
  t.equal(syncLatency(independent), 30 + 180);
  t.equal(syncParallelLatency(independent), 30 + 100);
  t.ok(asyncLatencyIndependent(independent) <= syncParallelLatency(independent), "Theorem 6.1");
});

t.test("tail generation is added after the last result", async (t) => {
  t.equal(lptListSchedule(independent, 25).makespanMs, 135);
});

t.test("a chain waits for each result (paper's a-c-b example)", async (t) => {
  // c depends on a; E(a)=10 < E(b)=20 < E(c)=30; G=1.
  // LPT: ready {a,b} → b (0-1, done 21); a (1-2, done 12); idle to 12; c (12-13, done 43) → 43.
  const s = lptListSchedule([
    { id: "a", genMs: 1, execMs: 10, dependsOn: [] },
    { id: "b", genMs: 1, execMs: 20, dependsOn: [] },
    { id: "c", genMs: 1, execMs: 30, dependsOn: ["a"] },
  ]);
  t.same(
    s.entries.map((e) => [e.id, e.genStart, e.done]),
    [
      ["b", 0, 21],
      ["a", 1, 12],
      ["c", 12, 43],
    ],
  );
  t.equal(s.lastResultMs, 43);
});

t.test("calls released by a user interrupt start no earlier than the release", async (t) => {
  const s = lptListSchedule([
    { id: "x", genMs: 5, execMs: 10, dependsOn: [] },
    { id: "y", genMs: 5, execMs: 10, dependsOn: [], releaseMs: 200 },
  ]);
  t.same(s.entries.map((e) => e.genStart), [0, 200]);
  t.equal(s.lastResultMs, 215);
});

t.test("errors: unknown dependency and cycles", async (t) => {
  t.throws(() => lptListSchedule([{ id: "a", genMs: 1, execMs: 1, dependsOn: ["zz"] }]), /unknown call zz/);
  t.throws(
    () =>
      lptListSchedule([
        { id: "a", genMs: 1, execMs: 1, dependsOn: ["b"] },
        { id: "b", genMs: 1, execMs: 1, dependsOn: ["a"] },
      ]),
    /cycle/,
  );
});

t.test("1 + E/G", async (t) => {
  t.equal(predictedSpeedup(100, 50), 3);
});

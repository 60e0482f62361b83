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

t.test("reads: a dependent waits until its dependency's result is read", async (t) => {
  // a (G10, E100, read 5), b (G10, E30, read 5), c after b (G10, E20, read 5); tail 4.
  // Without reads: a 0-10 (done 110), b 10-20 (done 50), idle to 50, c 50-60 (done 80) → 110 + 4 = 114.
  const calls = [
    { id: "a", genMs: 10, execMs: 100, dependsOn: [] },
    { id: "b", genMs: 10, execMs: 30, dependsOn: [] },
    { id: "c", genMs: 10, execMs: 20, dependsOn: ["b"] },
  ];
  t.equal(lptListSchedule(calls, 4).makespanMs, 114);
  // With reads: b's result read 50-55, c 55-65 (done 85), read c 85-90, read a 110-115 → 115 + 4 = 119.
  const s = lptListSchedule(
    calls.map((c) => ({ ...c, readMs: 5 })),
    4,
  );
  t.same(
    s.entries.map((e) => [e.id, e.genStart, e.done]),
    [
      ["a", 0, 110],
      ["b", 10, 50],
      ["c", 55, 85],
    ],
  );
  t.equal(s.lastResultMs, 115);
  t.equal(s.makespanMs, 119);
  t.equal(s.readMs, 15);
});

t.test("reads: a result arriving during a call block is read after the block", async (t) => {
  // a (G10, E2, read 3) done at 12 while b (G10, E1) is generated 10-20 (done 21).
  // Without reads: max(20, 12, 21) = 21. With reads (3 each): read a 20-23, read b 23-26 → 26.
  const calls = [
    { id: "a", genMs: 10, execMs: 2, dependsOn: [] },
    { id: "b", genMs: 10, execMs: 1, dependsOn: [] },
  ];
  t.equal(lptListSchedule(calls).makespanMs, 21);
  t.equal(lptListSchedule(calls.map((c) => ({ ...c, readMs: 3 }))).makespanMs, 26);
});

t.test("reads: calls a user message releases wait until it is read", async (t) => {
  // x (G10, E50) 0-10, done 60. The user message arrives at 40.
  // Release only: u 40-50, done 60 → 60. Read in 6 ms: read 40-46, u 46-56, done 66 → 66.
  const x = { id: "x", genMs: 10, execMs: 50, dependsOn: [] };
  t.equal(lptListSchedule([x, { id: "u", genMs: 10, execMs: 10, dependsOn: [], releaseMs: 40 }]).makespanMs, 60);
  const s = lptListSchedule([x, { id: "u", genMs: 10, execMs: 10, dependsOn: [] }], 0, 0, [{ atMs: 40, readMs: 6, releases: ["u"] }]);
  t.same(s.entries.map((e) => [e.id, e.genStart]), [["x", 0], ["u", 46]]);
  t.equal(s.makespanMs, 66);
  t.equal(s.readMs, 6);
  // A zero-cost read is the release time: the paper's bound.
  t.equal(lptListSchedule([x, { id: "u", genMs: 10, execMs: 10, dependsOn: [] }], 0, 0, [{ atMs: 40, readMs: 0, releases: ["u"] }]).makespanMs, 60);
  t.throws(() => lptListSchedule([x], 0, 0, [{ atMs: 1, readMs: 1, releases: ["nope"] }]), /unknown call nope/);
});
